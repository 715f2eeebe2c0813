// The readers of files popsim did not write itself, under attack: a compiled
// program's bytes (executable cache, compileAndExport) and IR text
// (popsim-opt). Each is mutated at random from real inputs, as a local user
// with write access to a shared cache would, with the checksum recomputed so
// the reader's own checks are what stands between the bytes and the
// compiler. Every outcome must be a loaded program or a popsim::CoreError:
// never a crash, an out-of-bounds access (the sanitizer build runs this
// too), a hang or another exception. The inputs that crashed popsim once
// stay as regression cases below.

#include "common/byte_stream.h"
#include "common/error.h"
#include "compiler/program_text.h"
#include "ir/serialization.h"
#include "runtime/executable.h"
#include "tools/opt_driver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace popsim {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const fs::path kIrDir = fs::path(POPSIM_SOURCE_DIR) / "tests" / "ir";

runtime::CompileOptions costOnlyOptions(const compiler::CompileSettings& settings) {
  runtime::CompileOptions options;
  options.system = settings.system;
  options.compiler = settings.options;
  options.kernels.costOnly = true; // no kernels built or memory bound: the loop stays fast
  return options;
}

// The whole training pipeline of tests/ir/pipeline, compiled: the program
// bytes a cache entry holds, and the options it loads with.
struct RealProgram {
  std::string bytes;
  runtime::CompileOptions options;
};

const RealProgram& realProgram() {
  static const RealProgram program = [] {
    compiler::ProgramText text =
        compiler::parseProgramText(readFile(kIrDir / "pipeline" / "training.ir"));
    RealProgram real;
    real.options = costOnlyOptions(text.settings);
    real.bytes = runtime::Executable::compile(*text.graph, real.options)->serializeProgram();
    return real;
  }();
  return program;
}

// The serialized program's header: magic, version, payload size, checksum.
constexpr size_t kHeaderBytes = 8 + 4 + 8 + 8;

// `payload` under a valid header: what an attacker who recomputes the
// checksum writes.
std::string withValidHeader(std::string_view payload) {
  ByteWriter out;
  out.writeRaw("POPSIMIR", 8);
  out.write<uint32_t>(ir::kGraphFormatVersion);
  out.write<uint64_t>(payload.size());
  out.write<uint64_t>(fnv1a64(payload));
  out.writeRaw(payload.data(), payload.size());
  return out.take();
}

// One random change of the kinds that find reader bugs: a flipped bit, a
// byte set to a boundary value, an 8-byte run set to an extreme integer
// (the stage -1 / INT64_MAX / 2^32 of the crashes), a chunk cut, repeated
// or cut off.
std::string mutate(std::string data, std::mt19937_64& random) {
  if (data.empty()) return data;
  auto at = [&](size_t size) { return std::uniform_int_distribution<size_t>(0, size - 1)(random); };
  switch (random() % 7) {
  case 0: data[at(data.size())] ^= static_cast<char>(1u << (random() % 8)); break;
  case 1: {
    const char values[] = {0, 1, 0x7f, static_cast<char>(0x80), static_cast<char>(0xff), '-', '9'};
    data[at(data.size())] = values[random() % sizeof(values)];
    break;
  }
  case 2: {
    const int64_t values[] = {-1,
                              0,
                              1,
                              8'000'000,
                              int64_t{1} << 32,
                              int64_t{1} << 40,
                              std::numeric_limits<int64_t>::max(),
                              std::numeric_limits<int64_t>::min()};
    const int64_t value = values[random() % (sizeof(values) / sizeof(values[0]))];
    const size_t offset = at(data.size());
    for (size_t k = 0; k < 8 && offset + k < data.size(); ++k) {
      data[offset + k] = static_cast<char>((static_cast<uint64_t>(value) >> (8 * k)) & 0xff);
    }
    break;
  }
  case 3: {
    const size_t offset = at(data.size());
    data.erase(offset, 1 + random() % 16);
    break;
  }
  case 4: {
    const size_t offset = at(data.size());
    data.insert(offset, data.substr(offset, 1 + random() % 16));
    break;
  }
  case 5: data.resize(at(data.size())); break;
  default: { // a number in text (a setting, stage, dimension) made extreme
    const size_t digit = data.find_first_of("0123456789", at(data.size()));
    if (digit == std::string::npos) break;
    const size_t end = data.find_first_not_of("0123456789", digit);
    const char* values[] = {
        "-1", "0", "8000000", "4294967296", "9223372036854775807", "99999999999999999999"};
    data.replace(digit, (end == std::string::npos ? data.size() : end) - digit,
                 values[random() % (sizeof(values) / sizeof(values[0]))]);
    break;
  }
  }
  return data;
}

// Runs `attempt` on mutations for a bounded time (and count); each must
// return or throw popsim::CoreError. Returns how many ran.
// POPSIM_FUZZ_SEED changes the seeds, to explore beyond the fixed slice CI runs.
template <typename Attempt> int fuzz(uint64_t seed, int maxRuns, Attempt attempt) {
  if (const char* extra = std::getenv("POPSIM_FUZZ_SEED"))
    seed += std::strtoull(extra, nullptr, 10);
  std::mt19937_64 random(seed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(6);
  int runs = 0;
  for (; runs < maxRuns && std::chrono::steady_clock::now() < deadline; ++runs) {
    try {
      attempt(random);
    } catch (const CoreError&) {
      // A clear refusal is the expected outcome of most mutations.
    } catch (const std::exception& error) {
      ADD_FAILURE() << "mutation " << runs << " of seed " << seed
                    << " raised a non-popsim exception: " << error.what();
    }
  }
  return runs;
}

TEST(ReaderFuzzTest, MutatedProgramsLoadOrAreRefused) {
  const RealProgram& real = realProgram();
  const std::string payload = real.bytes.substr(kHeaderBytes);
  ASSERT_EQ(withValidHeader(payload), real.bytes); // the helper writes popsim's header
  int loaded = 0;
  const int runs = fuzz(53, 3000, [&](std::mt19937_64& random) {
    std::string mutated = payload;
    for (int k = 1 + static_cast<int>(random() % 3); k > 0; --k)
      mutated = mutate(mutated, random);
    runtime::Executable::load(withValidHeader(mutated), real.options);
    ++loaded;
  });
  EXPECT_GT(runs, 20);
  // Some mutations (names, constants' bytes, attribute values) still make a
  // program: those reach the memory plan, costs and clock.
  EXPECT_GT(loaded, 0);
  std::cout << runs << " mutated programs, " << loaded << " loaded\n";
}

TEST(ReaderFuzzTest, MutatedIrTextParsesAndCompilesOrIsRefused) {
  std::vector<std::string> seeds;
  for (const auto& entry : fs::directory_iterator(kIrDir)) {
    if (entry.path().extension() == ".ir") seeds.push_back(readFile(entry.path()));
  }
  seeds.push_back(readFile(kIrDir / "pipeline" / "training.ir"));
  ASSERT_GT(seeds.size(), 10u);
  int compiled = 0;
  const int runs = fuzz(48, 3000, [&](std::mt19937_64& random) {
    std::string mutated = seeds[random() % seeds.size()];
    for (int k = 1 + static_cast<int>(random() % 3); k > 0; --k)
      mutated = mutate(mutated, random);
    std::ostringstream out, err;
    // Every pass and check, as popsim-opt runs a file without options.
    const int status = tools::runOptOnText({"--split-input-file"}, mutated, out, err);
    EXPECT_TRUE(status == 0 || status == 1) << err.str();
    // Bad text is the reader's or a check's error, never an internal one.
    EXPECT_EQ(err.str().find("popsim bug"), std::string::npos) << err.str();
    compiled += status == 0 ? 1 : 0;
  });
  EXPECT_GT(runs, 20);
  EXPECT_GT(compiled, 0);
  std::cout << runs << " mutated IR texts, " << compiled << " compiled\n";
}

// Inputs that crashed, hung or overflowed once, each refused now with an
// error that names the field.
std::string programWithStage(const std::string& stage) {
  return "graph(%x: f32[2]) {\n  %y: f32[2] = relu(%x) [stage " + stage + "]\n  return (%y)\n}\n";
}

TEST(ReaderFuzzTest, StagesAndIpusOutOfBoundsAreParseErrors) {
  for (const std::string stage : {"-1", "9223372036854775807", "8000000", "4294967296"}) {
    std::ostringstream out, err;
    EXPECT_EQ(tools::runOptOnText({"--passes=check-tasks"}, programWithStage(stage), out, err), 1);
    EXPECT_NE(err.str().find("pipeline stage " + stage + " is outside 0..4095"), std::string::npos)
        << err.str();
  }
  std::ostringstream out, err;
  const std::string onIpu =
      "graph(%x: f32[2]) {\n  %y: f32[2] = relu(%x) [ipu -3]\n  return (%y)\n}\n";
  EXPECT_EQ(tools::runOptOnText({"--passes=check-tasks"}, onIpu, out, err), 1);
  EXPECT_NE(err.str().find("IPU -3 is outside 0..1023"), std::string::npos) << err.str();
}

TEST(ReaderFuzzTest, ShapesWhoseCountOverflowsAreParseErrors) {
  std::ostringstream out, err;
  const std::string huge =
      "graph(%x: f32[4294967296,4294967296]) {\n  %y: f32[4294967296,4294967296] = relu(%x)\n"
      "  return (%y)\n}\n";
  EXPECT_EQ(tools::runOptOnText({"--passes="}, huge, out, err), 1);
  EXPECT_NE(err.str().find("shape [4294967296,4294967296] has more than 2^48 elements"),
            std::string::npos)
      << err.str();
  EXPECT_THROW(ir::elementCount({-2, 3}), CoreError);
  EXPECT_EQ(ir::elementCount({int64_t{1} << 50, 0}), 0);
}

// The program reader refuses what the parser refuses: a node's stage
// written as -1 into real bytes, under a valid checksum.
TEST(ReaderFuzzTest, AProgramWithANegativeStageIsAnInvalidFile) {
  const RealProgram& real = realProgram();
  std::unique_ptr<ir::Graph> graph = ir::deserializeGraph(real.bytes);
  ir::Placement placement = graph->nodes().front()->placement();
  placement.stage = -1;
  graph->nodes().front()->setPlacement(placement);
  try {
    runtime::Executable::load(ir::serializeGraph(*graph), real.options);
    FAIL() << "a program with stage -1 loaded";
  } catch (const CoreError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidFile);
    EXPECT_NE(std::string(error.what()).find("pipeline stage -1 is outside 0..4095"),
              std::string::npos)
        << error.what();
  }
}

} // namespace
} // namespace popsim
