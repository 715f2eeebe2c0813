#pragma once

// Compiled programs on disk: the files of compileAndExport / loadExecutable /
// popsim.load and the executable cache's entries (executable_cache.h). The
// layout (little-endian):
//
//   "POPSIMEX" | u32 container version | u64 length + JSON header
//   | u64 length + program (runtime::Executable's serialized program, itself
//     checksummed)
//   | u64 length + model section (opaque here: Python's pickled model,
//     options and optimizer with export_model=True; else empty)
//   | SHA-256 of everything before it
//
// The header says which popsim build wrote the file, holds the program's key
// (program_key.h) so that a mismatch names what differs, the program's own
// SHA-256, and for exported files whether the model trains and the call it
// was compiled for (the frontend's data, stored as given). Reading a file
// parses the header and checks both digests; it never runs anything from the
// file (the model section is only handed back as bytes). The digests detect
// damage, not tampering: whoever can write a file chooses what it holds,
// which is why the cache reads its entries with FileAccess::Private.

#include "host/program_key.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <sys/stat.h>

namespace popsim::host {

inline constexpr char kProgramFileMagic[] = "POPSIMEX";
// 2: no executable content outside the model section; the program's SHA-256
// in the header.
inline constexpr uint32_t kProgramFileVersion = 2;

struct ProgramFile {
  ProgramKey key;
  std::string program;
  // compileAndExport's facts (unset in a cache entry): whether the model
  // trains, and the call it was compiled for.
  std::optional<bool> training;
  std::optional<nlohmann::json> call;
  std::string modelSection;
};

// Writes the file atomically (a reader never sees half of it), readable by
// its owner only. Throws std::filesystem::filesystem_error naming the path.
void writeProgramFile(const std::string& path, const ProgramFile& file);

// compileAndExport's write: as writeProgramFile, except that a path naming
// an existing directory gets one file in it, named by the key's digest (as
// PopTorch's save() takes a directory). Returns the path written.
std::string exportProgramFile(const std::string& path, const ProgramFile& file);

enum class FileAccess {
  Any,
  // A cache entry: the path must be a regular file, not a symbolic link,
  // owned by this user and writable by no one else, checked on the open file
  // itself so that it cannot be swapped between the check and the read.
  Private,
};

// The file's contents; an InvalidFile error naming the file if it is not a
// complete popsim program file (or, Private, not this user's own), and
// std::filesystem::filesystem_error if it cannot be opened.
ProgramFile readProgramFile(const std::string& path, FileAccess access = FileAccess::Any);

// Why a cache directory or entry with this status must not be used (another
// user's, not a regular file, or writable by its group or others, who could
// then choose the program this user runs), or nullopt.
std::optional<std::string> ownershipProblem(const struct stat& status, bool regularFile);

} // namespace popsim::host
