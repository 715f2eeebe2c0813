#pragma once

// What a compiled program was compiled from: the imported graph, every
// compile option and the popsim build. Program files (program_file.h) and
// the executable cache (executable_cache.h) store it, so that a program is
// only ever run for the model and options it was built for, and a mismatch
// names what differs.

#include "ir/graph.h"
#include "runtime/compile_options.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace popsim::host {

struct ProgramKey {
  std::string graph; // SHA-256 of the imported graph (ops, attributes, constants, source lines)
  nlohmann::json options; // compileOptionsFingerprint
  std::string build;      // buildId()

  // The cache file's name (hexadecimal SHA-256 of the graph and options).
  // The build is left out, so that a file another popsim build wrote is
  // found, reported as stale and replaced rather than left behind.
  std::string digest() const;
};

// Every field of the compile options as JSON, under the names Python's
// bindings give them ("compiler.training.optimizer" = "OptimizerKind.Sgd"),
// so that a mismatch names an option as a Python user reads it. The replicas
// that take turns on a host thread are left out: they follow Poplar's engine
// options, which apply when a program loads, not to the program.
nlohmann::json compileOptionsFingerprint(const runtime::CompileOptions& options);

// popsim's version and a hash of the library its code was loaded from (the
// Python extension or libpopsim): a rebuilt popsim, whose passes may compile
// differently, never runs another build's program.
const std::string& buildId();

ProgramKey programKey(const ir::Graph& graph, const runtime::CompileOptions& options);

// Why a stored program is not the one `current` asks for ("it was compiled
// for another program: option compiler.device_iterations: 1 in the file, 2
// now"), or nullopt when it is.
std::optional<std::string> keyMismatch(const ProgramKey& stored, const ProgramKey& current);

} // namespace popsim::host
