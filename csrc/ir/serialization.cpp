#include "ir/serialization.h"

#include "common/byte_stream.h"
#include "common/check.h"
#include "common/strings.h"
#include "ir/verifier.h"

#include <unordered_map>

namespace popsim::ir {
namespace {

constexpr std::string_view kMagic = "POPSIMIR";

[[noreturn]] void invalid(const std::string& problem) {
  throwError(ErrorKind::InvalidFile, "The compiled program is damaged or was not written by "
                                     "popsim: " +
                                         problem + ".");
}

void truncated(size_t wanted, size_t left) {
  invalid(strCat("it ends early (", wanted, " more bytes needed, ", left, " left)"));
}

void writeType(ByteWriter& out, const TensorType& type) {
  out.writeString(dtypeName(type.dtype));
  out.write<uint64_t>(type.shape.size());
  for (const int64_t size : type.shape) {
    out.write<int64_t>(size);
  }
}

void writeLocation(ByteWriter& out, const SourceLocation& location, bool withStack) {
  out.writeString(location.file);
  out.write<int64_t>(location.line);
  out.writeString(location.function);
  out.writeString(withStack ? location.stack : std::string());
  out.writeString(location.nameScope);
}

template <typename T> void writeList(ByteWriter& out, const std::vector<T>& items) {
  out.write<uint64_t>(items.size());
  for (const T item : items)
    out.write<T>(item);
}

void writeAttributes(ByteWriter& out, const Attributes& attrs) {
  out.write<uint64_t>(attrs.entries().size());
  for (const auto& [name, value] : attrs.entries()) {
    out.writeString(name);
    out.write<uint8_t>(static_cast<uint8_t>(attrTypeOf(value)));
    switch (attrTypeOf(value)) {
    case AttrType::Int: out.write<int64_t>(std::get<int64_t>(value)); break;
    case AttrType::Float: out.write<double>(std::get<double>(value)); break;
    case AttrType::Bool: out.write<uint8_t>(std::get<bool>(value) ? 1 : 0); break;
    case AttrType::String: out.writeString(std::get<std::string>(value)); break;
    case AttrType::Ints: writeList(out, std::get<std::vector<int64_t>>(value)); break;
    case AttrType::Floats: writeList(out, std::get<std::vector<double>>(value)); break;
    }
  }
}

// Values are numbered as the reader creates them: inputs, weights, states,
// constants, then each node's outputs in node order.
class GraphWriter {
public:
  explicit GraphWriter(bool withStacks) : withStacks_(withStacks) {}
  std::string write(const Graph& graph) {
    out_.write<uint64_t>(graph.inputs().size());
    for (const Value* input : graph.inputs()) {
      number(input);
      out_.writeString(input->name());
      writeType(out_, input->type());
    }
    out_.write<uint64_t>(graph.weights().size());
    for (const Value* weight : graph.weights()) {
      number(weight);
      out_.writeString(weight->name());
      writeType(out_, weight->type());
      out_.write<uint8_t>(weight->trainable() ? 1 : 0);
    }
    out_.write<uint64_t>(graph.states().size());
    for (const Value* state : graph.states()) {
      number(state);
      out_.writeString(state->name());
      writeType(out_, state->type());
      out_.write<uint8_t>(static_cast<uint8_t>(state->stateKind()));
    }
    out_.write<uint64_t>(graph.constants().size());
    for (const Value* constant : graph.constants()) {
      number(constant);
      out_.writeString(constant->name());
      writeType(out_, constant->type());
      out_.writeRaw(constant->constantData().data(), constant->constantData().size());
    }
    out_.write<uint64_t>(graph.nodes().size());
    for (const auto& node : graph.nodes()) {
      writeNode(*node);
    }
    out_.write<uint64_t>(graph.outputs().size());
    for (const Value* output : graph.outputs()) {
      out_.write<uint64_t>(numbers_.at(output));
    }
    out_.write<uint64_t>(graph.inputUpdates().size());
    for (const size_t input : graph.inputUpdates()) {
      out_.write<uint64_t>(input);
    }
    out_.write<int64_t>(graph.loss() != nullptr ? static_cast<int64_t>(numbers_.at(graph.loss()))
                                                : -1);
    out_.write<uint64_t>(graph.blocks().size());
    for (const BlockAnnotation& block : graph.blocks()) {
      out_.writeString(block.name);
      out_.write<int64_t>(block.ipu);
      writeLocation(out_, block.location, withStacks_);
    }
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      out_.write<uint8_t>(static_cast<uint8_t>(graph.inputOverlap(i)));
      out_.write<uint8_t>(static_cast<uint8_t>(graph.inputStreamedElementBytes(i)));
    }
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      out_.write<uint8_t>(static_cast<uint8_t>(graph.outputOverlap(i)));
    }
    return out_.take();
  }

private:
  void number(const Value* value) { numbers_.emplace(value, numbers_.size()); }

  void writeNode(const Node& node) {
    out_.writeString(opKindName(node.kind()));
    out_.write<uint64_t>(node.inputs().size());
    for (const Value* input : node.inputs()) {
      out_.write<uint64_t>(numbers_.at(input));
    }
    writeAttributes(out_, node.attrs());
    writeLocation(out_, node.location(), withStacks_);
    const Placement& placement = node.placement();
    out_.writeString(placement.block);
    out_.write<int64_t>(placement.stage);
    out_.write<int64_t>(placement.ipu);
    out_.write<uint8_t>(static_cast<uint8_t>(placement.phase));
    out_.write<uint8_t>(placement.recomputed ? 1 : 0);
    out_.write<uint8_t>(placement.float16OnIpu ? 1 : 0);
    out_.write<double>(node.availableMemoryProportion());
    out_.write<uint64_t>(node.outputs().size());
    for (const Value* output : node.outputs()) {
      number(output);
      writeType(out_, output->type());
    }
  }

  bool withStacks_;
  ByteWriter out_;
  std::unordered_map<const Value*, uint64_t> numbers_;
};

class GraphReader {
public:
  explicit GraphReader(std::string_view payload) : in_(payload, truncated) {}

  std::unique_ptr<Graph> read() {
    graph_ = std::make_unique<Graph>();
    for (uint64_t i = 0, n = count("inputs"); i < n; ++i) {
      std::string name = in_.readString();
      values_.push_back(graph_->addInput(name, readType()));
    }
    for (uint64_t i = 0, n = count("weights"); i < n; ++i) {
      std::string name = in_.readString();
      TensorType type = readType();
      values_.push_back(graph_->addWeight(name, type, in_.read<uint8_t>() != 0));
    }
    for (uint64_t i = 0, n = count("states"); i < n; ++i) {
      std::string name = in_.readString();
      TensorType type = readType();
      const uint8_t kind = in_.read<uint8_t>();
      if (kind > static_cast<uint8_t>(StateKind::Random)) invalid(strCat("state kind ", kind));
      values_.push_back(graph_->addState(name, type, static_cast<StateKind>(kind)));
    }
    for (uint64_t i = 0, n = count("constants"); i < n; ++i) {
      std::string name = in_.readString();
      TensorType type = readType();
      const char* data = in_.take(type.storageBytes());
      values_.push_back(
          graph_->addConstant(type, std::vector<uint8_t>(data, data + type.storageBytes()), name));
    }
    for (uint64_t i = 0, n = count("nodes"); i < n; ++i) {
      readNode();
    }
    std::vector<Value*> outputs;
    for (uint64_t i = 0, n = count("outputs"); i < n; ++i) {
      outputs.push_back(value());
    }
    std::vector<size_t> inputUpdates;
    for (uint64_t i = 0, n = count("input updates"); i < n; ++i) {
      inputUpdates.push_back(static_cast<size_t>(in_.read<uint64_t>()));
    }
    if (inputUpdates.size() > outputs.size()) invalid("more input updates than outputs");
    const size_t modelOutputs = outputs.size() - inputUpdates.size();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (i < modelOutputs) {
        graph_->addOutput(outputs[i]);
      } else {
        graph_->addInputUpdate(inputUpdates[i - modelOutputs], outputs[i]);
      }
    }
    const int64_t loss = in_.read<int64_t>();
    graph_->setLoss(loss < 0 ? nullptr : valueAt(static_cast<uint64_t>(loss)));
    for (uint64_t i = 0, n = count("blocks"); i < n; ++i) {
      BlockAnnotation block;
      block.name = in_.readString();
      if (graph_->findBlock(block.name) != nullptr)
        invalid(strCat("block '", block.name, "' twice"));
      block.ipu = in_.read<int64_t>();
      if (const auto problem = blockIpuProblem(block.ipu))
        invalid(strCat("block '", block.name, "': ", *problem));
      block.location = readLocation();
      graph_->addBlock(std::move(block));
    }
    for (size_t i = 0; i < graph_->inputs().size(); ++i) {
      graph_->setInputOverlap(i, overlap());
      const auto bytes = in_.read<uint8_t>();
      if (bytes > elementSize(graph_->inputs()[i]->type().dtype))
        invalid(strCat("input ", i, " streamed with ", static_cast<int>(bytes), " bytes"));
      graph_->setInputStreamedElementBytes(i, bytes);
    }
    for (size_t i = 0; i < graph_->outputs().size(); ++i) {
      graph_->setOutputOverlap(i, overlap());
    }
    if (!in_.atEnd()) invalid("bytes follow the program's end");
    return std::move(graph_);
  }

private:
  HostOverlap overlap() {
    const auto code = in_.read<uint8_t>();
    if (code > static_cast<uint8_t>(HostOverlap::DeviceIterationLoop)) {
      invalid(strCat("a host overlap of ", static_cast<int>(code)));
    }
    return static_cast<HostOverlap>(code);
  }

  uint64_t count(const char* what) {
    const uint64_t n = in_.read<uint64_t>();
    // Every entry takes at least a byte, which bounds any honest count.
    if (n > (uint64_t{1} << 40)) invalid(strCat("a count of ", n, " ", what));
    return n;
  }

  TensorType readType() {
    TensorType type;
    const std::string dtype = in_.readString();
    const std::optional<DType> parsed = dtypeFromName(dtype);
    if (!parsed) invalid("unknown dtype '" + dtype + "'");
    type.dtype = *parsed;
    for (uint64_t d = 0, rank = count("dimensions"); d < rank; ++d) {
      const int64_t size = in_.read<int64_t>();
      type.shape.push_back(size);
    }
    if (const auto problem = shapeProblem(type.shape)) invalid(*problem);
    return type;
  }

  SourceLocation readLocation() {
    SourceLocation location;
    location.file = in_.readString();
    location.line = in_.read<int64_t>();
    location.function = in_.readString();
    location.stack = in_.readString();
    location.nameScope = in_.readString();
    return location;
  }

  template <typename T> std::vector<T> readList() {
    std::vector<T> items;
    for (uint64_t k = 0, n = count("list items"); k < n; ++k)
      items.push_back(in_.read<T>());
    return items;
  }

  Attributes readAttributes() {
    Attributes attrs;
    for (uint64_t i = 0, n = count("attributes"); i < n; ++i) {
      std::string name = in_.readString();
      const uint8_t tag = in_.read<uint8_t>();
      switch (tag) {
      case static_cast<uint8_t>(AttrType::Int): attrs.set(name, in_.read<int64_t>()); break;
      case static_cast<uint8_t>(AttrType::Float): attrs.set(name, in_.read<double>()); break;
      case static_cast<uint8_t>(AttrType::Bool): attrs.set(name, in_.read<uint8_t>() != 0); break;
      case static_cast<uint8_t>(AttrType::String): attrs.set(name, in_.readString()); break;
      case static_cast<uint8_t>(AttrType::Ints): attrs.set(name, readList<int64_t>()); break;
      case static_cast<uint8_t>(AttrType::Floats): attrs.set(name, readList<double>()); break;
      default: invalid(strCat("attribute '", name, "' has type tag ", tag));
      }
    }
    return attrs;
  }

  void readNode() {
    const std::string opName = in_.readString();
    const std::optional<OpKind> kind = opKindFromName(opName);
    if (!kind) invalid("unknown op '" + opName + "'");
    std::vector<Value*> inputs;
    for (uint64_t i = 0, n = count("node inputs"); i < n; ++i) {
      inputs.push_back(value());
    }
    Attributes attrs = readAttributes();
    SourceLocation location = readLocation();
    Placement placement;
    placement.block = in_.readString();
    placement.stage = in_.read<int64_t>();
    placement.ipu = in_.read<int64_t>();
    const uint8_t phase = in_.read<uint8_t>();
    if (phase > static_cast<uint8_t>(Phase::Update)) invalid(strCat("phase ", phase));
    placement.phase = static_cast<Phase>(phase);
    placement.recomputed = in_.read<uint8_t>() != 0;
    placement.float16OnIpu = in_.read<uint8_t>() != 0;
    if (const auto problem = placementProblem(placement)) invalid(*problem);
    const double proportion = in_.read<double>();
    Node* node = graph_->addNode(*kind, inputs, std::move(attrs), std::move(location));
    node->setPlacement(std::move(placement));
    node->setAvailableMemoryProportion(proportion);
    if (count("node outputs") != node->outputs().size()) {
      invalid(strCat(node->describe(), " has another number of outputs"));
    }
    for (Value* output : node->outputs()) {
      const TensorType stored = readType();
      if (stored != output->type()) {
        invalid(strCat(node->describe(), " gives ", output->type().str(), " where the file says ",
                       stored.str()));
      }
      values_.push_back(output);
    }
  }

  Value* value() { return valueAt(in_.read<uint64_t>()); }
  Value* valueAt(uint64_t index) {
    if (index >= values_.size()) {
      invalid(strCat("value #", index, " is used before it is defined"));
    }
    return values_[static_cast<size_t>(index)];
  }

  ByteReader in_;
  std::unique_ptr<Graph> graph_;
  std::vector<Value*> values_;
};

} // namespace

std::string serializeGraph(const Graph& graph, bool withStacks) {
  // Imported graphs and finished programs only: a gradient map lives within
  // the training program's passes.
  POPSIM_ASSERT(graph.gradients().empty() && graph.gradientSeed() == nullptr,
                "serializing a graph in the middle of the training program.");
  const std::string payload = GraphWriter(withStacks).write(graph);
  ByteWriter out;
  out.writeRaw(kMagic.data(), kMagic.size());
  out.write<uint32_t>(kGraphFormatVersion);
  out.write<uint64_t>(payload.size());
  out.write<uint64_t>(fnv1a64(payload));
  out.writeRaw(payload.data(), payload.size());
  return out.take();
}

std::unique_ptr<Graph> deserializeGraph(std::string_view bytes) {
  ByteReader header(bytes, truncated);
  if (std::string_view(header.take(kMagic.size()), kMagic.size()) != kMagic) {
    invalid("it does not start with popsim's program header");
  }
  const uint32_t version = header.read<uint32_t>();
  if (version != kGraphFormatVersion) {
    throwError(ErrorKind::InvalidFile,
               strCat("The compiled program has format version ", version, "; this popsim reads ",
                      "version ", kGraphFormatVersion, ". Compile the model again."));
  }
  const uint64_t size = header.read<uint64_t>();
  const uint64_t checksum = header.read<uint64_t>();
  const std::string_view payload(header.take(size), static_cast<size_t>(size));
  if (!header.atEnd()) invalid("bytes follow the program's end");
  if (fnv1a64(payload) != checksum) invalid("its checksum does not match its contents");
  std::unique_ptr<Graph> graph;
  try {
    graph = GraphReader(payload).read();
  } catch (const CoreError& error) {
    if (error.kind() == ErrorKind::InvalidFile) throw;
    invalid(error.what());
  }
  const std::vector<std::string> problems = findGraphProblems(*graph);
  if (!problems.empty()) invalid(problems.front());
  return graph;
}

} // namespace popsim::ir
