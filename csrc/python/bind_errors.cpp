#include "common/error.h"
#include "python/bindings.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace py = pybind11;

namespace popsim::python {
namespace {

// The Python class for an error kind, from popsim/errors.py.
PyObject* errorClass(ErrorKind kind) {
  const char* name = "InternalError";
  switch (kind) {
  case ErrorKind::Internal: name = "InternalError"; break;
  case ErrorKind::Unsupported: name = "UnsupportedOperationError"; break;
  case ErrorKind::OutOfMemory: name = "OutOfMemoryError"; break;
  case ErrorKind::InvalidInput: name = "InputError"; break;
  case ErrorKind::InvalidOption: name = "OptionError"; break;
  case ErrorKind::Compilation: name = "CompilationError"; break;
  case ErrorKind::Execution: name = "ExecutionError"; break;
  case ErrorKind::InvalidFile: name = "ExecutableFileError"; break;
  }
  // Looked up on each error (errors are rare) so module reloads stay correct.
  py::object cls = py::module_::import("popsim.errors").attr(name);
  return cls.release().ptr();
}

void raise(ErrorKind kind, const char* message, const ErrorSite& site = {}) {
  PyObject* cls = errorClass(kind);
  // The error's site as attributes (popsim.Error declares them, None by
  // default), beside the message that says the same.
  py::object error = py::reinterpret_borrow<py::object>(cls)(message);
  const auto optional = [](int64_t value) {
    return value < 0 ? py::object(py::none()) : py::object(py::int_(value));
  };
  const auto text = [](const std::string& value) {
    return value.empty() ? py::object(py::none()) : py::object(py::str(value));
  };
  error.attr("node") = text(site.node);
  error.attr("op") = text(site.op);
  error.attr("source") = text(site.source);
  error.attr("block") = text(site.block);
  error.attr("task") = text(site.task);
  error.attr("ipu") = optional(site.ipu);
  error.attr("micro_batch") = optional(site.microBatch);
  error.attr("replica") = optional(site.replica);
  error.attr("option") = text(site.option);
  if (kind == ErrorKind::OutOfMemory) {
    error.attr("category") = text(site.category);
    error.attr("required_bytes") = site.requiredBytes;
    error.attr("capacity_bytes") = site.capacityBytes;
    py::list tensors;
    for (const TensorMemory& tensor : site.largestTensors) {
      py::dict entry;
      entry["description"] = tensor.description;
      entry["type"] = tensor.type;
      entry["category"] = tensor.category;
      entry["bytes"] = tensor.bytes;
      tensors.append(entry);
    }
    error.attr("largest_tensors") = tensors;
  }
  PyErr_SetObject(cls, error.ptr());
  Py_DECREF(cls);
}

} // namespace

void bindErrors(py::module_& module) {
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) {
        std::rethrow_exception(pointer);
      }
    } catch (const CoreError& error) {
      raise(error.kind(), error.what(), error.site());
    } catch (const dnnl::error& error) {
      raise(ErrorKind::Internal, (std::string("oneDNN failed: ") + error.what() +
                                  ". Please report this as a popsim bug.")
                                     .c_str());
    }
  });
  module.def("_raise_for_test", [](const std::string& kind, const std::string& message) {
    static const std::pair<const char*, ErrorKind> kinds[] = {
        {"Internal", ErrorKind::Internal},           {"Unsupported", ErrorKind::Unsupported},
        {"OutOfMemory", ErrorKind::OutOfMemory},     {"InvalidInput", ErrorKind::InvalidInput},
        {"InvalidOption", ErrorKind::InvalidOption}, {"Compilation", ErrorKind::Compilation},
        {"Execution", ErrorKind::Execution},         {"InvalidFile", ErrorKind::InvalidFile}};
    for (const auto& [name, value] : kinds) {
      if (kind == name) {
        throw CoreError(value, message);
      }
    }
    throw CoreError(ErrorKind::Internal, "unknown error kind " + kind);
  });
}

} // namespace popsim::python
