#include "ir/printer.h"

#include "common/strings.h"

#include <cctype>
#include <charconv>
#include <cmath>
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

template <typename T> std::string shortestForm(T value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

// A name as the full form writes it: as it is where it is an identifier (of
// the characters names of its kind use), else in double quotes.
std::string quotedUnlessPlain(const std::string& name, bool variable) {
  bool plain = !name.empty();
  for (char c : name) {
    const bool extra = c == '_' || c == '.' || (variable && (c == '/' || c == '@' || c == '-'));
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || extra);
  }
  return plain ? name : "\"" + name + "\"";
}

std::string constantValues(const Value& constant, bool full) {
  const TensorType& type = constant.type();
  const int64_t count = type.numel();
  if (count > 8 && !full) {
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
      if (full) {
        out << shortestForm(v);
      } else {
        out << v;
      }
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
      if (full) {
        out << shortestForm(v);
      } else {
        out << v;
      }
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
      if (const uint64_t bytes = graph_.inputStreamedElementBytes(i); bytes != 0)
        out_ << " {streamed_bytes=" << bytes << "}";
    }
    out_ << ") {\n";
    if (options_.full && !graph_.blocks().empty()) {
      out_ << "  blocks:\n";
      for (const BlockAnnotation& block : graph_.blocks()) {
        out_ << "    \"" << block.name << "\"";
        if (block.ipu >= 0) out_ << " ipu " << block.ipu;
        printLocation(block.location);
        out_ << "\n";
      }
    }
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
             << constantValues(*constant, options_.full) << "\n";
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
    for (const Graph::Gradient& entry : graph_.gradients()) {
      out_ << "  gradient " << nameOf(entry.parameter) << " = " << nameOf(entry.gradient) << "\n";
    }
    if (graph_.gradientSeed() != nullptr) {
      out_ << "  seed " << nameOf(graph_.gradientSeed()) << "\n";
    }
    out_ << "  return (";
    const size_t modelOutputs = graph_.outputs().size() - graph_.inputUpdates().size();
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      out_ << (i > 0 ? ", " : "") << nameOf(graph_.outputs()[i])
           << overlapSuffix(graph_.outputOverlap(i));
      if (options_.full && i >= modelOutputs) {
        out_ << " -> " << nameOf(graph_.inputs()[graph_.inputUpdates()[i - modelOutputs]]);
      }
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
      if (options_.full && !input->name().empty() && !isIdentifier(input->name())) {
        names_[input] = "%\"" + input->name() + "\"";
        continue;
      }
      names_[input] =
          "%" + (isIdentifier(input->name()) ? input->name() : "input" + std::to_string(i));
    }
    for (const Value* weight : graph_.weights()) {
      names_[weight] =
          "@" + (options_.full ? quotedUnlessPlain(weight->name(), true) : weight->name());
    }
    for (const Value* state : graph_.states()) {
      names_[state] =
          "&" + (options_.full ? quotedUnlessPlain(state->name(), true) : state->name());
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
        out_ << (first ? "" : ", ") << name << "=" << attrText(value);
        first = false;
      }
      out_ << "}";
    }
    const Placement& placement = node.placement();
    std::vector<std::string> parts;
    if (placement.phase != Phase::Forward) {
      parts.push_back(phaseName(placement.phase));
    }
    if (placement.ipu != 0 || placement.stage != 0 || !placement.block.empty()) {
      parts.push_back(strCat("stage ", placement.stage, ", ipu ", placement.ipu));
    }
    if (!placement.block.empty()) {
      parts.push_back("block \"" + placement.block + "\"");
    }
    if (placement.recomputed) {
      parts.push_back("recomputed");
    }
    if (options_.full && node.availableMemoryProportion() > 0.0) {
      parts.push_back("amp " + shortestForm(node.availableMemoryProportion()));
    }
    if (options_.full && placement.float16OnIpu) {
      parts.push_back("float16 on the IPU");
    }
    if (!parts.empty()) {
      out_ << " [" << join(parts, ", ") << "]";
    }
    printLocation(node.location());
    out_ << "\n";
  }

  // The attribute as written: shortest exact numbers in the full form.
  std::string attrText(const AttrValue& value) const {
    if (!options_.full) return attrValueToString(value);
    switch (attrTypeOf(value)) {
    case AttrType::Float: return shortestForm(std::get<double>(value));
    case AttrType::Floats: {
      std::string text = "[";
      const auto& values = std::get<std::vector<double>>(value);
      for (size_t i = 0; i < values.size(); ++i) {
        text += (i > 0 ? "," : "") + shortestForm(values[i]);
      }
      return text + "]";
    }
    default: return attrValueToString(value);
    }
  }

  void printLocation(const SourceLocation& location) {
    if (!options_.locations || !location.known()) return;
    out_ << "  # " << (options_.fullPaths ? location.str() : location.shortStr());
    if (!options_.full) return;
    if (!location.function.empty()) out_ << " in " << location.function;
    if (!location.nameScope.empty()) out_ << " scope \"" << location.nameScope << "\"";
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

std::string exactNumber(double value) { return shortestForm(value); }
std::string exactNumber(float value) { return shortestForm(value); }

} // namespace popsim::ir
