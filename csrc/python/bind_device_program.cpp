// The host runtime's device program (csrc/host/device_program.h) on torch
// tensors: the executor runs calls and moves variables through it, whether
// the program computes on one replica or several, or only costs.

#include "common/check.h"
#include "frontend/dtype_conversion.h"
#include "frontend/host_call.h"
#include "frontend/tensor_conversion.h"
#include "host/call_layout.h"
#include "host/device_program.h"
#include "host/optimizer_hyperparameters.h"
#include "python/bindings.h"

#include <ATen/ATen.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace popsim::python {
namespace {

using frontend::emptyTensor;
using frontend::metaTensor;
using frontend::tensorOver;
using frontend::viewOf;
using host::DeviceProgram;

// host::CrossProcess in Python: a subclass's gather(mine, all) and
// broadcast_from_first(value) get torch tensors over the host's buffers.
class PyCrossProcess : public host::CrossProcess {
public:
  void gather(const runtime::TensorView& mine, const runtime::TensorView& all) override {
    py::gil_scoped_acquire gil;
    PYBIND11_OVERRIDE_PURE(void, host::CrossProcess, gather, tensorOver(mine.data, mine.type()),
                           tensorOver(all.data, all.type()));
  }
  void broadcastFromFirst(const runtime::TensorView& value) override {
    py::gil_scoped_acquire gil;
    PYBIND11_OVERRIDE_PURE_NAME(void, host::CrossProcess, "broadcast_from_first",
                                broadcastFromFirst, tensorOver(value.data, value.type()));
  }
};

// The ReplicaGroup's sum across processes: `function(key, ipu, tensor,
// group)` sums the tensor in place (torch.distributed.all_reduce) across all
// processes (group None) or those of the job's replica group (size, stride,
// index) of a replica-grouped variable.
runtime::ReplicaGroup::CrossProcessSum sumAcrossProcesses(py::object function) {
  if (function.is_none()) return {};
  auto held = std::make_shared<PythonFunction>();
  held->function = std::move(function);
  return [held](const std::string& key, int64_t ipu, const runtime::ReplicaGroup::JobGroup* group,
                float* data, size_t count) {
    py::gil_scoped_acquire gil;
    try {
      py::object which = group == nullptr
                             ? py::object(py::none())
                             : py::object(py::make_tuple(group->size, group->stride, group->index));
      held->function(key, ipu,
                     tensorOver(data, {ir::DType::Float32, {static_cast<int64_t>(count)}}), which);
    } catch (py::error_already_set& error) {
      throwError(ErrorKind::Execution,
                 "summing the gradient of '" + key + "' across processes failed (" +
                     std::string(py::str(error.value())) +
                     "): another process of the job stopped or cannot be reached. Look at the "
                     "other processes' output; POPSIM_DISTRIBUTED_TIMEOUT (seconds) bounds how "
                     "long a process waits for the others.");
    }
  };
}

std::vector<at::Tensor> run(DeviceProgram& program, const std::vector<at::Tensor>& inputs) {
  frontend::HostCall call =
      frontend::prepareHostCall(program.costOnly(), program.outputTypes(), inputs);
  py::gil_scoped_release release;
  program.run(call.inputViews, call.outputViews);
  return std::move(call.outputs);
}

void writeVariables(DeviceProgram& program, const std::map<std::string, at::Tensor>& values) {
  std::map<std::string, at::Tensor> held; // alive while the views are
  std::map<std::string, runtime::TensorView> views;
  for (const auto& [name, value] : values) {
    // In the dtype the device holds it: shards are split in it, float16 running
    // statistics may be float32, uint8/int8/int16 buffers int32 (as the C++
    // API's copyWeightsToDevice converts them).
    held[name] =
        value.detach().to(frontend::toTorchDType(program.variableType(name).dtype)).contiguous();
    views[name] = viewOf(held[name], "'" + name + "'", true);
  }
  py::gil_scoped_release release; // (cross-process writes call back into Python)
  program.writeVariables(views);
}

std::map<std::string, at::Tensor> readVariables(DeviceProgram& program,
                                                const std::vector<std::string>& names) {
  std::map<std::string, at::Tensor> values;
  std::map<std::string, runtime::TensorView> views;
  for (const std::string& name : names) {
    const ir::TensorType type = program.variableType(name);
    if (program.costOnly()) { // the device holds no values
      values.emplace(name, metaTensor(type));
      continue;
    }
    at::Tensor tensor = emptyTensor(type);
    views[name] = viewOf(tensor, "'" + name + "'", true);
    values.emplace(name, tensor);
  }
  if (!views.empty()) {
    py::gil_scoped_release release;
    program.readVariables(views);
  }
  return values;
}

} // namespace

void bindDeviceProgram(py::module_& module) {
  py::class_<host::CallLayout>(module, "CallLayout",
                               "How a replicated call's batch is laid out (host/call_layout.h).")
      .def_readonly("steps", &host::CallLayout::steps)
      .def_readonly("input_part_of", &host::CallLayout::inputPartOf)
      .def_readonly("output_slots", &host::CallLayout::outputSlots);
  module.def("call_layout_of", &host::callLayoutOf, py::arg("options"), py::arg("training"),
             py::arg("replication"), py::arg("executable"));
  py::class_<host::CrossProcess, PyCrossProcess, std::shared_ptr<host::CrossProcess>>(
      module, "CrossProcess",
      "The other processes of a job: subclasses gather(mine, all) and broadcast_from_first(value).")
      .def(py::init<>())
      .def("gather", &host::CrossProcess::gather)
      .def("broadcast_from_first", &host::CrossProcess::broadcastFromFirst);
  module.def(
      "write_optimizer_hyperparameters",
      [](DeviceProgram& program, std::vector<std::map<std::string, double>> groups,
         double gradScale, double lossScaling) {
        host::writeOptimizerHyperparameters(program, std::move(groups), gradScale, lossScaling);
      },
      py::arg("program"), py::arg("groups"), py::arg("grad_scale"), py::arg("loss_scaling"),
      "Each group's hyper-parameters with the step's gradient scale, and the loss scaling "
      "(host/optimizer_hyperparameters.h).");
  py::class_<DeviceProgram, std::shared_ptr<DeviceProgram>>(
      module, "DeviceProgram",
      "A compiled program on its simulated device: one replica or several, computing or "
      "cost-only.")
      .def(py::init([](const std::shared_ptr<runtime::Executable>& executable,
                       const host::Replication& replication, const host::CallLayout& layout,
                       py::object crossProcessSum, py::object crossProcess) {
             // A Python subclass's methods live in its Python object: the
             // program keeps that object, not only its C++ part.
             std::shared_ptr<host::CrossProcess> across;
             if (!crossProcess.is_none()) {
               auto* raw = crossProcess.cast<host::CrossProcess*>();
               auto held = std::make_shared<PythonFunction>();
               held->function = std::move(crossProcess);
               across = std::shared_ptr<host::CrossProcess>(held, raw);
             }
             return std::shared_ptr<DeviceProgram>(host::makeDeviceProgram(
                 executable, replication, layout, sumAcrossProcesses(std::move(crossProcessSum)),
                 std::move(across)));
           }),
           py::arg("executable"), py::arg("replication"), py::arg("layout"),
           py::arg("cross_process_sum") = py::none(), py::arg("cross_process") = py::none())
      .def_property_readonly("first", &DeviceProgram::firstShared,
                             "Replica 0's executable, which reports and profiles read.")
      .def_property_readonly("cost_only", &DeviceProgram::costOnly)
      .def_property_readonly("replicas", &DeviceProgram::executables,
                             "The executables that run: one per local replica, or the cost-only "
                             "one.")
      .def("run", &run, py::arg("inputs"), "Runs one call of every local replica.")
      .def(
          "program", [](const DeviceProgram& program) { return program.first().program(); },
          "The program listing every replica runs: each op's kernel, task, IPU and cycles.")
      .def("input_types",
           [](const DeviceProgram& program) { return typesList(program.inputTypes()); })
      .def("output_types",
           [](const DeviceProgram& program) { return typesList(program.outputTypes()); })
      .def("shard_variables", &DeviceProgram::shardVariables, py::arg("whole_shapes"))
      .def("group_variables", &DeviceProgram::groupVariables, py::arg("job_groups"))
      .def("write_variables", &writeVariables, py::arg("values"),
           "Copies host tensors into the device's weights or state, by name, on every replica.")
      .def("read_variables", &readVariables, py::arg("names"),
           "Copies device weights or state to new host tensors, by name (meta tensors when "
           "cost-only).")
      .def("weight_names", &DeviceProgram::weightNames)
      .def("state_names", &DeviceProgram::stateNames)
      .def("write_hyperparameters", &DeviceProgram::writeHyperparameters, py::arg("group"),
           py::arg("values"))
      .def(
          "broadcast",
          [](DeviceProgram& program, const std::vector<std::string>& names) {
            py::gil_scoped_release release;
            program.broadcast(names);
          },
          py::arg("names"))
      .def(
          "draw_apart",
          [](DeviceProgram& program, int64_t process) {
            py::gil_scoped_release release;
            program.drawApart(process);
          },
          py::arg("process"));
}

} // namespace popsim::python
