#include "frontend/import.h"
#include "frontend/lowering_registry.h"
#include "frontend/tensor_conversion.h"
#include "python/bindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/jit/python/pybind_utils.h>

namespace py = pybind11;

namespace popsim::python {

using frontend::emptyTensor;
using frontend::tensorOver;
using frontend::typeOf;
using frontend::viewOf;

void bindFrontend(py::module_& module) {
  module.def(
      "import_module",
      [](const py::object& traced, const std::vector<at::Tensor>& examples,
         const std::vector<std::string>& libraryPaths, const std::string& modelAttribute,
         const std::vector<std::string>& inputNames, bool training, int64_t randomSeed,
         bool downcastMixedFloats) {
        const auto scripted = py::cast<torch::jit::Module>(traced.attr("_c"));
        std::vector<ir::TensorType> types;
        for (size_t i = 0; i < examples.size(); ++i) {
          const std::string what = i < inputNames.size() ? "input '" + inputNames[i] + "'"
                                                         : "input " + std::to_string(i);
          types.push_back(typeOf(examples[i], what));
        }
        frontend::ImportOptions options;
        options.libraryPaths = libraryPaths;
        options.modelAttribute = modelAttribute;
        options.inputNames = inputNames;
        options.training = training;
        options.randomSeed = randomSeed;
        options.downcastMixedFloats = downcastMixedFloats;
        return std::shared_ptr<ir::Graph>(frontend::importModule(scripted, types, options));
      },
      py::arg("traced"), py::arg("examples"), py::arg("library_paths"),
      py::arg("model_attribute") = "", py::arg("input_names") = std::vector<std::string>{},
      py::arg("training") = false, py::arg("random_seed") = 0,
      py::arg("downcast_mixed_floats") = true,
      "Lowers a torch.jit.trace'd module to a popsim IR graph.");
  module.def(
      "lowered_ops", [] { return frontend::LoweringRegistry::instance().names(); },
      "The aten ops popsim lowers to its IR (or recognises to refuse with a reason), sorted.");
  module.def(
      "refused_ops", [] { return frontend::LoweringRegistry::instance().refusedNames(); },
      "The ops popsim recognises only to refuse them with a reason, sorted.");
}

} // namespace popsim::python
