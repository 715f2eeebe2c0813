// Errors while a kernel builds or runs name the node, its op and source line,
// its pass and block, and where it ran.

#include "common/error.h"
#include "ir/graph.h"
#include "runtime/node_failure.h"

#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <new>

namespace popsim {
namespace {

// A relu at model.py:7 in the backward pass of block "B1", failing with
// `failure` and rethrown with its context.
template <typename Failure> CoreError failureOfRelu(const Failure& failure) {
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", {ir::DType::Float32, {2}});
  ir::Value* y = graph.apply(ir::OpKind::Relu, {x}, {}, {"model.py", 7, "forward", "", ""});
  ir::Placement placement;
  placement.phase = ir::Phase::Backward;
  placement.block = "B1";
  y->producer()->setPlacement(placement);
  try {
    try {
      throw failure;
    } catch (...) {
      runtime::FailureWhen when;
      when.doing = "task B1 on IPU1, micro-batch 2 of the call";
      when.task = "B1";
      when.ipu = 1;
      when.microBatch = 2;
      runtime::rethrowFailureOf(*y->producer(), when);
    }
  } catch (const CoreError& error) {
    return error;
  }
  ADD_FAILURE() << "rethrowFailureOf returned";
  return CoreError(ErrorKind::Internal, "");
}

constexpr const char* kWhere =
    "relu at model.py:7 (backward of block \"B1\", task B1 on IPU1, micro-batch 2 of the call): ";

TEST(NodeFailureTest, PopsimErrorsKeepTheirKindAndMessage) {
  const CoreError error =
      failureOfRelu(CoreError(ErrorKind::Execution, "index 9 is out of range."));
  EXPECT_EQ(error.kind(), ErrorKind::Execution);
  EXPECT_EQ(std::string(error.what()), std::string(kWhere) + "index 9 is out of range.");
}

// The error's site holds what the message says, as fields.
TEST(NodeFailureTest, TheErrorNamesItsSiteInFields) {
  const ErrorSite site =
      failureOfRelu(CoreError(ErrorKind::Execution, "index 9 is out of range.")).site();
  EXPECT_EQ(site.node, "relu at model.py:7");
  EXPECT_EQ(site.op, "relu");
  EXPECT_EQ(site.source, "model.py:7");
  EXPECT_EQ(site.block, "B1");
  EXPECT_EQ(site.task, "B1");
  EXPECT_EQ(site.ipu, 1);
  EXPECT_EQ(site.microBatch, 2);
  EXPECT_EQ(site.replica, -1);
}

TEST(NodeFailureTest, HostMemoryExhaustionIsAnExecutionError) {
  const CoreError error = failureOfRelu(std::bad_alloc());
  EXPECT_EQ(error.kind(), ErrorKind::Execution);
  EXPECT_EQ(std::string(error.what()),
            std::string(kWhere) + "the host ran out of memory. Free host memory, or use smaller "
                                  "micro-batches or fewer device iterations.");
}

TEST(NodeFailureTest, OneDnnFailuresArePopsimBugs) {
  const CoreError error = failureOfRelu(dnnl::error(dnnl_unimplemented, "could not create"));
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_EQ(std::string(error.what()), std::string(kWhere) +
                                           "oneDNN failed: could not create (status " +
                                           std::to_string(static_cast<int>(dnnl_unimplemented)) +
                                           "). Please report this as a popsim bug.");
}

TEST(NodeFailureTest, OtherExceptionsArePopsimBugs) {
  const CoreError error = failureOfRelu(std::out_of_range("vector::at"));
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_EQ(std::string(error.what()),
            std::string(kWhere) + "vector::at. Please report this as a popsim bug.");
}

} // namespace
} // namespace popsim
