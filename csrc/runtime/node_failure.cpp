#include "runtime/node_failure.h"

#include "common/error.h"
#include "common/strings.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <exception>
#include <new>

namespace popsim::runtime {

void rethrowFailureOf(const ir::Node& node, const FailureWhen& when) {
  const ir::Placement& placement = node.placement();
  std::string where = strCat(node.describe(), " (", ir::phaseName(placement.phase));
  if (!placement.block.empty()) {
    where += strCat(" of block \"", placement.block, "\"");
  }
  where += strCat(", ", when.doing, "): ");
  ErrorSite site;
  site.node = node.describe();
  site.op = std::string(node.name());
  site.source = node.location().known() ? node.location().str() : "";
  site.block = placement.block;
  site.task = when.task;
  site.ipu = when.ipu;
  site.microBatch = when.microBatch;
  site.replica = when.replica;
  const auto fail = [&](ErrorKind kind, const std::string& message) {
    throw CoreError(kind, where + message, site);
  };
  try {
    throw;
  } catch (const CoreError& error) {
    fail(error.kind(), error.what());
  } catch (const std::bad_alloc&) {
    fail(ErrorKind::Execution, "the host ran out of memory. Free host memory, or use smaller "
                               "micro-batches or fewer device iterations.");
  } catch (const dnnl::error& error) {
    fail(ErrorKind::Internal,
         strCat("oneDNN failed: ", error.what(), " (status ", static_cast<int>(error.status),
                "). Please report this as a popsim bug."));
  } catch (const std::exception& error) {
    fail(ErrorKind::Internal, strCat(error.what(), ". Please report this as a popsim bug."));
  } catch (...) {
    fail(ErrorKind::Internal, "an unknown exception. Please report this as a popsim bug.");
  }
  throw; // not reached: every branch above throws
}

} // namespace popsim::runtime
