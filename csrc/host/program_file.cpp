#include "host/program_file.h"

#include "common/check.h"
#include "common/safe_files.h"
#include "common/sha256.h"
#include "common/strings.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <system_error>
#include <unistd.h>

namespace popsim::host {
namespace {

using nlohmann::json;

constexpr size_t kMagicBytes = sizeof(kProgramFileMagic) - 1;
// Far deeper than the options or any model's call nest.
constexpr int kMaxHeaderDepth = 128;

void appendLittleEndian(std::string& out, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t readLittleEndian(std::string_view bytes, size_t offset, size_t count) {
  uint64_t value = 0;
  for (size_t i = 0; i < count; ++i)
    value |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  return value;
}

[[noreturn]] void invalid(const std::string& where, const std::string& what) {
  throwError(ErrorKind::InvalidFile, strCat(where, " ", what));
}

std::string readAll(const std::string& path, FileAccess access) {
  const std::string where = strCat("'", path, "'");
  const int flags = O_RDONLY | O_CLOEXEC | (access == FileAccess::Private ? O_NOFOLLOW : 0);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    const int error = errno;
    if (access == FileAccess::Private && error == ELOOP) invalid(where, "is a symbolic link.");
    throw std::filesystem::filesystem_error("cannot open", path,
                                            std::error_code(error, std::generic_category()));
  }
  std::string bytes;
  int error = 0;
  struct stat status {};
  if (::fstat(fd, &status) != 0) error = errno;
  if (error == 0 && access == FileAccess::Private) {
    if (const auto problem = ownershipProblem(status, /*regularFile=*/true)) {
      ::close(fd);
      invalid(where, *problem + ".");
    }
  }
  char buffer[1 << 16];
  while (error == 0) {
    const ssize_t count = ::read(fd, buffer, sizeof(buffer));
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) error = errno;
    if (count <= 0) break;
    bytes.append(buffer, static_cast<size_t>(count));
  }
  ::close(fd);
  if (error != 0) {
    throw std::filesystem::filesystem_error("cannot read", path,
                                            std::error_code(error, std::generic_category()));
  }
  return bytes;
}

} // namespace

void writeProgramFile(const std::string& path, const ProgramFile& file) {
  const json header = {{"popsim", file.key.build},
                       {"container", kProgramFileVersion},
                       {"graph", file.key.graph},
                       {"options", file.key.options},
                       {"program_sha256", sha256Hex(file.program)},
                       {"training", file.training.has_value() ? json(*file.training) : json()},
                       {"call", file.call.value_or(json())}};
  const std::string headerText = header.dump();
  std::string body(kProgramFileMagic, kMagicBytes);
  appendLittleEndian(body, kProgramFileVersion, 4);
  for (const std::string* section : {&headerText, &file.program, &file.modelSection}) {
    appendLittleEndian(body, section->size(), 8);
    body += *section;
  }
  const Sha256 digest = sha256(body);
  body.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  // An exclusively created temporary file, never a name planted in a shared
  // directory, renamed over the path.
  writeFileAtomically(path, body, 0600);
}

std::string exportProgramFile(const std::string& path, const ProgramFile& file) {
  std::error_code unreadable; // a path that cannot be examined is written as a file
  const std::string target =
      std::filesystem::is_directory(path, unreadable)
          ? (std::filesystem::path(path) / (file.key.digest() + ".popsim")).string()
          : path;
  writeProgramFile(target, file);
  return target;
}

ProgramFile readProgramFile(const std::string& path, FileAccess access) {
  const std::string where = strCat("'", path, "'");
  const std::string data = readAll(path, access);
  if (data.compare(0, kMagicBytes, kProgramFileMagic) != 0) {
    invalid(where, strCat("is not a popsim program file (it does not start with b'",
                          kProgramFileMagic, "')."));
  }
  const size_t digestBytes = Sha256{}.size();
  if (data.size() < kMagicBytes + 4 + digestBytes) {
    invalid(where, "is damaged: it ends before its container version and SHA-256 (a partial "
                   "copy).");
  }
  const std::string_view body(data.data(), data.size() - digestBytes);
  const Sha256 digest = sha256(body);
  if (std::memcmp(digest.data(), data.data() + body.size(), digestBytes) != 0) {
    invalid(where, "is damaged: its SHA-256 does not match its contents (a partial copy or a "
                   "changed file).");
  }
  const uint64_t version = readLittleEndian(body, kMagicBytes, 4);
  if (version != kProgramFileVersion) {
    invalid(where, strCat("has container version ", version, "; this popsim reads version ",
                          kProgramFileVersion, ". Export the model again."));
  }
  const auto malformed = [&](const std::string& why) {
    invalid(where, strCat("has a malformed header: ", why, "."));
  };
  std::string_view sections[3];
  const char* names[3] = {"header", "program", "model"};
  size_t offset = kMagicBytes + 4;
  for (int i = 0; i < 3; ++i) {
    if (body.size() - offset < 8) malformed(strCat("it ends before its ", names[i], " section"));
    const uint64_t length = readLittleEndian(body, offset, 8);
    offset += 8;
    if (length > body.size() - offset) {
      malformed(strCat("its ", names[i], " section claims ", length, " bytes, ",
                       body.size() - offset, " follow"));
    }
    sections[i] = body.substr(offset, length);
    offset += length;
  }
  if (offset != body.size())
    malformed(strCat(body.size() - offset, " bytes follow its last section"));
  // Nesting is bounded: the parser's stack is its own, but printing or
  // converting a value recurses (a crafted header a million brackets deep
  // would overflow the stack).
  bool tooDeep = false;
  const json header = json::parse(
      sections[0],
      [&](int depth, json::parse_event_t, json&) {
        tooDeep = tooDeep || depth > kMaxHeaderDepth;
        return true;
      },
      /*allow_exceptions=*/false);
  if (tooDeep) malformed(strCat("it is nested more than ", kMaxHeaderDepth, " deep"));
  if (!header.is_object()) malformed("the header is not a JSON object");
  for (const char* field : {"popsim", "graph", "options", "program_sha256", "training", "call"}) {
    if (!header.contains(field)) malformed(strCat("it has no '", field, "'"));
  }
  if (!header["popsim"].is_string() || !header["graph"].is_string())
    malformed("'popsim' and 'graph' must be strings");
  ProgramFile file;
  file.key = {header["graph"].get<std::string>(), header["options"],
              header["popsim"].get<std::string>()};
  file.program = std::string(sections[1]);
  if (header["program_sha256"] != sha256Hex(file.program))
    malformed("the program's SHA-256 is not the one its header records");
  const json& training = header["training"];
  if (training.is_boolean()) {
    file.training = training.get<bool>();
  } else if (!training.is_null()) {
    malformed(strCat("'training' is ", training.dump()));
  }
  if (!header["call"].is_null()) file.call = header["call"];
  file.modelSection = std::string(sections[2]);
  return file;
}

std::optional<std::string> ownershipProblem(const struct stat& status, bool regularFile) {
  if (status.st_uid != ::geteuid()) {
    return strCat("is owned by user id ", status.st_uid, ", not by this user (", ::geteuid(), ")");
  }
  if (regularFile && !S_ISREG(status.st_mode)) return std::string("is not a regular file");
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(status.st_mode & 07777));
    return strCat("is writable by its group or by others (mode ", mode, "; `chmod go-w` it)");
  }
  return std::nullopt;
}

} // namespace popsim::host
