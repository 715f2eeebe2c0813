// Every op has one home, its family's file under ir/ops, which declares all
// popsim knows of it: a schema, a work rule for the cost model (every op
// but a view) and, where popsim differentiates it, a gradient rule.

#include "ir/op_kind.h"
#include "ir/op_schema.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace popsim {
namespace {

TEST(OpSchemaTest, EveryOpDeclaresItsSchemaAndItsWork) {
  for (size_t i = 0; i < ir::kNumOpKinds; ++i) {
    const ir::OpSchema& schema = ir::opSchema(static_cast<ir::OpKind>(i));
    SCOPED_TRACE(std::string(schema.name()));
    EXPECT_NE(schema.inferTypes, nullptr);
    EXPECT_TRUE(schema.view || schema.work != nullptr) << "no work rule";
    EXPECT_FALSE(schema.view && schema.plannedTemporaries);
  }
}

// The ops autodiff differentiates: PyTorch's differentiable ops as they
// lower, and nothing that only the backward pass or the optimizer emits.
TEST(OpSchemaTest, TheDifferentiableOpsHaveGradientRules) {
  std::set<std::string> differentiable;
  for (size_t i = 0; i < ir::kNumOpKinds; ++i) {
    const ir::OpSchema& schema = ir::opSchema(static_cast<ir::OpKind>(i));
    if (schema.gradient != nullptr) differentiable.insert(std::string(schema.name()));
  }
  for (const char* name : {"convolution",
                           "linear",
                           "matmul",
                           "relu",
                           "softmax",
                           "layer_norm_train",
                           "batch_norm",
                           "reshape",
                           "cast",
                           "pointwise",
                           "binary_pointwise",
                           "where",
                           "gather",
                           "scatter_reduce",
                           "dropout",
                           "nll_loss",
                           "ctc_loss",
                           "sort",
                           "max_pool2d_train",
                           "reduce_sum"}) {
    EXPECT_EQ(differentiable.count(name), 1u) << name;
  }
  for (const char* name :
       {"convolution_grad_weight", "linear_grad_weight", "sgd_update", "accumulate",
        "replica_all_reduce", "ipu_copy", "layer_norm", "max_pool2d"}) {
    EXPECT_EQ(differentiable.count(name), 0u) << name;
  }
}

} // namespace
} // namespace popsim
