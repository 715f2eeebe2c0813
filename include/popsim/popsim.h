#pragma once

// popsim's public C++ API: LibTorch programs run TorchScript models on
// simulated Graphcore IPUs. A CMake project uses it with
//
//   find_package(popsim REQUIRED)
//   target_link_libraries(app popsim::popsim)
//
// and includes this header.

#include "popsim/errors.h"
#include "popsim/execution_trace.h"
#include "popsim/inputs.h"
#include "popsim/optim.h"
#include "popsim/options.h"
#include "popsim/session.h"
#include "popsim/sizing_report.h"
#include "popsim/version.h"
