#pragma once

#include "ir/node.h"

#include <vector>

// One entry point per op family; reference_ops.cpp dispatches on the op kind.
namespace popsim::kernels::reference {

using Inputs = std::vector<void*>;
using Outputs = std::vector<void*>;

void convolution(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void matmul(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// The same with float16 partials (reference/partial_sums.h: HalfSum).
void convolutionWithHalfPartials(const ir::Node& node, const Inputs& inputs,
                                 const Outputs& outputs);
void matmulWithHalfPartials(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void unaryElementwise(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void binaryElementwise(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void softmax(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void pooling(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void normalization(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void layout(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void reduction(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void embedding(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void elementwiseGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void pointwise(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// binary_pointwise, binary_pointwise_grad and where (binary_pointwise.cpp).
void binaryPointwise(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// reduce_extremum(_grad) and arg_extremum (extremum.cpp).
void extremum(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// cumulative_sum, cumulative_extremum, log_cumulative_sum_exp(_grad) (scan.cpp).
void scan(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// reduce_product, cumulative_product and their gradients (product.cpp).
void product(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// dropout, random_draw, random_bernoulli and random_poisson (random.cpp).
void random(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void loss(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// index_select, index_add, gather and scatter (gather_scatter.cpp).
void gatherScatter(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// sort (sort.cpp).
void sort(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// check_range and print_tensor (checks.cpp).
void checks(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
// ctc_loss and ctc_loss_grad (ctc_loss.cpp), through loss().
void ctc(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void updates(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);
void optimizer(const ir::Node& node, const Inputs& inputs, const Outputs& outputs);

} // namespace popsim::kernels::reference
