#include "ir/printer.h"

#include "common/strings.h"

#include <cctype>
#include <cstring>
#include <sstream>
#include <unordered_map>

namespace popsim::ir {
namespace {

bool isIdentifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

std::string constantValues(const Value& constant) {
  const TensorType& type = constant.type();
  const int64_t count = type.numel();
  if (count > 8) {
    return "<" + std::to_string(count) + " values>";
  }
  const uint8_t* data = constant.constantData().data();
  std::ostringstream out;
  out.precision(9);
  if (type.rank() > 0) {
    out << "[";
  }
  for (int64_t i = 0; i < count; ++i) {
    if (i > 0) {
      out << ", ";
    }
    switch (type.dtype) {
    case DType::Float32:
    case DType::Float16: { // float16 constants are held in float32 carriers
      float v;
      std::memcpy(&v, data + i * 4, 4);
      out << v;
      break;
    }
    case DType::Int32: {
      int32_t v;
      std::memcpy(&v, data + i * 4, 4);
      out << v;
      break;
    }
    case DType::Int64: {
      int64_t v;
      std::memcpy(&v, data + i * 8, 8);
      out << v;
      break;
    }
    case DType::Bool: out << (data[i] != 0 ? "true" : "false"); break;
    case DType::Float64: {
      double v;
      std::memcpy(&v, data + i * 8, 8);
      out << v;
      break;
    }
    }
  }
  if (type.rank() > 0) {
    out << "]";
  }
  return out.str();
}

class Printer {
public:
  Printer(const Graph& graph, const PrintOptions& options) : graph_(graph), options_(options) {}

  std::string print() {
    nameLeaves();
    out_ << "graph(";
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      const Value* input = graph_.inputs()[i];
      out_ << (i > 0 ? ", " : "") << names_[input] << ": " << input->type().str()
           << overlapSuffix(graph_.inputOverlap(i));
    }
    out_ << ") {\n";
    if (!graph_.weights().empty()) {
      out_ << "  weights:\n";
      for (const Value* weight : graph_.weights()) {
        out_ << "    " << names_[weight] << ": " << weight->type().str()
             << (weight->trainable() ? "" : " (buffer)") << "\n";
      }
    }
    if (!graph_.states().empty()) {
      out_ << "  state:\n";
      for (const Value* state : graph_.states()) {
        out_ << "    " << names_[state] << ": " << state->type().str() << " ("
             << stateKindName(state->stateKind()) << ")\n";
      }
    }
    if (!graph_.constants().empty()) {
      out_ << "  constants:\n";
      for (const Value* constant : graph_.constants()) {
        out_ << "    " << names_[constant] << ": " << constant->type().str() << " = "
             << constantValues(*constant) << "\n";
      }
    }
    int64_t counter = 0;
    for (const auto& node : graph_.nodes()) {
      for (const Value* output : node->outputs()) {
        names_[output] = "%" + std::to_string(counter++);
      }
      printNode(*node);
    }
    if (graph_.loss() != nullptr) {
      out_ << "  loss " << nameOf(graph_.loss()) << "\n";
    }
    out_ << "  return (";
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      out_ << (i > 0 ? ", " : "") << nameOf(graph_.outputs()[i])
           << overlapSuffix(graph_.outputOverlap(i));
    }
    out_ << ")\n}\n";
    return out_.str();
  }

private:
  static std::string overlapSuffix(HostOverlap overlap) {
    return overlap == HostOverlap::None ? "" : std::string(" [") + hostOverlapName(overlap) + "]";
  }

  void nameLeaves() {
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      const Value* input = graph_.inputs()[i];
      names_[input] =
          "%" + (isIdentifier(input->name()) ? input->name() : "input" + std::to_string(i));
    }
    for (const Value* weight : graph_.weights()) {
      names_[weight] = "@" + weight->name();
    }
    for (const Value* state : graph_.states()) {
      names_[state] = "&" + state->name();
    }
    for (size_t i = 0; i < graph_.constants().size(); ++i) {
      names_[graph_.constants()[i]] = "$c" + std::to_string(i);
    }
  }

  std::string nameOf(const Value* value) const {
    auto it = names_.find(value);
    return it == names_.end() ? "<undefined>" : it->second;
  }

  void printNode(const Node& node) {
    out_ << "  ";
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      const Value* output = node.outputs()[i];
      out_ << (i > 0 ? ", " : "") << nameOf(output) << ": " << output->type().str();
    }
    out_ << (node.outputs().empty() ? "" : " = ") << node.name() << "(";
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      out_ << (i > 0 ? ", " : "") << nameOf(node.inputs()[i]);
    }
    out_ << ")";
    if (!node.attrs().entries().empty()) {
      out_ << " {";
      bool first = true;
      for (const auto& [name, value] : node.attrs().entries()) {
        out_ << (first ? "" : ", ") << name << "=" << attrValueToString(value);
        first = false;
      }
      out_ << "}";
    }
    const Placement& placement = node.placement();
    if (placement.ipu != 0 || placement.stage != 0 || !placement.block.empty() ||
        placement.phase != Phase::Forward) {
      out_ << " [";
      const char* separator = "";
      if (placement.phase != Phase::Forward) {
        out_ << phaseName(placement.phase);
        separator = ", ";
      }
      if (placement.ipu != 0 || placement.stage != 0 || !placement.block.empty()) {
        out_ << separator << "stage " << placement.stage << ", ipu " << placement.ipu;
      }
      if (!placement.block.empty()) {
        out_ << ", block \"" << placement.block << "\"";
      }
      out_ << "]";
    }
    if (options_.locations && node.location().known()) {
      out_ << "  # " << (options_.fullPaths ? node.location().str() : node.location().shortStr());
    }
    out_ << "\n";
  }

  const Graph& graph_;
  const PrintOptions& options_;
  std::unordered_map<const Value*, std::string> names_;
  std::ostringstream out_;
};

} // namespace

std::string printGraph(const Graph& graph, const PrintOptions& options) {
  return Printer(graph, options).print();
}

} // namespace popsim::ir
