#include "ir/verifier.h"

#include "common/check.h"
#include "ir/op_schema.h"

#include <algorithm>
#include <unordered_set>

namespace popsim::ir {
namespace {

class Verifier {
public:
  explicit Verifier(const Graph& graph) : graph_(graph) {}

  std::vector<std::string> run() {
    checkLeaves();
    for (const auto& node : graph_.nodes()) {
      checkNode(*node);
    }
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      const Value* output = graph_.outputs()[i];
      if (!graph_.owns(output) || defined_.count(output) == 0) {
        problems_.push_back(strCat("graph output ", i, " is not defined by the graph."));
      }
    }
    if (const Value* loss = graph_.loss()) {
      if (!graph_.owns(loss) || defined_.count(loss) == 0) {
        problems_.push_back("the loss is not defined by the graph.");
      } else if (loss->type().rank() != 0 || !isFloat(loss->type().dtype)) {
        problems_.push_back(
            strCat("the loss must be a float scalar, got ", loss->type().str(), "."));
      }
    }
    for (const Graph::Gradient& entry : graph_.gradients()) {
      if (entry.parameter->role() != ValueRole::Weight || defined_.count(entry.parameter) == 0) {
        problems_.push_back("a gradient map entry names a parameter that is not a weight of the "
                            "graph.");
      } else if (!graph_.owns(entry.gradient) || defined_.count(entry.gradient) == 0) {
        problems_.push_back(
            strCat("the gradient of '", entry.parameter->name(), "' is not defined by the graph."));
      }
    }
    if (const Value* seed = graph_.gradientSeed()) {
      if (!graph_.owns(seed) || defined_.count(seed) == 0) {
        problems_.push_back("the gradient seed is not defined by the graph.");
      }
    }
    return problems_;
  }

private:
  void checkLeaves() {
    for (const BlockAnnotation& block : graph_.blocks()) {
      if (const auto problem = blockIpuProblem(block.ipu)) {
        problems_.push_back(strCat("block '", block.name, "': ", *problem, "."));
      }
    }
    std::unordered_set<std::string> weightNames;
    for (const Value* weight : graph_.weights()) {
      if (!weightNames.insert(weight->name()).second) {
        problems_.push_back(strCat("weight '", weight->name(), "' is declared twice."));
      }
      defined_.insert(weight);
    }
    for (const Value* input : graph_.inputs()) {
      defined_.insert(input);
    }
    std::unordered_set<std::string> stateNames;
    for (const Value* state : graph_.states()) {
      if (!stateNames.insert(state->name()).second) {
        problems_.push_back(strCat("state '", state->name(), "' is declared twice."));
      }
      defined_.insert(state);
    }
    for (const Value* constant : graph_.constants()) {
      if (constant->constantData().size() != constant->type().storageBytes()) {
        problems_.push_back(strCat("constant ", constant->type().str(), " holds ",
                                   constant->constantData().size(), " bytes, expected ",
                                   constant->type().storageBytes(), "."));
      }
      defined_.insert(constant);
    }
  }

  void checkNode(const Node& node) {
    const std::string where = strCat("node #", node.id(), " ", node.describe(), ": ");
    if (const auto problem = placementProblem(node.placement())) {
      problems_.push_back(where + *problem + ".");
    }
    checkOperandsAndTypes(node, where);
    checkMutatedInputs(node, where);
    // Outputs are defined even when the types could not be checked, so that a
    // bad operand is reported once rather than again at every later use.
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      const Value* output = node.outputs()[i];
      if (output->producer() != &node) {
        problems_.push_back(strCat(where, "output ", i, " names another producer."));
      }
      if (!defined_.insert(output).second) {
        problems_.push_back(strCat(where, "output ", i, " is defined twice."));
      }
      for (const Node* user : output->users()) {
        const auto& inputs = user->inputs();
        if (std::find(inputs.begin(), inputs.end(), output) == inputs.end()) {
          problems_.push_back(strCat(where, "output ", i, " lists node #", user->id(),
                                     " as a user but is not its input."));
        }
      }
    }
  }

  void checkMutatedInputs(const Node& node, const std::string& where) {
    for (size_t index : node.schema().mutatedInputs) {
      if (index < node.inputs().size() && !node.input(index)->isVariable()) {
        problems_.push_back(strCat(where, "writes input ", index, ", which is a ",
                                   valueRoleName(node.input(index)->role()),
                                   " value; only weights and state can be written."));
      }
    }
  }

  void checkOperandsAndTypes(const Node& node, const std::string& where) {
    std::vector<TensorType> inputTypes;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const Value* input = node.inputs()[i];
      if (input == nullptr || !graph_.owns(input)) {
        problems_.push_back(strCat(where, "input ", i, " is not a value of this graph."));
        return;
      }
      if (defined_.count(input) == 0) {
        problems_.push_back(strCat(where, "input ", i, " is used before it is defined."));
      }
      const auto& users = input->users();
      if (std::find(users.begin(), users.end(), &node) == users.end()) {
        problems_.push_back(strCat(where, "input ", i, " does not list the node as a user."));
      }
      inputTypes.push_back(input->type());
    }
    std::vector<TensorType> expected;
    try {
      expected = inferOutputTypes(node.kind(), inputTypes, node.attrs());
    } catch (const CoreError& error) {
      problems_.push_back(where + error.what());
      return;
    }
    if (expected.size() != node.outputs().size()) {
      problems_.push_back(strCat(where, "has ", node.outputs().size(), " outputs, expected ",
                                 expected.size(), "."));
      return;
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      const Value* output = node.outputs()[i];
      if (output->type() != expected[i]) {
        problems_.push_back(strCat(where, "output ", i, " has type ", output->type().str(),
                                   " but the schema infers ", expected[i].str(), "."));
      }
    }
  }

  const Graph& graph_;
  std::unordered_set<const Value*> defined_;
  std::vector<std::string> problems_;
};

} // namespace

std::vector<std::string> findGraphProblems(const Graph& graph) { return Verifier(graph).run(); }

void verifyGraph(const Graph& graph, const std::string& context) {
  const std::vector<std::string> problems = findGraphProblems(graph);
  POPSIM_ASSERT(problems.empty(), "the IR graph is invalid", context.empty() ? "" : " after ",
                context, ":\n  ", join(problems, "\n  "), "\n");
}

} // namespace popsim::ir
