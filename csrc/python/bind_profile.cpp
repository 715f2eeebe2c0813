#include "common/safe_files.h"
#include "common/strings.h"
#include "profile/call_trace.h"
#include "profile/chrome_trace.h"
#include "profile/pipeline_stages.h"
#include "profile/profile_analysis.h"
#include "profile/profile_summary.h"
#include "profile/profile_writer.h"
#include "profile/records_json.h"
#include "profile/report_style.h"
#include "profile/sizing_report.h"
#include "profile/text_format.h"
#include "python/bindings.h"
#include "python/json_objects.h"
#include "runtime/executable.h"

#include <pybind11/stl.h>

#include <filesystem>
#include <optional>

namespace py = pybind11;

namespace popsim::python {
namespace {

using profile::Json;
using Assignment = std::vector<std::tuple<std::string, int64_t, int64_t>>;

profile::SizingJob sizingJob(const py::dict& job) {
  profile::SizingJob result;
  result.model = job["model"].cast<std::string>();
  result.replicas = job["replicas"].cast<int64_t>();
  result.processes = job["processes"].cast<int64_t>();
  result.stepsPerCall = job["steps_per_call"].cast<int64_t>();
  result.microBatchesPerStep = job["micro_batches_per_step"].cast<int64_t>();
  result.itemsPerCall = job["items_per_call"].cast<int64_t>();
  return result;
}

// A profile's summary from its files' text, with files that are JSON but not
// a popsim profile's (an entry missing or of another type) named as such.
std::string profileSummary(const std::string& directory, const std::optional<std::string>& trace,
                           const std::optional<std::string>& memory) {
  try {
    return popsim::join(profile::summaryOfFiles(directory, trace, memory), "\n");
  } catch (const Json::exception& error) {
    throw py::value_error("'" + directory +
                          "' holds trace.json or memory.json files that are not a popsim "
                          "profile's (" +
                          error.what() +
                          "). Write them again: enable profiling and run the model.");
  }
}

py::tuple latencyTuple(const Latency& latency) {
  return py::make_tuple(latency.min, latency.max, latency.mean);
}

// A call's trace and its statistics (popsim/execution_trace.h), as
// popsim.ExecutionTrace wraps them.
void bindExecutionTrace(py::module_& module) {
  py::class_<TraceEvent>(module, "TraceEvent", "One part of a task run of a call.")
      .def_readonly("ipu", &TraceEvent::ipu)
      .def_readonly("task", &TraceEvent::task)
      .def_readonly("kind", &TraceEvent::kind)
      .def_readonly("step", &TraceEvent::step)
      .def_readonly("micro_batch", &TraceEvent::microBatch)
      .def_readonly("cycle", &TraceEvent::cycle)
      .def_readonly("start", &TraceEvent::start)
      .def_readonly("end", &TraceEvent::end)
      .def_readonly("from_ipus", &TraceEvent::fromIpus)
      .def_readonly("io_tiles", &TraceEvent::ioTiles)
      .def_readonly("output", &TraceEvent::output)
      .def("to_dict", [](const TraceEvent& event) { return toPython(profile::toJson(event)); });
  py::class_<PerfCounters>(module, "PerfCounters",
                           "PopTorch's performance counters of a call, in seconds.")
      .def_readonly("input", &PerfCounters::input)
      .def_readonly("input_complete", &PerfCounters::inputComplete)
      .def_readonly("output", &PerfCounters::output)
      .def_readonly("output_complete", &PerfCounters::outputComplete)
      .def("host_ipu_latency",
           [](const PerfCounters& c) { return latencyTuple(c.hostIpuLatency()); })
      .def("compute_latency",
           [](const PerfCounters& c) { return latencyTuple(c.computeLatency()); })
      .def("ipu_host_latency",
           [](const PerfCounters& c) { return latencyTuple(c.ipuHostLatency()); })
      .def("round_trip_latency",
           [](const PerfCounters& c) { return latencyTuple(c.roundTripLatency()); });
  py::class_<ExecutionTrace>(module, "ExecutionTrace", "What each simulated IPU did during a call.")
      .def_readonly("events", &ExecutionTrace::events)
      .def_readonly("total_cycles", &ExecutionTrace::totalCycles)
      .def_readonly("clock_hz", &ExecutionTrace::clockHz)
      .def_readonly("pipeline", &ExecutionTrace::pipeline)
      .def_property_readonly("num_ipus", &ExecutionTrace::numIpus)
      .def_property_readonly("seconds", &ExecutionTrace::seconds)
      .def(
          "occupies_ipu",
          [](const ExecutionTrace& trace, const std::string& kind, bool ioTiles) {
            return trace.occupiesIpu(kind, ioTiles);
          },
          py::arg("kind"), py::arg("io_tiles"))
      .def("busy_cycles", &ExecutionTrace::busyCycles, py::arg("ipu"))
      .def("utilisation", &ExecutionTrace::utilisation, py::arg("ipu"))
      .def("micro_batch_cycles", &ExecutionTrace::microBatchCycles)
      .def("host_link_cycles", &ExecutionTrace::hostLinkCycles)
      .def("render", &ExecutionTrace::render)
      .def("perf_counters", &ExecutionTrace::perfCounters, py::arg("inputs"),
           py::arg("replicas") = 1);
  module.def(
      "execution_trace", [](const runtime::Executable& e) { return profile::callTraceOf(e); },
      py::arg("executable"), "The executable's last call (no events before the first).");
  module.def(
      "execution_trace_from_document",
      [](const std::string& text) {
        try {
          return profile::callTraceFromDocument(Json::parse(text));
        } catch (const Json::exception& error) {
          throw py::value_error(std::string("the trace is not a popsim profile's trace.json (") +
                                error.what() +
                                "). Write it again: enable profiling and run the model.");
        }
      },
      py::arg("trace_json"), "The call a profile's trace.json records.");
  module.def(
      "execution_trace_from_records",
      [](const std::string& events, uint64_t totalCycles, double clockHz,
         const std::string& pipeline) {
        try {
          ExecutionTrace trace;
          for (const Json& event : Json::parse(events))
            trace.events.push_back(profile::traceEventFromJson(event));
          trace.totalCycles = totalCycles;
          trace.clockHz = clockHz;
          trace.pipeline = profile::pipelineFromJson(Json::parse(pipeline));
          return trace;
        } catch (const Json::exception& error) {
          throw py::value_error(std::string("an execution trace's events are dicts as "
                                            "ExecutionTrace.events holds them (") +
                                error.what() + ").");
        }
      },
      py::arg("events_json"), py::arg("total_cycles"), py::arg("clock_hz"),
      py::arg("pipeline_json"),
      "A trace from its events' and pipeline's dicts (ExecutionTrace's constructor), as JSON.");
}

} // namespace

void bindProfile(py::module_& module) {
  bindExecutionTrace(module);
  // common/safe_files.h, for the files Python writes (exports, cache entries, logDir).
  module.def(
      "write_file_atomically",
      [](const std::string& path, const py::bytes& data, unsigned mode) {
        std::string bytes = data; // copied while holding the GIL
        py::gil_scoped_release release;
        try {
          writeFileAtomically(path, bytes, mode);
        } catch (const std::filesystem::filesystem_error& error) {
          py::gil_scoped_acquire acquire;
          PyErr_SetObject(PyExc_OSError, py::make_tuple(error.code().value(), error.what()).ptr());
          throw py::error_already_set();
        }
      },
      py::arg("path"), py::arg("data"), py::arg("mode") = 0644,
      "Writes `data` to `path` through an exclusively created temporary file renamed over it "
      "(a planted symlink is never followed; readers never see half a file), with `mode`.");
  module.def("shared_directory_problem", &sharedDirectoryProblem, py::arg("directory"),
             "Why popsim must not write into `directory` (another user's, or writable by others "
             "without the sticky bit), or None.");
  py::class_<profile::ProfileWriter>(module, "ProfileWriter",
                                     "Writes one model's profile files (csrc/profile).")
      .def(py::init([](const std::string& root, const std::string& kind,
                       const std::optional<std::string>& modelName) {
             try {
               return std::make_unique<profile::ProfileWriter>(root, kind, modelName.value_or(""));
             } catch (const std::filesystem::filesystem_error& error) {
               PyErr_SetString(PyExc_OSError, error.what());
               throw py::error_already_set();
             }
           }),
           py::arg("root"), py::arg("kind"), py::arg("model_name") = py::none())
      .def_property_readonly("root", &profile::ProfileWriter::root)
      .def_property_readonly("directory", &profile::ProfileWriter::directory)
      .def(
          "after_compile",
          [](profile::ProfileWriter& writer, const runtime::Executable& executable,
             const std::string& model, const Assignment& stages, double compileSeconds,
             int64_t replicas) {
            writer.afterCompile(executable, model, profile::stageList(stages), compileSeconds,
                                replicas);
          },
          py::arg("executable"), py::arg("model"), py::arg("assigned_stages"),
          py::arg("compile_seconds"), py::arg("replicas"))
      .def("set_plan_section", &profile::ProfileWriter::setPlanSection, py::arg("html"))
      .def(
          "after_call",
          [](profile::ProfileWriter& writer, const runtime::Executable& executable,
             double wallSeconds, const std::optional<py::dict>& job) {
            writer.afterCall(executable, wallSeconds,
                             job ? std::optional(sizingJob(*job)) : std::nullopt);
          },
          py::arg("executable"), py::arg("wall_seconds"), py::arg("sizing_job"));
  module.def(
      "sizing_report",
      [](const runtime::Executable& executable, const Assignment& stages, const py::dict& job) {
        return toPython(profile::toJson(
            profile::sizingReport(executable, sizingJob(job), profile::stageList(stages))));
      },
      py::arg("executable"), py::arg("assigned_stages"), py::arg("job"),
      "The sizing report of the executable's last call, as SizingReport.to_dict() gives it.");
  module.def(
      "sizing_report_lines",
      [](const std::string& reportJson) {
        const profile::SizingReport report = profile::sizingReportFromJson(Json::parse(reportJson));
        py::dict lines;
        lines["overview"] = report.overviewLines();
        lines["memory"] = report.memoryLines();
        lines["time"] = report.timeLines();
        lines["advice"] = report.adviceLines();
        return lines;
      },
      py::arg("report_json"), "A sizing report's printout, by part, from its to_dict() as JSON.");
  module.def("profile_summary", &profileSummary, py::arg("directory"), py::arg("trace_json"),
             py::arg("memory_json"),
             "The text summary of a profile from the text of its trace.json and memory.json.");
  module.def(
      "stage_loads",
      [](const runtime::Executable& executable, const Assignment& stages) {
        py::list loads;
        const profile::CallTrace trace = profile::callTraceOf(executable);
        for (const profile::StageLoad& load :
             profile::stageLoads(trace, profile::stageList(stages))) {
          py::dict entry;
          entry["stage"] = load.stage;
          entry["ipu"] = load.ipu;
          entry["cycles"] = load.cycles;
          entry["host_cycles"] = load.hostCycles;
          entry["copy_cycles"] = load.copyCycles;
          // Whether the call's host exchanges held up every IPU (its sync pattern).
          entry["host_exchanges_stall_every_ipu"] = trace.pipeline.hostExchangesStallEveryIpu;
          loads.append(entry);
        }
        return loads;
      },
      py::arg("executable"), py::arg("assigned_stages"),
      "Each stage's median cycles per micro-batch in the last call, transfers included, "
      "of them its host transfers' and its inter-IPU copies', and whether the host transfers "
      "held up every IPU.");
  module.def(
      "sizing_time_parts",
      [] {
        std::vector<std::string> parts;
        for (size_t part = 0; part < profile::kTimeParts; ++part) {
          parts.emplace_back(profile::timePartName(part));
        }
        return parts;
      },
      "The parts of an IPU's time in a sizing report, in the report's order.");
  module.def(
      "replication_meta",
      [](const runtime::Executable& executable, int64_t replicas) {
        return toPython(
            profile::replicationMeta(executable, profile::callTraceOf(executable), replicas));
      },
      py::arg("executable"), py::arg("replicas"),
      "The replicas and, per IPU, the cycles the last call spent in collectives across them.");
  module.def("profile_style", [] {
    py::dict kinds, labels, categories;
    py::list transfers;
    for (const profile::KindStyle& style : profile::kindStyles()) {
      kinds[style.kind] = style.colour;
      labels[style.kind] = style.label;
      if (profile::isTransferKind(style.kind)) transfers.append(style.kind);
    }
    for (const auto& [name, colour] : profile::categoryColours())
      categories[name] = colour;
    py::dict style;
    style["kind_colours"] = kinds;
    style["kind_labels"] = labels;
    style["transfer_kinds"] = py::tuple(transfers);
    style["category_colours"] = categories;
    style["other_category_colour"] = profile::otherCategoryColour();
    return style;
  });
}

} // namespace popsim::python
