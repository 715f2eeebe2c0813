#include "common/check.h"
#include "ir/printer.h"
#include "python/bindings.h"
#include "python/tensor_conversion.h"
#include "runtime/executable.h"

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace popsim::python {
namespace {

using runtime::Executable;

template <typename T> T option(const py::dict& options, const char* key, T fallback) {
  if (!options.contains(key) || options[key].is_none()) {
    return fallback;
  }
  try {
    return options[key].cast<T>();
  } catch (const py::cast_error&) {
    throwError(ErrorKind::InvalidOption, std::string("option '") + key + "' has the wrong type: " +
                                             py::str(options[key].get_type()).cast<std::string>() +
                                             ".");
  }
}

runtime::CompileOptions parseOptions(const py::dict& options) {
  runtime::CompileOptions parsed;
  const std::string chip = option<std::string>(options, "chip", "Mk2");
  POPSIM_CHECK(device::parseChipVersion(chip, &parsed.system.chip), ErrorKind::InvalidOption,
               "unknown IPU chip '", chip, "': use 'Mk1', 'Mk2' or 'Bow'.");
  parsed.system.numIpus = option<int64_t>(options, "num_ipus", 1);
  parsed.system.memoryPerIpu = option<uint64_t>(options, "memory_per_ipu", 0);
  parsed.deviceIterations = option<int64_t>(options, "device_iterations", 1);
  const std::string mode = option<std::string>(options, "output_mode", "All");
  if (mode == "All")
    parsed.output.mode = runtime::OutputMode::All;
  else if (mode == "Final")
    parsed.output.mode = runtime::OutputMode::Final;
  else if (mode == "EveryN")
    parsed.output.mode = runtime::OutputMode::EveryN;
  else if (mode == "Sum")
    parsed.output.mode = runtime::OutputMode::Sum;
  else
    throwError(ErrorKind::InvalidOption, "unknown output mode '" + mode + "'.");
  parsed.output.period = option<int64_t>(options, "output_return_period", 1);
  return parsed;
}

py::dict memoryReportDict(const device::MemoryReport& report) {
  py::dict result;
  result["chip"] = report.chip;
  py::list ipus;
  for (const device::IpuMemoryReport& ipu : report.ipus) {
    py::dict entry;
    entry["ipu"] = ipu.ipu;
    entry["capacity"] = ipu.capacity;
    entry["total"] = ipu.total();
    entry["always_live"] = ipu.alwaysLive();
    entry["not_always_live"] = ipu.notAlwaysLive();
    py::dict categories;
    for (const device::MemoryCategory& category : ipu.categories) {
      py::dict item;
      item["bytes"] = category.bytes;
      item["always_live"] = category.alwaysLive;
      categories[py::str(category.name)] = item;
    }
    entry["categories"] = categories;
    py::list tensors;
    for (const device::TensorMemory& tensor : ipu.largestTensors) {
      py::dict item;
      item["description"] = tensor.description;
      item["type"] = tensor.type;
      item["category"] = tensor.category;
      item["bytes"] = tensor.bytes;
      tensors.append(item);
    }
    entry["largest_tensors"] = tensors;
    ipus.append(entry);
  }
  result["ipus"] = ipus;
  return result;
}

py::list typesList(const std::vector<ir::TensorType>& types) {
  py::list result;
  for (const ir::TensorType& type : types) {
    result.append(py::make_tuple(ir::dtypeName(type.dtype), type.shape));
  }
  return result;
}

std::vector<at::Tensor> run(Executable& executable, const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> contiguous;
  std::vector<runtime::TensorView> inputViews;
  for (size_t i = 0; i < inputs.size(); ++i) {
    contiguous.push_back(inputs[i].contiguous());
    inputViews.push_back(viewOf(contiguous.back(), "input " + std::to_string(i)));
  }
  std::vector<at::Tensor> outputs;
  std::vector<runtime::TensorView> outputViews;
  for (const ir::TensorType& type : executable.outputHostTypes()) {
    outputs.push_back(emptyTensor(type));
    outputViews.push_back(viewOf(outputs.back(), "output"));
  }
  py::gil_scoped_release release;
  executable.run(inputViews, outputViews);
  return outputs;
}

} // namespace

void bindRuntime(py::module_& module) {
  py::class_<Executable, std::shared_ptr<Executable>>(module, "Executable",
                                                      "A model compiled for simulated IPUs.")
      .def("run", &run, py::arg("inputs"), "Runs one call: deviceIterations iterations.")
      .def("write_weights",
           [](Executable& executable, const std::map<std::string, at::Tensor>& weights) {
             for (const ir::Value* weight : executable.weights()) {
               auto it = weights.find(weight->name());
               POPSIM_CHECK(it != weights.end(), ErrorKind::InvalidInput,
                            "the model has no "
                            "parameter or buffer named '",
                            weight->name(), "' to copy to the device.");
               const at::Tensor tensor = it->second.detach().contiguous();
               executable.writeWeight(weight->name(),
                                      viewOf(tensor, "weight '" + weight->name() + "'"));
             }
           })
      .def("read_weights",
           [](const Executable& executable) {
             std::map<std::string, at::Tensor> weights;
             for (const ir::Value* weight : executable.weights()) {
               at::Tensor tensor = emptyTensor(weight->type());
               executable.readWeight(weight->name(), viewOf(tensor, "weight"));
               weights.emplace(weight->name(), tensor);
             }
             return weights;
           })
      .def("weight_names",
           [](const Executable& executable) {
             std::vector<std::string> names;
             for (const ir::Value* weight : executable.weights())
               names.push_back(weight->name());
             return names;
           })
      .def("memory_report",
           [](const Executable& executable) { return memoryReportDict(executable.memoryReport()); })
      .def("program",
           [](const Executable& executable) {
             py::list steps;
             for (const runtime::ProgramStep& step : executable.program()) {
               py::dict entry;
               entry["op"] = step.op;
               entry["location"] = step.location;
               entry["implementation"] = step.implementation;
               entry["ipu"] = step.ipu;
               entry["cycles"] = step.cycles;
               steps.append(entry);
             }
             return steps;
           })
      .def("input_types", [](const Executable& e) { return typesList(e.inputHostTypes()); })
      .def("output_types", [](const Executable& e) { return typesList(e.outputHostTypes()); })
      .def(
          "graph_text",
          [](const Executable& e, bool locations) {
            return ir::printGraph(e.graph(), {locations, false});
          },
          py::arg("locations") = true, "The optimised IR that runs, as text.")
      .def_property_readonly("last_run_cycles", &Executable::lastRunCycles)
      .def_property_readonly("compute_cycles_per_iteration", &Executable::computeCyclesPerIteration)
      .def_property_readonly("clock_hz",
                             [](const Executable& e) { return e.options().system.spec().clockHz; });
  module.def(
      "compile",
      [](const std::shared_ptr<ir::Graph>& graph, const py::dict& options) {
        POPSIM_CHECK(graph != nullptr, ErrorKind::InvalidInput,
                     "compile() needs a graph, got None.");
        const runtime::CompileOptions parsed = parseOptions(options);
        py::gil_scoped_release release;
        return std::shared_ptr<Executable>(Executable::compile(*graph, parsed));
      },
      py::arg("graph"), py::arg("options"),
      "Optimises, plans memory for and builds kernels of a graph (OutOfMemoryError if it does not "
      "fit).");
}

} // namespace popsim::python
