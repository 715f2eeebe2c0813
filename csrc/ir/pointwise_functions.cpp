#include "ir/pointwise_functions.h"

#include "ir/pointwise_formulas.h"

namespace popsim::ir {
namespace {

std::vector<std::string_view> splitParameters(std::string_view names) {
  std::vector<std::string_view> parameters;
  while (!names.empty()) {
    const size_t comma = names.find(',');
    parameters.push_back(names.substr(0, comma));
    names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
  }
  return parameters;
}

// libm's double precision: the reference values of every kernel.
std::vector<PointwiseFunction> makeTable() {
  std::vector<PointwiseFunction> table;
  for (const PointwiseFormula<ScalarMath>& formula : PointwiseFormulas<ScalarMath>::all) {
    table.push_back({formula.name, splitParameters(formula.parameters), formula.value,
                     formula.derivative, table.size()});
  }
  return table;
}

} // namespace

const std::vector<PointwiseFunction>& pointwiseFunctions() {
  static const std::vector<PointwiseFunction> table = makeTable();
  return table;
}

const PointwiseFunction* findPointwiseFunction(std::string_view name) {
  for (const PointwiseFunction& function : pointwiseFunctions()) {
    if (function.name == name) return &function;
  }
  return nullptr;
}

} // namespace popsim::ir
