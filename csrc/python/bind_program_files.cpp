// Program files and the executable cache (host/program_file.h,
// host/executable_cache.h): the one reader, writer and cache under Python's
// compileAndExport, loadExecutable, popsim.load and enableExecutableCaching.

#include "common/check.h"
#include "host/executable_cache.h"
#include "host/program_file.h"
#include "host/program_key.h"
#include "python/bindings.h"
#include "python/json_objects.h"

#include <filesystem>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace popsim::python {
namespace {

// JSON values cross as the objects json.loads gives (json_objects.h's
// conversion) and json.dumps takes.
py::object toPython(const nlohmann::json& value) { return python::toPython(profile::Json(value)); }

nlohmann::json fromPython(const py::object& value) {
  return nlohmann::json::parse(
      py::module_::import("json").attr("dumps")(value).cast<std::string>());
}

// A file that cannot be opened or written is Python's OSError (with its
// errno, so FileNotFoundError and the like), as open() would raise.
template <typename Function> auto withOsErrors(Function&& function) {
  try {
    return function();
  } catch (const std::filesystem::filesystem_error& error) {
    py::gil_scoped_acquire acquire;
    PyErr_SetObject(PyExc_OSError, py::make_tuple(error.code().value(), error.what()).ptr());
    throw py::error_already_set();
  }
}

const char* originName(host::ProgramOrigin origin) {
  switch (origin) {
  case host::ProgramOrigin::Compiled: return "compiled";
  case host::ProgramOrigin::Cache: return "cache";
  }
  return "?";
}

} // namespace

void bindProgramFiles(py::module_& module) {
  py::class_<host::ProgramKey>(module, "ProgramKey",
                               "What a program was compiled from: the graph's SHA-256, the "
                               "compile options and the popsim build.")
      .def(py::init([](std::string graph, const py::object& options, std::string build) {
             return host::ProgramKey{std::move(graph), fromPython(options), std::move(build)};
           }),
           py::arg("graph"), py::arg("options"), py::arg("build"))
      .def_readonly("graph", &host::ProgramKey::graph)
      .def_property_readonly("options",
                             [](const host::ProgramKey& key) { return toPython(key.options); })
      .def_readonly("build", &host::ProgramKey::build)
      .def_property_readonly("digest", &host::ProgramKey::digest);
  module.def("program_key", &host::programKey, py::arg("graph"), py::arg("options"),
             "The key of the program `graph` compiled with `options` gives.");
  module.def("build_id", &host::buildId,
             "popsim's version and a hash of its library: the build a program file names.");
  module.def("key_mismatch", &host::keyMismatch, py::arg("stored"), py::arg("current"),
             "Why a stored program is not the one `current` asks for (naming what differs), or "
             "None.");

  py::class_<host::ProgramFile>(module, "ProgramFile", "A program file's contents.")
      .def_readonly("key", &host::ProgramFile::key)
      .def_property_readonly("program",
                             [](const host::ProgramFile& file) { return py::bytes(file.program); })
      .def_readonly("training", &host::ProgramFile::training)
      .def_property_readonly("call",
                             [](const host::ProgramFile& file) -> py::object {
                               if (!file.call.has_value()) return py::none();
                               return toPython(*file.call);
                             })
      .def_property_readonly("model_section", [](const host::ProgramFile& file) {
        return py::bytes(file.modelSection);
      });
  module.def(
      "write_program_file",
      [](const std::string& path, const host::ProgramKey& key, const py::bytes& program,
         std::optional<bool> training, const py::object& call, const py::bytes& modelSection) {
        host::ProgramFile file{key, program, training, std::nullopt, modelSection};
        if (!call.is_none()) file.call = fromPython(call);
        py::gil_scoped_release release;
        return withOsErrors([&] { return host::exportProgramFile(path, file); });
      },
      py::arg("path"), py::arg("key"), py::arg("program"), py::arg("training") = py::none(),
      py::arg("call") = py::none(), py::arg("model_section") = py::bytes(),
      "Writes a program file atomically, readable by its owner only (OSError if it cannot); "
      "a directory gets one file in it, named by the key's digest. Returns the path written.");
  module.def(
      "read_program_file",
      [](const std::string& path, bool privateEntry) {
        py::gil_scoped_release release;
        return withOsErrors([&] {
          return host::readProgramFile(path, privateEntry ? host::FileAccess::Private
                                                          : host::FileAccess::Any);
        });
      },
      py::arg("path"), py::arg("private") = false,
      "A program file's contents; ExecutableFileError if it is not a complete popsim program "
      "file (private: a cache entry, which must be this user's own regular file), OSError if "
      "it cannot be opened. Nothing in the file is unpickled.");
  module.def(
      "executable_for",
      [](const std::shared_ptr<ir::Graph>& graph, const runtime::CompileOptions& options,
         const host::ExecutableCache& cache) {
        POPSIM_CHECK(graph != nullptr, ErrorKind::InvalidInput,
                     "executable_for() needs a graph, got None.");
        host::ObtainedExecutable obtained;
        {
          py::gil_scoped_release release;
          obtained = host::executableFor(*graph, options, cache);
        }
        return py::make_tuple(obtained.executable, originName(obtained.origin), obtained.warnings);
      },
      py::arg("graph"), py::arg("options"), py::arg("cache"),
      "(executable, origin, warnings): the program of `graph` with `options`, from the "
      "executable cache ('cache') or compiled ('compiled', and cached when caching is on), and "
      "what the cache did not use, for the caller to warn about.");
  module.def(
      "exported_executable",
      [](const std::string& path, const host::ProgramFile& file,
         const std::shared_ptr<ir::Graph>& graph, const runtime::CompileOptions& options) {
        POPSIM_CHECK(graph != nullptr, ErrorKind::InvalidInput,
                     "exported_executable() needs a graph, got None.");
        py::gil_scoped_release release;
        return host::exportedExecutable(path, file, *graph, options);
      },
      py::arg("path"), py::arg("file"), py::arg("graph"), py::arg("options"),
      "loadExecutable's program: the file's, which must be the program `graph` and `options` "
      "give (ExecutableFileError naming what differs).");
}

} // namespace popsim::python
