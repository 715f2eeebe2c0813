#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

#include <string_view>

namespace popsim::ir::ops {
namespace {

// The dtypes of a comma-separated list of short names ("f32,i64").
std::vector<DType> dtypesOf(std::string_view names) {
  std::vector<DType> dtypes;
  while (!names.empty()) {
    const size_t comma = names.find(',');
    const std::string_view name = names.substr(0, comma);
    const std::optional<DType> dtype = dtypeFromName(name);
    POPSIM_CHECK(dtype.has_value(), ErrorKind::Compilation, "host_call: unknown dtype '",
                 std::string(name), "' in output_dtypes.");
    dtypes.push_back(*dtype);
    names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
  }
  return dtypes;
}

// host_call(X...) {id, output_dtypes, output_ranks, output_shapes} -> Y...: a
// function the host computes (PopTorch's CPU op). The inputs stream to the
// host, which runs the function registered under `id`, and its results
// stream back; the outputs' types are those the function gave when the
// model was traced (dtypes as short names, shapes concatenated).
std::vector<TensorType> inferHostCall(const std::vector<TensorType>&, const Attributes& attrs) {
  const std::vector<DType> dtypes = dtypesOf(attrs.getString("output_dtypes"));
  const std::vector<int64_t>& ranks = attrs.getInts("output_ranks");
  const std::vector<int64_t>& dims = attrs.getInts("output_shapes");
  POPSIM_CHECK(!dtypes.empty() && dtypes.size() == ranks.size(), ErrorKind::Compilation,
               "host_call '", attrs.getString("id"),
               "' needs one dtype and one rank per output, got ", dtypes.size(), " and ",
               ranks.size(), ".");
  std::vector<TensorType> outputs;
  size_t next = 0;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    POPSIM_CHECK(ranks[i] >= 0 && next + static_cast<size_t>(ranks[i]) <= dims.size(),
                 ErrorKind::Compilation, "host_call '", attrs.getString("id"),
                 "': output_shapes holds fewer dimensions than output_ranks says.");
    Shape shape(dims.begin() + static_cast<std::ptrdiff_t>(next),
                dims.begin() + static_cast<std::ptrdiff_t>(next + ranks[i]));
    next += static_cast<size_t>(ranks[i]);
    outputs.push_back({dtypes[i], std::move(shape)});
  }
  POPSIM_CHECK(next == dims.size(), ErrorKind::Compilation, "host_call '", attrs.getString("id"),
               "': output_shapes holds more dimensions than output_ranks says.");
  return outputs;
}

// The inputs stream to the host, which computes; the results stream back.
OpWork hostCallWork(const Node& node) {
  OpWork work;
  work.hostTransfer = true;
  for (const Value* value : node.inputs())
    work.hostBytes += value->type().bytes();
  for (const Value* value : node.outputs())
    work.hostBytes += value->type().bytes();
  return work;
}

} // namespace

void registerHostCallOps(OpRegistry& registry) {
  registry.add(OpKind::HostCall, 0, -1, {"inputs"},
               {{"id", AttrType::String},
                {"output_dtypes", AttrType::String},
                {"output_ranks", AttrType::Ints},
                {"output_shapes", AttrType::Ints}},
               inferHostCall);
  registry.setWork(OpKind::HostCall, hostCallWork);
}

} // namespace popsim::ir::ops
