#include "common/check.h"
#include "frontend/dtype_conversion.h"
#include "frontend/host_call.h"
#include "frontend/tensor_conversion.h"
#include "ir/printer.h"
#include "ir/state_names.h"
#include "kernels/host_callbacks.h"
#include "profile/call_trace.h"
#include "profile/records_json.h"
#include "python/bindings.h"
#include "python/json_objects.h"
#include "runtime/executable.h"
#include "runtime/hyperparameters.h"

#include <ATen/ATen.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace popsim::python {
namespace {

using frontend::emptyTensor;
using frontend::metaTensor;
using frontend::tensorOver;
using frontend::typeOf;
using frontend::viewOf;

using runtime::Executable;

using profile::PipelineInfo;

// A record's to_dict(): the JSON form profiles write (profile/records_json.h).
template <typename Record> py::object recordDict(const Record& record) {
  return toPython(profile::toJson(record));
}

// The typed records crossing from C++: each a read-only class with a
// to_dict() giving the JSON-ready form profiles and the public API use.
void bindRecords(py::module_& module) {
  py::class_<memory::MemoryCategory>(module, "MemoryCategory", "Bytes of one memory category.")
      .def_readonly("name", &memory::MemoryCategory::name)
      .def_readonly("bytes", &memory::MemoryCategory::bytes)
      .def_readonly("always_live", &memory::MemoryCategory::alwaysLive);
  py::class_<memory::TensorMemory>(module, "TensorMemory", "One of an IPU's largest tensors.")
      .def_readonly("description", &memory::TensorMemory::description)
      .def_readonly("type", &memory::TensorMemory::type)
      .def_readonly("category", &memory::TensorMemory::category)
      .def_readonly("bytes", &memory::TensorMemory::bytes);
  py::class_<memory::IpuMemoryReport>(module, "IpuMemoryReport", "One simulated IPU's memory.")
      .def_readonly("ipu", &memory::IpuMemoryReport::ipu)
      .def_readonly("capacity", &memory::IpuMemoryReport::capacity)
      .def_readonly("categories", &memory::IpuMemoryReport::categories)
      .def_readonly("streaming_memory", &memory::IpuMemoryReport::streamingMemory)
      .def_readonly("largest_tensors", &memory::IpuMemoryReport::largestTensors)
      .def_readonly("temporary_budget", &memory::IpuMemoryReport::temporaryBudget)
      .def_readonly("io_tiles", &memory::IpuMemoryReport::ioTiles)
      .def_readonly("io_tile_bytes", &memory::IpuMemoryReport::ioTileBytes)
      .def_readonly("io_tile_capacity", &memory::IpuMemoryReport::ioTileCapacity)
      .def_property_readonly("total", &memory::IpuMemoryReport::total)
      .def_property_readonly("always_live", &memory::IpuMemoryReport::alwaysLive)
      .def_property_readonly("not_always_live", &memory::IpuMemoryReport::notAlwaysLive)
      .def_property_readonly("off_chip", &memory::IpuMemoryReport::offChip)
      .def_property_readonly("fits", &memory::IpuMemoryReport::fits)
      .def("to_dict", &recordDict<memory::IpuMemoryReport>);
  py::class_<memory::MemoryReport>(module, "MemoryReport", "Each simulated IPU's memory.")
      .def_readonly("chip", &memory::MemoryReport::chip)
      .def_readonly("ipus", &memory::MemoryReport::ipus)
      .def("to_dict", &recordDict<memory::MemoryReport>);
  py::class_<runtime::ProgramStep>(module, "ProgramStep",
                                   "An op of the program: its kernel, task, IPU and cycles.")
      .def_readonly("op", &runtime::ProgramStep::op)
      .def_readonly("name", &runtime::ProgramStep::name)
      .def_readonly("location", &runtime::ProgramStep::location)
      .def_readonly("implementation", &runtime::ProgramStep::implementation)
      .def_readonly("task", &runtime::ProgramStep::task)
      .def_readonly("ipu", &runtime::ProgramStep::ipu)
      .def_readonly("cycles", &runtime::ProgramStep::cycles)
      .def_readonly("temporary_bytes", &runtime::ProgramStep::temporaryBytes)
      .def_readonly("passes", &runtime::ProgramStep::passes)
      .def_readonly("unbounded_temporary_bytes", &runtime::ProgramStep::unboundedTemporaryBytes)
      .def_readonly("sync_cycles", &runtime::ProgramStep::syncCycles)
      .def_readonly("exchange_cycles", &runtime::ProgramStep::exchangeCycles)
      .def_readonly("compute_cycles", &runtime::ProgramStep::computeCycles)
      .def_readonly("collective", &runtime::ProgramStep::collective)
      .def_readonly("recomputed", &runtime::ProgramStep::recomputed)
      .def("to_dict", &recordDict<runtime::ProgramStep>);
  py::class_<PipelineInfo>(module, "PipelineInfo", "The program's stages, IPUs and schedule.")
      .def_readonly("stages", &PipelineInfo::stages)
      .def_readonly("ipus", &PipelineInfo::ipus)
      .def_readonly("pipeline_stages", &PipelineInfo::pipelineStages)
      .def_readonly("schedule", &PipelineInfo::schedule)
      .def_readonly("cycles_per_step", &PipelineInfo::cyclesPerStep)
      .def_readonly("prefetch_depth", &PipelineInfo::prefetchDepth)
      .def_readonly("inputs_prepared_ahead", &PipelineInfo::inputsPreparedAhead)
      .def_readonly("io_tiles", &PipelineInfo::ioTiles)
      .def_readonly("replicas_per_host_thread", &PipelineInfo::replicasPerHostThread)
      .def_readonly("host_exchanges_stall_every_ipu", &PipelineInfo::hostExchangesStallEveryIpu)
      .def("to_dict", &recordDict<PipelineInfo>);
}

std::vector<at::Tensor> run(Executable& executable, const std::vector<at::Tensor>& inputs) {
  frontend::HostCall call =
      frontend::prepareHostCall(executable.costOnly(), executable.outputHostTypes(), inputs);
  py::gil_scoped_release release;
  executable.run(call.inputViews, call.outputViews);
  return std::move(call.outputs);
}

// Registers `function(inputs, outputs)` as the host_call op `id`'s function:
// it gets lists of tensors over the op's buffers and fills the outputs. A
// Python exception fails the run with an ExecutionError naming the op.
void registerHostFunction(const std::string& id, py::function function) {
  auto held = std::make_shared<PythonFunction>();
  held->function = std::move(function);
  kernels::registerHostFunction(id, [held, id](const std::vector<kernels::HostTensor>& inputs,
                                               const std::vector<kernels::HostTensor>& outputs) {
    py::gil_scoped_acquire gil;
    py::list in;
    py::list out;
    for (const kernels::HostTensor& tensor : inputs)
      in.append(py::cast(tensorOver(tensor.data, tensor.type)));
    for (const kernels::HostTensor& tensor : outputs)
      out.append(py::cast(tensorOver(tensor.data, tensor.type)));
    try {
      held->function(in, out);
    } catch (py::error_already_set& error) {
      throwError(ErrorKind::Execution,
                 "The CPU op '" + id + "' failed on the host: " + error.what());
    }
  });
}

} // namespace

py::list typesList(const std::vector<ir::TensorType>& types) {
  py::list result;
  for (const ir::TensorType& type : types) {
    result.append(py::make_tuple(ir::dtypeName(type.dtype), type.shape));
  }
  return result;
}

void bindRuntime(py::module_& module) {
  bindRecords(module);
  module.def("register_host_function", &registerHostFunction, py::arg("id"), py::arg("function"),
             "Registers function(inputs, outputs) as what the CPU op `id` runs on the host.");
  module.def("clear_host_functions", &kernels::clearHostFunctions,
             "Forgets every CPU op's function (at exit, while Python objects can still die).");
  py::class_<Executable, std::shared_ptr<Executable>>(module, "Executable",
                                                      "A model compiled for simulated IPUs.")
      .def("run", &run, py::arg("inputs"), "Runs one call: deviceIterations iterations.")
      .def(
          "serialize_program",
          [](const Executable& executable) { return py::bytes(executable.serializeProgram()); },
          "The optimised program as bytes, for load_program (versioned and checksummed).")
      .def(
          "write_variables",
          [](Executable& executable, const std::map<std::string, at::Tensor>& values) {
            for (const auto& [name, value] : values) {
              const at::Tensor tensor = value.detach().contiguous();
              executable.writeVariable(name, viewOf(tensor, "'" + name + "'", true));
            }
          },
          py::arg("values"), "Copies host tensors into device weights or state, by name.")
      .def(
          "read_variables",
          [](const Executable& executable, const std::vector<std::string>& names) {
            std::map<std::string, at::Tensor> values;
            for (const std::string& name : names) {
              const ir::Value* variable = executable.graph().findWeight(name);
              if (variable == nullptr) variable = executable.graph().findState(name);
              POPSIM_CHECK(variable != nullptr, ErrorKind::InvalidInput,
                           "the compiled model has no weight or state '", name, "'.");
              if (executable.costOnly()) { // the device holds no values
                values.emplace(name, metaTensor(variable->type()));
                continue;
              }
              at::Tensor tensor = emptyTensor(variable->type());
              executable.readVariable(name, viewOf(tensor, "'" + name + "'", true));
              values.emplace(name, tensor);
            }
            return values;
          },
          py::arg("names"), "Copies device weights or state to new host tensors, by name.")
      .def("weight_names",
           [](const Executable& executable) {
             std::vector<std::string> names;
             for (const ir::Value* weight : executable.weights())
               names.push_back(weight->name());
             return names;
           })
      .def("state_names",
           [](const Executable& executable) {
             std::vector<std::string> names;
             for (const ir::Value* state : executable.states()) {
               // Replicas on other IPUs follow their state (writeVariable).
               if (!ir::isStateReplica(state->name())) names.push_back(state->name());
             }
             return names;
           })
      .def(
          "write_hyperparameters",
          [](Executable& executable, size_t group, const std::map<std::string, double>& values) {
            runtime::writeHyperparameters(executable, group, values);
          },
          py::arg("group"), py::arg("values"),
          "Writes the numeric hyper-parameters of an optimizer parameter group.")
      .def("memory_report", &Executable::memoryReport, py::return_value_policy::copy)
      .def("program", &Executable::program, py::return_value_policy::copy)
      .def("input_types", [](const Executable& e) { return typesList(e.inputHostTypes()); })
      .def("output_types", [](const Executable& e) { return typesList(e.outputHostTypes()); })
      .def(
          "graph_text",
          [](const Executable& e, bool locations) {
            return ir::printGraph(e.graph(), {locations, false});
          },
          py::arg("locations") = true, "The optimised IR that runs, as text.")
      .def_property_readonly("last_run_cycles", &Executable::lastRunCycles)
      .def_property_readonly("cost_only", &Executable::costOnly)
      .def_property_readonly("compute_cycles_per_iteration", &Executable::computeCyclesPerIteration)
      .def_property_readonly("clock_hz",
                             [](const Executable& e) { return e.options().system.spec().clockHz; });
  module.def(
      "compile",
      [](const std::shared_ptr<ir::Graph>& graph, const runtime::CompileOptions& options) {
        POPSIM_CHECK(graph != nullptr, ErrorKind::InvalidInput,
                     "compile() needs a graph, got None.");
        py::gil_scoped_release release;
        return std::shared_ptr<Executable>(Executable::compile(*graph, options));
      },
      py::arg("graph"), py::arg("options"),
      "Optimises, plans memory for and builds kernels of a graph (OutOfMemoryError if it does not "
      "fit).");
}

} // namespace popsim::python
