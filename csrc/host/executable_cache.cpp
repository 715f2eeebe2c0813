#include "host/executable_cache.h"

#include "common/check.h"
#include "common/logging.h"
#include "common/strings.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <sys/stat.h>

namespace popsim::host {
namespace {

std::string trimmed(const char* text) {
  std::string value = text == nullptr ? "" : text;
  const size_t first = value.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return value.substr(first, value.find_last_not_of(" \t\r\n") - first + 1);
}

// Creates the directory (mode 0700) if it is missing; why it cannot be used,
// or nullopt.
std::optional<std::string> directoryProblem(const std::string& directory) {
  std::error_code error;
  if (std::filesystem::create_directories(directory, error)) {
    // Only a directory created here gets 0700; an existing one keeps its
    // mode and is judged by it below (never silently changed).
    std::filesystem::permissions(directory, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, error);
  }
  struct stat status {};
  if (::stat(directory.c_str(), &status) != 0) {
    return strCat("cannot be created or read (", std::generic_category().message(errno), ")");
  }
  if (!S_ISDIR(status.st_mode)) return std::string("is not a directory");
  return ownershipProblem(status, /*regularFile=*/false);
}

// The directories already warned about: one warning per process each.
bool firstWarningAbout(const std::string& directory) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  const std::lock_guard<std::mutex> lock(mutex);
  return warned.insert(directory).second;
}

std::shared_ptr<runtime::Executable> compiled(const ir::Graph& graph,
                                              const runtime::CompileOptions& options) {
  return runtime::Executable::compile(graph, options);
}

} // namespace

std::optional<std::string> cacheDirectory(const ExecutableCache& cache) {
  switch (cache.source) {
  case ExecutableCache::Source::Off: return std::nullopt;
  case ExecutableCache::Source::Directory: return cache.directory;
  case ExecutableCache::Source::Environment:
    for (const char* variable : kCacheVariables) {
      const std::string value = trimmed(std::getenv(variable));
      if (!value.empty()) return value;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

ObtainedExecutable executableFor(const ir::Graph& graph, const runtime::CompileOptions& options,
                                 const ExecutableCache& cache) {
  ObtainedExecutable obtained;
  const std::optional<std::string> directory = cacheDirectory(cache);
  if (!directory.has_value()) {
    obtained.executable = compiled(graph, options);
    return obtained;
  }
  if (const auto problem = directoryProblem(*directory)) {
    if (firstWarningAbout(*directory)) {
      obtained.warnings.push_back(strCat(
          "popsim does not use the executable cache directory '", *directory, "': it ", *problem,
          ". Another user could place programs there that your models would run. Models "
          "compile without the cache; point POPSIM_CACHE_DIR (or enableExecutableCaching) at a "
          "directory of your own, mode 0700."));
    }
    obtained.executable = compiled(graph, options);
    return obtained;
  }
  const ProgramKey key = programKey(graph, options);
  const std::string path =
      (std::filesystem::path(*directory) / (key.digest() + ".popsim")).string();
  std::error_code exists;
  if (std::filesystem::exists(std::filesystem::symlink_status(path, exists))) {
    std::string problem;
    try {
      const ProgramFile stored = readProgramFile(path, FileAccess::Private);
      if (const auto reason = keyMismatch(stored.key, key))
        throwError(ErrorKind::InvalidFile, strCat("'", path, "': ", *reason, "."));
      obtained.executable = runtime::Executable::load(stored.program, options);
      obtained.origin = ProgramOrigin::Cache;
      POPSIM_LOG(Info) << "Loaded the compiled program from the executable cache: " << path;
      return obtained;
    } catch (const CoreError& error) {
      if (error.kind() != ErrorKind::InvalidFile && error.kind() != ErrorKind::Compilation) throw;
      problem = error.what();
    } catch (const std::filesystem::filesystem_error& error) {
      problem = error.what();
    }
    const bool named = problem.find(path) != std::string::npos;
    obtained.warnings.push_back(strCat(
        "popsim's executable cache does not use a file: ", named ? "" : strCat("'", path, "': "),
        problem, " Compiling the model again and replacing the file."));
  }
  obtained.executable = compiled(graph, options);
  try {
    writeProgramFile(
        path, {key, obtained.executable->serializeProgram(), std::nullopt, std::nullopt, ""});
  } catch (const std::filesystem::filesystem_error& error) {
    obtained.warnings.push_back(strCat("popsim's executable cache cannot write '", path, "' (",
                                       error.code().message(),
                                       "): the model runs, but the next "
                                       "process compiles it again."));
  }
  return obtained;
}

std::shared_ptr<runtime::Executable> exportedExecutable(const std::string& path,
                                                        const ProgramFile& file,
                                                        const ir::Graph& graph,
                                                        const runtime::CompileOptions& options) {
  if (const auto reason = keyMismatch(file.key, programKey(graph, options))) {
    throwError(ErrorKind::InvalidFile,
               strCat("loadExecutable('", path, "'): ", *reason,
                      ". Wrap the model (and options) as they were when compileAndExport wrote "
                      "the file, or compile and export it again."));
  }
  try {
    return runtime::Executable::load(file.program, options);
  } catch (const CoreError& error) {
    if (error.kind() != ErrorKind::InvalidFile && error.kind() != ErrorKind::Compilation) throw;
    throw CoreError(error.kind(), strCat("loadExecutable('", path, "'): ", error.what()),
                    error.site());
  }
}

} // namespace popsim::host
