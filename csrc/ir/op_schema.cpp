#include "ir/op_schema.h"

#include "common/check.h"
#include "ir/node.h"
#include "ir/ops/op_registry.h"

#include <array>

namespace popsim::ir {
namespace {

std::array<OpSchema, kNumOpKinds> buildTable() {
  std::array<OpSchema, kNumOpKinds> table{};
  for (size_t i = 0; i < kNumOpKinds; ++i) {
    table[i].kind = static_cast<OpKind>(i);
  }
  OpRegistry registry(table);
  ops::registerConvolutionOps(registry);
  ops::registerMatMulOps(registry);
  ops::registerElementwiseOps(registry);
  ops::registerPointwiseOps(registry);
  ops::registerBinaryPointwiseOps(registry);
  ops::registerExtremumOps(registry);
  ops::registerScanOps(registry);
  ops::registerProductOps(registry);
  ops::registerCtcLossOps(registry);
  ops::registerCheckOps(registry);
  ops::registerCustomGradientOps(registry);
  ops::registerRandomOps(registry);
  ops::registerIndexingOps(registry);
  ops::registerSortOps(registry);
  ops::registerSoftmaxOps(registry);
  ops::registerPoolingOps(registry);
  ops::registerNormalizationOps(registry);
  ops::registerLayoutOps(registry);
  ops::registerReductionOps(registry);
  ops::registerEmbeddingOps(registry);
  ops::registerNllLossOps(registry);
  ops::registerUpdateOps(registry);
  ops::registerHostCallOps(registry);
  ops::registerCollectiveOps(registry);
  for (const OpSchema& schema : table) {
    POPSIM_ASSERT(schema.inferTypes != nullptr, "op '", schema.name(), "' has no schema.");
  }
  return table;
}

} // namespace

std::string OpSchema::inputName(size_t index) const {
  if (index < inputNames.size()) {
    return "input " + std::to_string(index) + " (" + inputNames[index] + ")";
  }
  return "input " + std::to_string(index);
}

const OpSchema& opSchema(OpKind kind) {
  static const std::array<OpSchema, kNumOpKinds> table = buildTable();
  return table.at(static_cast<size_t>(kind));
}

bool selectsInputValues(const Node& node) {
  const SelectsInputValuesRule rule = node.schema().selectsInputValues;
  return rule != nullptr && rule(node);
}

bool isFreeOnIpu(const Node& node) {
  if (isViewOp(node.kind())) return true;
  if (!node.placement().float16OnIpu || node.kind() != OpKind::Cast) return false;
  // Only the widening and narrowing between float16 and float32 are popsim's.
  const DType from = node.input(0)->type().dtype;
  const DType to = node.output()->type().dtype;
  return (from == DType::Float16 && to == DType::Float32) ||
         (from == DType::Float32 && to == DType::Float16);
}

std::vector<TensorType> inferOutputTypes(OpKind kind, const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  const OpSchema& schema = opSchema(kind);
  const int count = static_cast<int>(inputs.size());
  POPSIM_CHECK(count >= schema.minInputs && (schema.maxInputs < 0 || count <= schema.maxInputs),
               ErrorKind::Compilation, schema.name(), ": got ", count, " inputs, expected ",
               schema.minInputs == schema.maxInputs
                   ? std::to_string(schema.minInputs)
                   : strCat(schema.minInputs, " to ",
                            schema.maxInputs < 0 ? "any number" : std::to_string(schema.maxInputs)),
               ".");
  for (const AttrSpec& spec : schema.attrs) {
    const AttrValue* value = attrs.find(spec.name);
    if (value == nullptr && spec.optional) continue;
    POPSIM_CHECK(value != nullptr, ErrorKind::Compilation, schema.name(), ": attribute '",
                 spec.name, "' is missing.");
    POPSIM_CHECK(attrTypeOf(*value) == spec.type, ErrorKind::Compilation, schema.name(),
                 ": attribute '", spec.name, "' is a ", attrTypeName(attrTypeOf(*value)),
                 ", expected ", attrTypeName(spec.type), ".");
  }
  for (const auto& [name, value] : attrs.entries()) {
    bool known = false;
    for (const AttrSpec& spec : schema.attrs) {
      known = known || spec.name == name;
    }
    POPSIM_CHECK(known, ErrorKind::Compilation, schema.name(), ": unknown attribute '", name, "'.");
  }
  try {
    return schema.inferTypes(inputs, attrs);
  } catch (const CoreError& error) {
    throwError(error.kind(), strCat(schema.name(), ": ", error.what()));
  }
}

} // namespace popsim::ir
