#include "runtime/node_failure.h"

#include "common/error.h"
#include "common/strings.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <exception>
#include <new>

namespace popsim::runtime {

void rethrowFailureOf(const ir::Node& node, const std::string& when) {
  const ir::Placement& placement = node.placement();
  std::string where = strCat(node.describe(), " (", ir::phaseName(placement.phase));
  if (!placement.block.empty()) {
    where += strCat(" of block \"", placement.block, "\"");
  }
  where += strCat(", ", when, "): ");
  try {
    throw;
  } catch (const Error& error) {
    throwError(error.kind(), where + error.what());
  } catch (const std::bad_alloc&) {
    throwError(ErrorKind::Execution,
               where + "the host ran out of memory. Free host memory, or use smaller "
                       "micro-batches or fewer device iterations.");
  } catch (const dnnl::error& error) {
    throwError(ErrorKind::Internal,
               strCat(where, "oneDNN failed: ", error.what(), " (status ",
                      static_cast<int>(error.status), "). Please report this as a popsim bug."));
  } catch (const std::exception& error) {
    throwError(ErrorKind::Internal,
               strCat(where, error.what(), ". Please report this as a popsim bug."));
  } catch (...) {
    throwError(ErrorKind::Internal,
               where + "an unknown exception. Please report this as a popsim bug.");
  }
}

} // namespace popsim::runtime
