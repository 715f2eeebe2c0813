#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace popsim {

// Appends fixed-width little-endian integers, doubles and length-prefixed
// strings to a byte string (popsim runs on x86-64, so the host order is the
// file's order).
class ByteWriter {
public:
  template <typename T> void write(T value) {
    static_assert(std::is_arithmetic_v<T>, "write() takes numbers");
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void writeString(std::string_view text) {
    write<uint64_t>(text.size());
    bytes_.append(text.data(), text.size());
  }
  void writeRaw(const void* data, size_t size) {
    bytes_.append(static_cast<const char*>(data), size);
  }
  const std::string& bytes() const { return bytes_; }
  std::string take() { return std::move(bytes_); }

private:
  std::string bytes_;
};

// Reads what a ByteWriter wrote. Reading past the end calls `onTruncated`
// (which must throw), so a cut-off file is an error, not a wild read.
class ByteReader {
public:
  using TruncatedHandler = void (*)(size_t wanted, size_t left);
  ByteReader(std::string_view bytes, TruncatedHandler onTruncated)
      : bytes_(bytes), onTruncated_(onTruncated) {}

  template <typename T> T read() {
    static_assert(std::is_arithmetic_v<T>, "read() returns numbers");
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  std::string readString() {
    const uint64_t size = read<uint64_t>();
    const char* data = take(size);
    return std::string(data, static_cast<size_t>(size));
  }
  const char* take(uint64_t size) {
    if (size > bytes_.size() - offset_) {
      onTruncated_(static_cast<size_t>(size), bytes_.size() - offset_);
    }
    const char* data = bytes_.data() + offset_;
    offset_ += static_cast<size_t>(size);
    return data;
  }
  bool atEnd() const { return offset_ == bytes_.size(); }

private:
  std::string_view bytes_;
  size_t offset_ = 0;
  TruncatedHandler onTruncated_;
};

// FNV-1a, 64 bits: detects damaged bytes (not tampering).
inline uint64_t fnv1a64(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (const char byte : bytes) {
    hash = (hash ^ static_cast<uint8_t>(byte)) * 1099511628211ull;
  }
  return hash;
}

} // namespace popsim
