#pragma once

#include "common/error.h"
#include "common/strings.h"

// POPSIM_CHECK(condition, kind, message parts...) throws popsim::CoreError of the
// given kind with the parts concatenated. Use it for errors users can cause.
#define POPSIM_CHECK(condition, kind, ...)                                                         \
  do {                                                                                             \
    if (!(condition)) {                                                                            \
      ::popsim::throwError((kind), ::popsim::strCat(__VA_ARGS__));                                 \
    }                                                                                              \
  } while (false)

// POPSIM_CHECK_OPTION(condition, option, message parts...) throws an
// InvalidOption error that names `option` (as Python spells it) in its site.
#define POPSIM_CHECK_OPTION(condition, option, ...)                                                \
  do {                                                                                             \
    if (!(condition)) {                                                                            \
      ::popsim::throwOptionError((option), ::popsim::strCat(__VA_ARGS__));                         \
    }                                                                                              \
  } while (false)

// POPSIM_ASSERT(condition, message parts...) guards popsim's own invariants; a
// failure is a popsim bug, so the message carries the source position.
#define POPSIM_ASSERT(condition, ...)                                                              \
  do {                                                                                             \
    if (!(condition)) {                                                                            \
      ::popsim::throwError(::popsim::ErrorKind::Internal,                                          \
                           ::popsim::strCat("internal error at ", __FILE__, ":", __LINE__, ": ",   \
                                            #condition, " failed. ", ##__VA_ARGS__,                \
                                            " Please report this as a popsim bug."));              \
    }                                                                                              \
  } while (false)
