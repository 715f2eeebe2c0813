#pragma once

// Where a session's executable comes from: compiled, read from the
// executable cache (Options.enableExecutableCaching, POPSIM_CACHE_DIR or
// POPTORCH_CACHE_DIR: programs kept between processes) or from an exported
// file (loadExecutable).
//
// A cached program runs without being compiled, so whoever can write the
// cache chooses what this user's models compute. The cache is therefore this
// user's alone: its directory is created with mode 0700, and a directory or
// entry another user owns, or its group or others can write, is not used (one
// warning per directory says why and how to fix it). An entry must be a
// regular file (never followed through a symbolic link), complete, for this
// popsim build, this model and these options, holding the program its header
// records. Anything else is a miss: the model compiles again and the entry is
// replaced, with a warning. A cache never fails a call or changes a result.

#include "host/program_file.h"
#include "host/session_options.h"
#include "ir/graph.h"
#include "runtime/compile_options.h"
#include "runtime/executable.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace popsim::host {

// The environment variables that name the cache when the options do not,
// popsim's first.
inline constexpr const char* kCacheVariables[] = {"POPSIM_CACHE_DIR", "POPTORCH_CACHE_DIR"};

// The directory programs are cached in, or nullopt when caching is off.
std::optional<std::string> cacheDirectory(const ExecutableCache& cache);

enum class ProgramOrigin { Compiled, Cache };

struct ObtainedExecutable {
  std::shared_ptr<runtime::Executable> executable;
  ProgramOrigin origin = ProgramOrigin::Compiled;
  // What the caller should warn about (each face in its own way: Python's
  // warnings, the C++ API's log): an entry or directory the cache did not use.
  std::vector<std::string> warnings;
};

// The executable of `graph` compiled with `options`: the cached one when the
// cache holds it, else compiled (and cached when caching is on).
ObtainedExecutable executableFor(const ir::Graph& graph, const runtime::CompileOptions& options,
                                 const ExecutableCache& cache);

// loadExecutable's: the program of an exported file, which must be the
// program `graph` and `options` give (else an InvalidFile error naming the
// file and what differs).
std::shared_ptr<runtime::Executable> exportedExecutable(const std::string& path,
                                                        const ProgramFile& file,
                                                        const ir::Graph& graph,
                                                        const runtime::CompileOptions& options);

} // namespace popsim::host
