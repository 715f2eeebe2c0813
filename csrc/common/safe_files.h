#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace popsim {

// Files popsim writes into directories other users may reach (profiles,
// reports, IR dumps), written so that nothing planted there redirects them.

// Writes `bytes` to `path` through a temporary file in the same directory
// that is created exclusively (mkstemp: O_CREAT | O_EXCL, so a symlink
// planted under any name is never followed), then renamed over `path`
// (which replaces a link planted there rather than writing through it). A
// reader never sees half a file. The file gets `mode` (0600 for programs
// and exports, which only their owner may read). Throws
// std::filesystem::filesystem_error naming the path on failure.
void writeFileAtomically(const std::string& path, std::string_view bytes, unsigned mode = 0644);

// Why popsim must not write into `directory`, or nullopt: it is not a
// directory, another user owns it, or its group or others can write it
// without the sticky bit (/tmp's 1777 is fine: others cannot replace what
// this user puts there). A directory someone else controls could hold
// planted names, or have popsim's files replaced after they are written.
std::optional<std::string> sharedDirectoryProblem(const std::string& directory);

} // namespace popsim
