#include "common/sha256.h"

#include <openssl/evp.h>
#include <stdexcept>

namespace popsim {

Sha256 sha256(std::string_view bytes) {
  Sha256 digest{};
  unsigned int length = 0;
  // EVP_Digest is one-shot and thread-safe; it fails only when libcrypto
  // cannot allocate, which is no error of the caller's.
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size()) {
    throw std::runtime_error("OpenSSL's SHA-256 failed");
  }
  return digest;
}

std::string hexDigits(const Sha256& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * digest.size());
  for (const uint8_t byte : digest) {
    text.push_back(kDigits[byte >> 4]);
    text.push_back(kDigits[byte & 0xf]);
  }
  return text;
}

std::string sha256Hex(std::string_view bytes) { return hexDigits(sha256(bytes)); }

} // namespace popsim
