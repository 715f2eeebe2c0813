#include "device/chip_spec.h"

#include <algorithm>
#include <cctype>

namespace popsim::device {
namespace {

// Where each figure comes from (../shared/reference/ipu-model.md collects
// them):
// - tiles, worker threads, SRAM per tile and clock: Graphcore's product
//   pages and datasheets for the Colossus GC2 (Mk1), GC200 (Mk2) and Bow IPU
//   (the Bow is the GC200 design at 1.85 GHz);
// - MACs per tile-cycle: Graphcore's quoted peaks divided by 2 flops x tiles
//   x clock (Mk2: 250 TFLOPS float16 and 62.5 float32 -> 64 and 16; Mk1:
//   124.5 and 31.1 -> 32 and 8), the AMP units' rates that Jia et al.'s
//   matmul measurements approach on large products;
// - exchange: 4 bytes per tile-cycle, the per-tile share of the ~8 TB/s
//   all-to-all exchange Graphcore quotes for the GC200, in line with the
//   exchange bandwidth Jia et al. measure per tile on the Mk1;
// - IPU-Links: 64 GB/s and 3,000 cycles per point-to-point transfer, within
//   the 58-70 GB/s useful figure of ipu-model.md (10 links, 320 GB/s in all);
// - host: 7 GB/s and 50,000 cycles per transfer, the figures Graphcore's own
//   pipeline cost model (PopART's auto-pipelining) uses for PCIe Gen4 x16.

// Mk1 (GC2): 1216 tiles x 256 KiB, ~1.6 GHz, 8 fp32 / 32 fp16 MACs per tile-cycle.
constexpr ChipSpec kMk1 = {
    ChipVersion::Mk1, "Mk1 (GC2)", 1216, 6, 256 * 1024, 1.6e9, 8, 32, 4, 64e9, 3000, 7e9, 50000};
// Mk2 (GC200): 1472 tiles x 624 KiB (~897 MiB), 1.33 GHz, 16 fp32 / 64 fp16 MACs.
constexpr ChipSpec kMk2 = {ChipVersion::Mk2,
                           "Mk2 (GC200)",
                           1472,
                           6,
                           624 * 1024,
                           1.33e9,
                           16,
                           64,
                           4,
                           64e9,
                           3000,
                           7e9,
                           50000};
// Bow: the Mk2 tile array clocked at 1.85 GHz.
constexpr ChipSpec kBow = {
    ChipVersion::Bow, "Bow", 1472, 6, 624 * 1024, 1.85e9, 16, 64, 4, 64e9, 3000, 7e9, 50000};

} // namespace

const ChipSpec& chipSpec(ChipVersion version) {
  switch (version) {
  case ChipVersion::Mk1: return kMk1;
  case ChipVersion::Mk2: return kMk2;
  case ChipVersion::Bow: return kBow;
  }
  return kMk2;
}

const char* chipVersionName(ChipVersion version) {
  switch (version) {
  case ChipVersion::Mk1: return "Mk1";
  case ChipVersion::Mk2: return "Mk2";
  case ChipVersion::Bow: return "Bow";
  }
  return "?";
}

bool parseChipVersion(const std::string& text, ChipVersion* version) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "mk1" || lower == "gc2") {
    *version = ChipVersion::Mk1;
  } else if (lower == "mk2" || lower == "gc200") {
    *version = ChipVersion::Mk2;
  } else if (lower == "bow") {
    *version = ChipVersion::Bow;
  } else {
    return false;
  }
  return true;
}

} // namespace popsim::device
