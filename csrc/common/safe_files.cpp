#include "common/safe_files.h"

#include "common/strings.h"

#include <cerrno>
#include <filesystem>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace popsim {
namespace {

[[noreturn]] void fail(const char* what, const std::string& path, int error) {
  throw std::filesystem::filesystem_error(what, path,
                                          std::error_code(error, std::generic_category()));
}

} // namespace

void writeFileAtomically(const std::string& path, std::string_view bytes, unsigned mode) {
  const std::filesystem::path target(path);
  const std::filesystem::path directory =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string pattern = (directory / ".popsim-XXXXXX").string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail("cannot create a file in", directory.string(), errno);
  const std::string temporary(name.data());
  size_t written = 0;
  int error = ::fchmod(fd, static_cast<mode_t>(mode)) == 0 ? 0 : errno;
  while (error == 0 && written < bytes.size()) {
    const ssize_t count = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0)
      error = errno;
    else
      written += static_cast<size_t>(count);
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    fail("cannot write", path, error);
  }
}

std::optional<std::string> sharedDirectoryProblem(const std::string& directory) {
  struct stat status {};
  if (::lstat(directory.c_str(), &status) != 0) {
    return strCat("cannot be read (", std::generic_category().message(errno), ")");
  }
  if (S_ISLNK(status.st_mode) && ::stat(directory.c_str(), &status) != 0) {
    return strCat("is a link that cannot be followed (", std::generic_category().message(errno),
                  ")");
  }
  if (!S_ISDIR(status.st_mode)) return std::string("is not a directory");
  if (status.st_uid != ::geteuid()) {
    return strCat("is owned by user id ", status.st_uid, ", not by this user (", ::geteuid(), ")");
  }
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (status.st_mode & S_ISVTX) == 0) {
    return strCat("is writable by its group or by others without the sticky bit (mode 0",
                  std::to_string((status.st_mode >> 6) & 7),
                  std::to_string((status.st_mode >> 3) & 7), std::to_string(status.st_mode & 7),
                  "; `chmod go-w` it)");
  }
  return std::nullopt;
}

} // namespace popsim
