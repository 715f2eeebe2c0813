#include "common/check.h"
#include "ir/binary_functions.h"
#include "ir/parser.h"
#include "ir/pointwise_functions.h"
#include "ir/printer.h"
#include "ir/serialization.h"
#include "python/bindings.h"
#include "tools/opt_driver.h"

#include <pybind11/stl.h>

#include <sstream>

namespace py = pybind11;

namespace popsim::python {
namespace {

py::dict describeTensor(const ir::Value& value) {
  py::dict entry;
  entry["name"] = value.name();
  entry["dtype"] = ir::dtypeName(value.type().dtype);
  entry["shape"] = value.type().shape;
  return entry;
}

} // namespace

void bindIr(py::module_& module) {
  module.def(
      "popsim_opt",
      [](const std::vector<std::string>& arguments, const std::string& text) {
        std::ostringstream out;
        std::ostringstream err;
        const int status = tools::runOptOnText(arguments, text, out, err);
        return py::make_tuple(status, out.str(), err.str());
      },
      py::arg("arguments"), py::arg("text"),
      "popsim-opt on IR text (tools/opt_driver.h): (exit status, output, errors).");
  module.def(
      "pointwise_functions",
      [] {
        py::dict functions;
        for (const ir::PointwiseFunction& function : ir::pointwiseFunctions()) {
          py::list parameters;
          for (std::string_view name : function.parameters)
            parameters.append(std::string(name));
          functions[py::str(std::string(function.name))] = parameters;
        }
        return functions;
      },
      "The functions of the pointwise op, with their parameter names.");
  module.def(
      "binary_functions",
      [] {
        py::list names;
        for (const ir::BinaryFunction& function : ir::binaryFunctions())
          names.append(std::string(function.name));
        return names;
      },
      "The functions of the binary_pointwise op.");
  py::class_<ir::Graph, std::shared_ptr<ir::Graph>>(module, "Graph",
                                                    "A popsim IR graph (see ARCHITECTURE.md).")
      .def(
          "to_text",
          [](const ir::Graph& graph, bool locations, bool fullPaths, bool full) {
            ir::PrintOptions options;
            options.locations = locations;
            options.fullPaths = fullPaths;
            options.full = full;
            return ir::printGraph(graph, options);
          },
          py::arg("locations") = true, py::arg("full_paths") = false, py::arg("full") = false,
          "The graph as IR text; full=True also writes what parse_graph needs to read it "
          "back (every constant, the blocks, ...).")
      .def("__str__", [](const ir::Graph& graph) { return ir::printGraph(graph); })
      .def(
          "serialize",
          [](const ir::Graph& graph, bool stacks) {
            return py::bytes(ir::serializeGraph(graph, stacks));
          },
          py::arg("stacks") = true,
          "The graph as bytes: its ops, attributes, constants' data and source locations (with "
          "the whole Python stack of each unless stacks=False).")
      .def_property_readonly("num_nodes",
                             [](const ir::Graph& graph) { return graph.nodes().size(); })
      .def(
          "set_input_streamed_element_bytes",
          [](ir::Graph& graph, size_t input, uint64_t bytes) {
            POPSIM_CHECK(input < graph.inputs().size(), ErrorKind::InvalidInput, "the graph has ",
                         graph.inputs().size(), " inputs, not ", input + 1, ".");
            const ir::TensorType& type = graph.inputs()[input]->type();
            POPSIM_CHECK(bytes <= ir::elementSize(type.dtype), ErrorKind::InvalidInput, "input ",
                         input, " (", type.str(), ") can stream at most ",
                         ir::elementSize(type.dtype), " bytes per element (0: its own width), got ",
                         bytes, ".");
            graph.setInputStreamedElementBytes(input, bytes);
          },
          py::arg("input"), py::arg("bytes"),
          "Streams input `input` from the host with `bytes` per element (8-bit images "
          "widened on the device: 1).")
      .def("inputs",
           [](const ir::Graph& graph) {
             py::list inputs;
             for (const ir::Value* input : graph.inputs())
               inputs.append(describeTensor(*input));
             return inputs;
           })
      .def("weights",
           [](const ir::Graph& graph) {
             py::list weights;
             for (const ir::Value* weight : graph.weights()) {
               py::dict entry = describeTensor(*weight);
               entry["trainable"] = weight->trainable();
               weights.append(entry);
             }
             return weights;
           })
      .def(
          "input_updates", [](const ir::Graph& graph) { return graph.inputUpdates(); },
          "The inputs the model modifies in place, by index; their final values are the last "
          "outputs, one per input, in this order.")
      .def(
          "blocks",
          [](const ir::Graph& graph) {
            py::list blocks;
            for (const ir::BlockAnnotation& block : graph.blocks()) {
              py::dict entry;
              entry["name"] = block.name;
              entry["ipu"] = block.ipu >= 0 ? py::cast(block.ipu) : py::none();
              entry["location"] = block.location.str();
              blocks.append(entry);
            }
            return blocks;
          },
          "The model's blocks in the order it enters them: name, ipu (or None), location.");
  module.def(
      "parse_graph",
      [](const std::string& text) { return std::shared_ptr<ir::Graph>(ir::parseGraph(text)); },
      py::arg("text"),
      "A graph from IR text (Graph.to_text(full=True), POPSIM_DUMP_IR files); InputError names "
      "the line of a mistake.");
}

} // namespace popsim::python
