// Compiled programs on disk: a graph written and read back is the same
// program (text, bytes and pipeline tasks), and damaged, cut-off or foreign
// bytes are InvalidFile errors.

#include "common/byte_stream.h"
#include "compiler/compile_program.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/serialization.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace popsim {
namespace {

using ir::OpKind;
using ir::Value;
using testing::f32;
using testing::inBlock;

// Two blocks on two IPUs, a constant, every attribute type, a name scope,
// an op the IPU runs in float16 and an input the model updates.
std::unique_ptr<ir::Graph> twoBlockModel() {
  auto graph = std::make_unique<ir::Graph>();
  Value* x = graph->addInput("x", f32({2, 3}));
  Value* counter = graph->addInput("counter", {ir::DType::Int64, {2}});
  Value* a = graph->addWeight("a.weight", f32({4, 3}), true);
  Value* b = graph->addWeight("b.weight", f32({1, 4}), true);
  std::vector<uint8_t> bytes(4 * sizeof(float));
  const float offsets[] = {0.5f, -1.0f, 2.0f, 0.25f};
  std::memcpy(bytes.data(), offsets, bytes.size());
  Value* offset = graph->addConstant(f32({4}), bytes, "offset");
  const ir::SourceLocation here{"model.py", 5, "forward", "model.py:5 in forward", "encoder"};
  Value* hidden = inBlock(graph->apply(OpKind::Linear, {x, a}, {}, here), "A");
  hidden = inBlock(graph->apply(OpKind::Add, {hidden, offset}), "A");
  hidden->producer()->setAvailableMemoryProportion(0.25);
  hidden = inBlock(graph->apply(OpKind::Relu, {hidden}), "A");
  ir::Placement inFloat16 = hidden->producer()->placement();
  inFloat16.float16OnIpu = true;
  hidden->producer()->setPlacement(inFloat16);
  Value* y = inBlock(graph->apply(OpKind::Linear, {hidden, b}), "B");
  Value* loss = inBlock(graph->apply(OpKind::ReduceMean, {y},
                                     {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}}),
                        "B");
  graph->addOutput(loss);
  graph->addOutput(
      inBlock(graph->apply(OpKind::Affine, {x}, {{"scale", 2.0}, {"shift", 0.5}}), "B"));
  graph->addInputUpdate(1, counter);
  graph->setLoss(loss);
  graph->addBlock({"A", 0, here});
  graph->addBlock({"B", 1, {}});
  return graph;
}

device::IpuSystemConfig twoIpus() {
  device::IpuSystemConfig system;
  system.numIpus = 2;
  return system;
}

compiler::Program compiledTraining() {
  compiler::CompilerOptions options;
  options.program = compiler::ProgramKind::Training;
  options.training.groups.push_back({{"a.weight", "b.weight"}});
  options.gradientAccumulation = 3;
  options.stages = {{"A", 0, 0}, {"B", 1, 1}};
  options.recomputation = true;
  return compiler::compileProgram(*twoBlockModel(), options, twoIpus());
}

std::string taskNames(const compiler::TaskLayout& layout) {
  std::string names;
  for (const compiler::PipelineTask& task : layout.tasks()) {
    names += task.name() + "@" + std::to_string(task.ipu) + " ";
  }
  return names;
}

TEST(SerializationTest, AnImportedGraphReadsBackAsTheSameProgram) {
  const auto graph = twoBlockModel();
  const std::string bytes = ir::serializeGraph(*graph);
  const auto read = ir::deserializeGraph(bytes);
  EXPECT_EQ(ir::printGraph(*read, {true, true}), ir::printGraph(*graph, {true, true}));
  EXPECT_EQ(ir::serializeGraph(*read), bytes);
  EXPECT_EQ(read->inputUpdates(), graph->inputUpdates());
  ASSERT_EQ(read->blocks().size(), 2u);
  EXPECT_EQ(read->blocks()[0].location.nameScope, "encoder");
  EXPECT_EQ(read->blocks()[1].ipu, 1);
  EXPECT_EQ(read->nodes()[1]->availableMemoryProportion(), 0.25);
  EXPECT_FALSE(read->nodes()[1]->placement().float16OnIpu);
  EXPECT_TRUE(read->nodes()[2]->placement().float16OnIpu);
  ir::PrintOptions full;
  full.full = true;
  const std::string text = ir::printGraph(*graph, full);
  EXPECT_NE(text.find("float16 on the IPU"), std::string::npos) << text;
  EXPECT_EQ(ir::printGraph(*ir::parseGraph(text), full), text);
  EXPECT_EQ(read->constants()[0]->constantData(), graph->constants()[0]->constantData());
  EXPECT_EQ(read->loss()->producer()->kind(), OpKind::ReduceMean);
}

TEST(SerializationTest, ACompiledPipelineReadsBackWithItsTasks) {
  const compiler::Program compiled = compiledTraining();
  const std::string bytes = ir::serializeGraph(*compiled.graph);
  const auto read = ir::deserializeGraph(bytes);
  EXPECT_EQ(ir::printGraph(*read, {true, true}), ir::printGraph(*compiled.graph, {true, true}));
  EXPECT_EQ(ir::serializeGraph(*read), bytes);
  // The runtime rebuilds the task layout from the placements the file keeps.
  const compiler::TaskLayout layout(*read, true);
  EXPECT_EQ(taskNames(layout), taskNames(compiled.layout));
  EXPECT_EQ(taskNames(layout), "F0@0 FB1@1 B0@0 U0@0 U1@1 ");
  ASSERT_EQ(read->nodes().size(), compiled.graph->nodes().size());
  for (size_t i = 0; i < read->nodes().size(); ++i) {
    EXPECT_EQ(layout.taskOf(*read->nodes()[i]),
              compiled.layout.taskOf(*compiled.graph->nodes()[i]));
  }
}

CoreError readError(const std::string& bytes) {
  return testing::captureError([&] { ir::deserializeGraph(bytes); });
}

// An input the host streams narrower than its type (8-bit images as int32)
// keeps its width through the bytes and the IR text; its transfers count it.
TEST(SerializationTest, AnInputsStreamedWidthReadsBack) {
  ir::Graph graph;
  Value* images = graph.addInput("images", ir::TensorType{ir::DType::Int32, {2, 3}});
  graph.addOutput(graph.apply(OpKind::Cast, {images}, {{"dtype", std::string("f32")}}));
  graph.setInputStreamedElementBytes(0, 1);
  EXPECT_EQ(graph.inputStreamedBytes(0), 6u);
  const auto read = ir::deserializeGraph(ir::serializeGraph(graph));
  EXPECT_EQ(read->inputStreamedElementBytes(0), 1u);
  const std::string text = ir::printGraph(graph);
  EXPECT_NE(text.find("%images: i32[2,3] {streamed_bytes=1}"), std::string::npos) << text;
  EXPECT_EQ(ir::printGraph(*ir::parseGraph(text)), text);
  graph.setInputStreamedElementBytes(0, 0);
  EXPECT_EQ(graph.inputStreamedBytes(0), 24u);
}

TEST(SerializationTest, DamagedBytesAreInvalidFileErrors) {
  const std::string bytes = ir::serializeGraph(*compiledTraining().graph);
  const size_t header = 8 + 4 + 8 + 8;

  std::string flipped = bytes;
  flipped[header + flipped.size() / 2 % (bytes.size() - header)] ^= 0x10;
  CoreError error = readError(flipped);
  EXPECT_EQ(error.kind(), ErrorKind::InvalidFile);
  EXPECT_TRUE(testing::contains(error.what(), "checksum does not match"));

  error = readError(bytes.substr(0, bytes.size() - 7));
  EXPECT_EQ(error.kind(), ErrorKind::InvalidFile);
  EXPECT_TRUE(testing::contains(error.what(), "ends early"));

  error = readError("not a popsim program at all, just text");
  EXPECT_EQ(error.kind(), ErrorKind::InvalidFile);
  EXPECT_TRUE(testing::contains(error.what(), "does not start with popsim's program header"));

  std::string newer = bytes;
  newer[8] = static_cast<char>(ir::kGraphFormatVersion + 1);
  error = readError(newer);
  EXPECT_EQ(error.kind(), ErrorKind::InvalidFile);
  EXPECT_TRUE(testing::contains(error.what(), "Compile the model again"));
}

// A file whose checksum holds but whose contents do not make a program (as a
// popsim with other op names would write) is refused by the checks behind it.
TEST(SerializationTest, AWellFormedFileWithAnUnknownOpIsRefused) {
  const auto graph = twoBlockModel();
  std::string bytes = ir::serializeGraph(*graph);
  const size_t at = bytes.find("reduce_mean");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 11, "reduce_mead");
  const size_t header = 8 + 4 + 8 + 8;
  const uint64_t checksum = fnv1a64(std::string_view(bytes).substr(header));
  std::memcpy(bytes.data() + header - 8, &checksum, sizeof(checksum));
  const CoreError error = readError(bytes);
  EXPECT_EQ(error.kind(), ErrorKind::InvalidFile);
  EXPECT_TRUE(testing::contains(error.what(), "unknown op 'reduce_mead'"));
}

} // namespace
} // namespace popsim
