#pragma once

#include <cstdint>
#include <string>

namespace popsim::device {

enum class ChipVersion { Mk1, Mk2, Bow };

// Public figures of one IPU (Graphcore datasheets and docs; see
// ../shared/reference/ipu-model.md). Memory and time are simulated from them.
struct ChipSpec {
  ChipVersion version;
  const char* name; // "Mk2 (GC200)"
  int64_t tiles;    // independent cores with local SRAM
  int64_t workerThreadsPerTile;
  uint64_t sramBytesPerTile;
  double clockHz;
  int64_t fp32MacsPerTileCycle; // AMP throughput, fp32 accumulation
  int64_t fp16MacsPerTileCycle;
  int64_t exchangeBytesPerTileCycle; // on-chip exchange fabric
  double linkBytesPerSecond;         // point-to-point IPU-Link bandwidth
  int64_t linkLatencyCycles;
  double hostBytesPerSecond; // PCIe host I/O as Graphcore's cost model uses it
  int64_t hostLatencyCycles;

  uint64_t memoryBytes() const { return static_cast<uint64_t>(tiles) * sramBytesPerTile; }
};

const ChipSpec& chipSpec(ChipVersion version);
// Accepts "Mk1", "Mk2", "Bow" (any case) and the part names "GC2", "GC200".
bool parseChipVersion(const std::string& text, ChipVersion* version);
// "Mk1", "Mk2" or "Bow", as options spell the version.
const char* chipVersionName(ChipVersion version);

} // namespace popsim::device
