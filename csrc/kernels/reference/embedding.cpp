#include "common/check.h"
#include "kernels/reference/families.h"

#include <cstring>
#include <vector>

namespace popsim::kernels::reference {
namespace {

std::string tableName(const ir::Value& table) {
  return table.role() == ir::ValueRole::Weight ? "weight '" + table.name() + "'"
                                               : "the embedding table";
}

template <typename Index>
void gather(const ir::Node& node, const float* table, const Index* indices, float* y) {
  const int64_t rows = node.input(0)->type().shape[0];
  const int64_t width = node.input(0)->type().shape[1];
  const int64_t count = node.input(1)->type().numel();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t row = static_cast<int64_t>(indices[i]);
    POPSIM_CHECK(row >= 0 && row < rows, ErrorKind::Execution, "index ", row, " (at position ", i,
                 " of the indices) is out of range for ", tableName(*node.input(0)), " with ", rows,
                 " rows. Valid indices are 0 to ", rows - 1, ".");
    std::memcpy(y + i * width, table + row * width, static_cast<size_t>(width) * sizeof(float));
  }
}

// dW: zeros, then each index's gradient row added to its table row (rows
// at padding_idx get no gradient, as in PyTorch).
template <typename Index>
void scatterAdd(const ir::Node& node, const float* dy, const Index* indices, float* dw) {
  const int64_t rows = node.output()->type().shape[0];
  const int64_t width = node.output()->type().shape[1];
  const int64_t count = node.input(1)->type().numel();
  const int64_t padding = node.attrs().getInt("padding_idx");
  std::vector<double> sums(static_cast<size_t>(rows * width), 0.0);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t row = static_cast<int64_t>(indices[i]);
    POPSIM_CHECK(row >= 0 && row < rows, ErrorKind::Execution, "index ", row, " (at position ", i,
                 " of the indices) is out of range for ", rows, " embedding rows.");
    if (row == padding) continue;
    for (int64_t j = 0; j < width; ++j) {
      sums[static_cast<size_t>(row * width + j)] += dy[i * width + j];
    }
  }
  for (size_t i = 0; i < sums.size(); ++i)
    dw[i] = static_cast<float>(sums[i]);
}

} // namespace

void embedding(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  auto* y = static_cast<float*>(outputs[0]);
  const bool wide = node.input(1)->type().dtype == ir::DType::Int64;
  if (node.kind() == ir::OpKind::EmbeddingGrad) {
    const auto* dy = static_cast<const float*>(inputs[0]);
    if (wide) {
      scatterAdd(node, dy, static_cast<const int64_t*>(inputs[1]), y);
    } else {
      scatterAdd(node, dy, static_cast<const int32_t*>(inputs[1]), y);
    }
    return;
  }
  const auto* table = static_cast<const float*>(inputs[0]);
  if (wide) {
    gather(node, table, static_cast<const int64_t*>(inputs[1]), y);
  } else {
    gather(node, table, static_cast<const int32_t*>(inputs[1]), y);
  }
}

} // namespace popsim::kernels::reference
