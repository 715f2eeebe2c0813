// Reading IR text back into a graph, line by line:
// 1. the header line "graph(<inputs>) {" declares the inputs (with their
//    host overlap);
// 2. indented sections declare the blocks, weights, state and constants;
// 3. each node line "<outputs> = <op>(<operands>) {<attrs>} [<placement>]
//    # <location>" adds the node through the Graph API (so its output types
//    are inferred and checked against the text) and names its outputs;
// 4. "loss", "gradient", "seed" and "return" lines set the graph's loss,
//    gradient map and outputs; "}" ends the graph.

#include "ir/parser.h"

#include "common/check.h"
#include "common/strings.h"
#include "ir/line_reader.h"
#include "ir/op_schema.h"
#include "ir/printer.h"
#include "ir/verifier.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace popsim::ir {
namespace {

class Parser {
public:
  explicit Parser(std::string_view text) : lines_(splitLines(text)) {}

  std::unique_ptr<Graph> parse() {
    size_t index = 0;
    while (index < lines_.size() && blank(lines_[index]))
      ++index;
    POPSIM_CHECK(index < lines_.size(), ErrorKind::InvalidInput,
                 "IR text: empty; expected a line 'graph(...) {'.");
    parseHeader(LineReader(lines_[index], index + 1));
    enum class Section { Nodes, Blocks, Weights, State, Constants } section = Section::Nodes;
    bool closed = false;
    for (++index; index < lines_.size() && !closed; ++index) {
      const std::string_view line = lines_[index];
      if (blank(line)) continue;
      LineReader in(line, index + 1);
      if (line.rfind("    ", 0) == 0 && section != Section::Nodes) {
        switch (section) {
        case Section::Blocks: parseBlock(in); break;
        case Section::Weights: parseWeight(in); break;
        case Section::State: parseState(in); break;
        case Section::Constants: parseConstant(in); break;
        case Section::Nodes: break;
        }
        continue;
      }
      section = Section::Nodes;
      if (in.consume("}")) {
        closed = true;
      } else if (in.consume("blocks:")) {
        section = Section::Blocks;
      } else if (in.consume("weights:")) {
        section = Section::Weights;
      } else if (in.consume("state:")) {
        section = Section::State;
      } else if (in.consume("constants:")) {
        section = Section::Constants;
      } else if (in.consume("loss ")) {
        graph_->setLoss(value(in));
      } else if (in.consume("gradient ")) {
        Value* parameter = value(in);
        in.expect("=");
        graph_->setGradient(parameter, value(in));
      } else if (in.consume("seed ")) {
        graph_->setGradientSeed(value(in));
      } else if (in.consume("return")) {
        parseReturn(in);
      } else {
        parseNode(in);
      }
      if (!in.atEnd()) in.fail("unexpected text at the end of the line");
    }
    POPSIM_CHECK(closed, ErrorKind::InvalidInput,
                 "IR text: the graph is not closed: expected a line '}'.");
    for (; index < lines_.size(); ++index) {
      POPSIM_CHECK(blank(lines_[index]), ErrorKind::InvalidInput, "IR text, line ", index + 1,
                   ": text after the graph's closing '}'.");
    }
    return std::move(graph_);
  }

private:
  static bool blank(std::string_view line) { return blankIrLine(line); }

  TensorType type(LineReader& in) {
    in.skipSpaces();
    const std::string dtypeText = in.word("[");
    const std::optional<DType> dtype = dtypeFromName(dtypeText);
    if (!dtype) in.fail(strCat("'", dtypeText, "' is not a dtype (f32, f16, f64, i32, i64, bool)"));
    in.expect("[");
    Shape shape;
    if (!in.consume("]")) {
      do {
        shape.push_back(in.integer());
      } while (in.consume(","));
      in.expect("]");
    }
    if (const auto problem = shapeProblem(shape)) in.fail(*problem);
    return {*dtype, shape};
  }

  // A value name as the printer writes it: %input, %N, @weight, &state, $cN,
  // or a sigil and a quoted name (%"1"). The quotes stay in the name, which
  // is how values are looked up: an input named "1" (%"1") is not the
  // printer's %1.
  std::string valueName(LineReader& in) {
    const size_t start = in.mark();
    const char sigil = in.peek();
    if (sigil != '%' && sigil != '@' && sigil != '&' && sigil != '$') {
      in.fail("expected a value (%name, @weight, &state or $constant)");
    }
    in.expect(std::string(1, sigil));
    std::string name(1, sigil);
    name += in.peek() == '"' ? "\"" + in.quoted() + "\"" : in.word();
    lastValueColumn_ = start;
    return name;
  }

  // The graph's name of a value valueName read: without its sigil and quotes.
  static std::string plainName(const std::string& name) {
    if (name.size() >= 3 && name[1] == '"') return name.substr(2, name.size() - 3);
    return name.substr(1);
  }

  Value* value(LineReader& in) {
    const std::string name = valueName(in);
    auto it = values_.find(name);
    if (it == values_.end())
      in.failAt(lastValueColumn_, strCat("'", name, "' is not defined above"));
    return it->second;
  }

  void define(LineReader& in, const std::string& name, Value* value) {
    if (!values_.emplace(name, value).second) in.fail(strCat("'", name, "' is defined twice"));
  }

  HostOverlap overlap(LineReader& in) {
    if (!in.consume("[")) return HostOverlap::None;
    const std::string text = in.word();
    const std::optional<HostOverlap> overlap = parseHostOverlap(text);
    if (!overlap) in.fail(strCat("'", text, "' is not a host overlap"));
    in.expect("]");
    return *overlap;
  }

  void parseHeader(LineReader in) {
    in.expect("graph(");
    if (!in.consume(")")) {
      do {
        const std::string name = valueName(in);
        if (name[0] != '%') in.fail("graph inputs are named %name");
        in.expect(":");
        const TensorType inputType = type(in);
        const std::string plain = plainName(name);
        Value* input = graph_->addInput(plain, inputType);
        define(in, name, input);
        const HostOverlap how = overlap(in);
        if (how != HostOverlap::None) graph_->setInputOverlap(graph_->inputs().size() - 1, how);
        if (in.consume("{")) {
          in.expect("streamed_bytes=");
          const int64_t bytes = in.integer();
          if (bytes < 1 || static_cast<size_t>(bytes) > elementSize(inputType.dtype))
            in.fail(strCat("streamed_bytes must be 1 to ", elementSize(inputType.dtype)));
          in.expect("}");
          graph_->setInputStreamedElementBytes(graph_->inputs().size() - 1,
                                               static_cast<uint64_t>(bytes));
        }
      } while (in.consume(","));
      in.expect(")");
    }
    in.expect("{");
    if (!in.atEnd()) in.fail("unexpected text after 'graph(...) {'");
  }

  // "# file:line[ in function][ scope "a/b"]"; unknown without "#".
  SourceLocation location(LineReader& in) {
    SourceLocation where;
    if (!in.consume("#")) return where;
    std::string text = in.rest();
    const size_t scope = text.find(" scope \"");
    if (scope != std::string::npos) {
      const size_t end = text.rfind('"');
      if (end <= scope + 8) in.fail("a name scope has no closing quote");
      where.nameScope = text.substr(scope + 8, end - scope - 8);
      text = text.substr(0, scope);
    }
    const size_t function = text.find(" in ");
    if (function != std::string::npos) {
      where.function = text.substr(function + 4);
      text = text.substr(0, function);
    }
    if (text == "<unknown location>") return where;
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) in.fail("a location reads 'file:line'");
    where.file = text.substr(0, colon);
    char* end = nullptr;
    where.line = std::strtoll(text.c_str() + colon + 1, &end, 10);
    if (*end != '\0') in.fail(strCat("'", text, "' is not a location 'file:line'"));
    return where;
  }

  void parseBlock(LineReader& in) {
    BlockAnnotation block;
    block.name = in.quoted();
    if (graph_->findBlock(block.name) != nullptr)
      in.fail(strCat("block '", block.name, "' is declared twice"));
    if (in.consume("ipu")) block.ipu = in.integer();
    if (const auto problem = blockIpuProblem(block.ipu)) in.fail(*problem);
    block.location = location(in);
    graph_->addBlock(std::move(block));
  }

  void parseWeight(LineReader& in) {
    const std::string name = valueName(in);
    if (name[0] != '@') in.fail("weights are named @name");
    in.expect(":");
    const TensorType weightType = type(in);
    const bool buffer = in.consume("(buffer)");
    if (graph_->findWeight(plainName(name)) != nullptr)
      in.fail(strCat("weight ", name, " is declared twice"));
    define(in, name, graph_->addWeight(plainName(name), weightType, !buffer));
  }

  void parseState(LineReader& in) {
    const std::string name = valueName(in);
    if (name[0] != '&') in.fail("state is named &name");
    in.expect(":");
    const TensorType stateType = type(in);
    in.expect("(");
    const std::string kindText = in.word();
    in.expect(")");
    StateKind kind = StateKind::Optimizer;
    bool known = false;
    for (StateKind candidate : {StateKind::Accumulator, StateKind::Optimizer, StateKind::Random}) {
      if (kindText == stateKindName(candidate)) {
        kind = candidate;
        known = true;
      }
    }
    if (!known) in.fail(strCat("'", kindText, "' is not a state kind"));
    if (graph_->findState(plainName(name)) != nullptr)
      in.fail(strCat("state ", name, " is declared twice"));
    define(in, name, graph_->addState(plainName(name), stateType, kind));
  }

  void parseConstant(LineReader& in) {
    const std::string name = valueName(in);
    if (name[0] != '$') in.fail("constants are named $cN");
    in.expect(":");
    const TensorType constantType = type(in);
    in.expect("=");
    if (in.peek() == '<') {
      in.fail("the constant's values are abbreviated; print the graph with PrintOptions::full");
    }
    const bool list = in.consume("[");
    std::vector<std::string> items;
    if (!list || !in.consume("]")) {
      do {
        items.push_back(in.word());
      } while (list && in.consume(","));
      if (list) in.expect("]");
    }
    if (static_cast<int64_t>(items.size()) != constantType.numel()) {
      in.fail(strCat(constantType.str(), " holds ", constantType.numel(),
                     " values, the text gives ", items.size()));
    }
    const size_t width = storageSize(constantType.dtype);
    std::vector<uint8_t> data(items.size() * width);
    for (size_t i = 0; i < items.size(); ++i) {
      uint8_t* at = data.data() + i * width;
      const char* text = items[i].c_str();
      char* end = nullptr;
      switch (constantType.dtype) {
      case DType::Float32:
      case DType::Float16: {
        const float v = std::strtof(text, &end);
        std::memcpy(at, &v, sizeof(v));
        break;
      }
      case DType::Float64: {
        const double v = std::strtod(text, &end);
        std::memcpy(at, &v, sizeof(v));
        break;
      }
      case DType::Int32: {
        const auto v = static_cast<int32_t>(std::strtol(text, &end, 10));
        std::memcpy(at, &v, sizeof(v));
        break;
      }
      case DType::Int64: {
        const int64_t v = std::strtoll(text, &end, 10);
        std::memcpy(at, &v, sizeof(v));
        break;
      }
      case DType::Bool:
        if (items[i] != "true" && items[i] != "false") in.fail("a bool is true or false");
        *at = items[i] == "true" ? 1 : 0;
        end = const_cast<char*>(text) + items[i].size();
        break;
      }
      if (*end != '\0')
        in.fail(strCat("'", items[i], "' is not a ", dtypeName(constantType.dtype)));
    }
    define(in, name, graph_->addConstant(constantType, std::move(data)));
  }

  AttrValue attribute(LineReader& in, AttrType attrType) {
    switch (attrType) {
    case AttrType::Int: return in.integer();
    case AttrType::Float: return in.number();
    case AttrType::Bool: {
      const std::string text = in.word();
      if (text != "true" && text != "false") in.fail("a bool attribute is true or false");
      return text == "true";
    }
    case AttrType::String: return in.quoted();
    case AttrType::Ints: {
      std::vector<int64_t> values;
      in.expect("[");
      if (!in.consume("]")) {
        do {
          values.push_back(in.integer());
        } while (in.consume(","));
        in.expect("]");
      }
      return values;
    }
    case AttrType::Floats: {
      std::vector<double> values;
      in.expect("[");
      if (!in.consume("]")) {
        do {
          values.push_back(in.number());
        } while (in.consume(","));
        in.expect("]");
      }
      return values;
    }
    }
    in.fail("an attribute of an unknown type");
  }

  Placement placement(LineReader& in, double& proportion) {
    Placement where;
    if (!in.consume("[")) return where;
    do {
      if (in.consume("stage")) {
        where.stage = in.integer();
      } else if (in.consume("ipu")) {
        where.ipu = in.integer();
      } else if (in.consume("block")) {
        where.block = in.quoted();
      } else if (in.consume("amp")) {
        proportion = in.number();
      } else if (in.consume("recomputed")) {
        where.recomputed = true;
      } else if (in.consume("float16 on the IPU")) {
        where.float16OnIpu = true;
      } else {
        const std::string phase = in.word();
        bool known = false;
        for (Phase candidate :
             {Phase::Forward, Phase::Backward, Phase::GradientNorm, Phase::Update}) {
          if (phase == phaseName(candidate)) {
            where.phase = candidate;
            known = true;
          }
        }
        if (!known) {
          in.fail(
              strCat("'", phase,
                     "' is not a phase, stage, ipu, block, amp, recomputed or float16 on the IPU"));
        }
      }
    } while (in.consume(","));
    in.expect("]");
    if (const auto problem = placementProblem(where)) in.fail(*problem);
    return where;
  }

  void parseNode(LineReader& in) {
    const size_t column = in.mark(); // errors about the whole node name its start
    std::vector<std::pair<std::string, TensorType>> outputs;
    if (in.peek() == '%') {
      do {
        const std::string name = valueName(in);
        in.expect(":");
        outputs.emplace_back(name, type(in));
      } while (in.consume(","));
      in.expect("=");
    }
    const std::string opName = in.word("(");
    const std::optional<OpKind> kind = opKindFromName(opName);
    if (!kind) in.fail(strCat("'", opName, "' is not an op"));
    std::vector<Value*> inputs;
    in.expect("(");
    if (!in.consume(")")) {
      do {
        inputs.push_back(value(in));
      } while (in.consume(","));
      in.expect(")");
    }
    Attributes attrs;
    if (in.consume("{")) {
      do {
        const std::string attrName = in.word();
        in.expect("=");
        const OpSchema& schema = opSchema(*kind);
        const AttrSpec* spec = nullptr;
        for (const AttrSpec& candidate : schema.attrs) {
          if (candidate.name == attrName) spec = &candidate;
        }
        if (spec == nullptr) in.fail(strCat(opName, " has no attribute '", attrName, "'"));
        attrs.set(attrName, attribute(in, spec->type));
      } while (in.consume(","));
      in.expect("}");
    }
    double proportion = 0.0;
    const Placement where = placement(in, proportion);
    const SourceLocation source = location(in);
    Node* node = nullptr;
    try {
      node = graph_->addNode(*kind, inputs, std::move(attrs), source);
    } catch (const CoreError& error) {
      in.failAt(column, error.what());
    }
    node->setPlacement(where);
    node->setAvailableMemoryProportion(proportion);
    if (outputs.size() != node->outputs().size()) {
      in.failAt(column, strCat(opName, " has ", node->outputs().size(),
                               " output(s), the text names ", outputs.size()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (node->output(i)->type() != outputs[i].second) {
        in.failAt(column,
                  strCat(opName, " gives output ", i, " the type ", node->output(i)->type().str(),
                         ", the text says ", outputs[i].second.str()));
      }
      define(in, outputs[i].first, node->output(i));
    }
  }

  void parseReturn(LineReader& in) {
    in.expect("(");
    std::vector<std::pair<Value*, HostOverlap>> outputs;
    std::vector<std::pair<Value*, const Value*>> updates; // (value, the input it updates)
    if (!in.consume(")")) {
      do {
        Value* output = value(in);
        const HostOverlap how = overlap(in);
        if (in.consume("->")) {
          updates.emplace_back(output, value(in));
          if (how != HostOverlap::None) in.fail("an input update does not overlap");
          continue;
        }
        if (!updates.empty()) in.fail("input updates (-> %input) come after the outputs");
        outputs.emplace_back(output, how);
      } while (in.consume(","));
      in.expect(")");
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      graph_->addOutput(outputs[i].first);
      if (outputs[i].second != HostOverlap::None) graph_->setOutputOverlap(i, outputs[i].second);
    }
    for (const auto& [update, target] : updates) {
      const auto& graphInputs = graph_->inputs();
      size_t inputIndex = 0;
      while (inputIndex < graphInputs.size() && graphInputs[inputIndex] != target)
        ++inputIndex;
      if (inputIndex == graphInputs.size()) in.fail("an input update names no graph input");
      graph_->addInputUpdate(inputIndex, update);
    }
  }

  std::vector<std::string_view> lines_;
  size_t lastValueColumn_ = 0;
  std::unique_ptr<Graph> graph_ = std::make_unique<Graph>();
  std::unordered_map<std::string, Value*> values_;
};

} // namespace

std::unique_ptr<Graph> parseGraph(std::string_view text) {
  std::unique_ptr<Graph> graph = Parser(text).parse();
  // Text from elsewhere is checked as the program reader checks files: a
  // graph the verifier refuses is the text's error, before any pass runs.
  const std::vector<std::string> problems = findGraphProblems(*graph);
  POPSIM_CHECK(problems.empty(), ErrorKind::InvalidInput,
               "IR text: the graph is not valid: ", join(problems, "; "), "");
  return graph;
}

void checkTextRoundTrip(const Graph& graph, const std::string& where) {
  PrintOptions full;
  full.fullPaths = true;
  full.full = true;
  const std::string text = printGraph(graph, full);
  std::string again;
  try {
    again = printGraph(*parseGraph(text), full);
  } catch (const CoreError& error) {
    POPSIM_ASSERT(false, "the IR text after ", where, " does not parse: ", error.what());
  }
  if (again == text) return;
  size_t line = 1;
  size_t at = 0;
  while (at < text.size() && at < again.size() && text[at] == again[at]) {
    if (text[at] == '\n') ++line;
    ++at;
  }
  POPSIM_ASSERT(false, "the IR text after ", where, " reads back differently from line ", line,
                ":\n", text, "\nreads back as\n", again);
}

} // namespace popsim::ir
