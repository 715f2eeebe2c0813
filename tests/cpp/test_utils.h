#pragma once

#include "common/error.h"
#include "ir/graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace popsim {

// GoogleTest prints error kinds and tensor types readably in failure messages.
inline void PrintTo(ErrorKind kind, std::ostream* out) { *out << errorKindName(kind); }

namespace ir {
inline void PrintTo(const TensorType& type, std::ostream* out) { *out << type.str(); }
} // namespace ir

} // namespace popsim

namespace popsim::testing {

inline ir::TensorType f32(ir::Shape shape) { return {ir::DType::Float32, std::move(shape)}; }

// `value`, its producer placed in `block` (as the importer places the ops
// of a popsim.Block).
inline ir::Value* inBlock(ir::Value* value, const char* block) {
  ir::Placement placement;
  placement.block = block;
  value->producer()->setPlacement(placement);
  return value;
}

// The graph's op kinds in node order.
inline std::vector<ir::OpKind> kindsOf(const ir::Graph& graph) {
  std::vector<ir::OpKind> kinds;
  for (const auto& node : graph.nodes()) {
    kinds.push_back(node->kind());
  }
  return kinds;
}

// The popsim::CoreError that `body` throws. When it throws nothing or another
// exception, the test fails and the returned error's message says what happened.
template <typename Body> CoreError captureError(Body&& body) {
  try {
    body();
  } catch (const CoreError& error) {
    return error;
  } catch (const std::exception& other) {
    ADD_FAILURE() << "expected popsim::CoreError, got another exception: " << other.what();
    return CoreError(ErrorKind::Internal, std::string("<another exception: ") + other.what() + ">");
  }
  ADD_FAILURE() << "expected popsim::CoreError, nothing was thrown";
  return CoreError(ErrorKind::Internal, "<nothing was thrown>");
}

// Whether `text` contains `part`, showing both when it does not.
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "\"" << text << "\"\n  does not contain\n\"" << part << "\"";
}

inline std::vector<float> randomFloats(int64_t count, uint32_t seed, float low = -1.0f,
                                       float high = 1.0f) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) {
    value = distribution(generator);
  }
  return values;
}

inline std::vector<uint8_t> bytesOf(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// |actual - expected| <= atol + rtol * |expected| everywhere, like torch.allclose.
inline ::testing::AssertionResult allClose(const float* actual, const float* expected,
                                           int64_t count, double rtol = 1e-5, double atol = 1e-6) {
  for (int64_t i = 0; i < count; ++i) {
    const double difference = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    if (!(difference <= atol + rtol * std::fabs(static_cast<double>(expected[i])))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": actual " << actual[i] << " expected " << expected[i]
             << " (difference " << difference << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

} // namespace popsim::testing
