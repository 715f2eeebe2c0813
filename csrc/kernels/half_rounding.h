#pragma once

#include "kernels/kernel.h"
#include "kernels/kernel_factory.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

// float16 values on popsim's host: each lives in a float32 carrier that holds
// exactly a float16 value, so every kernel computes in float32 and only its
// results are rounded, as an IPU rounds the result of every float16 op.
namespace popsim::kernels {

// Rounds `count` floats in place to their nearest float16 values (ties to
// even). Vectorised with F16C where the CPU has AVX2; the same bits either way.
void roundToHalf(float* data, size_t count);
// Rounds `count` floats in place to one of their two nearest float16 values,
// the farther one with the probability of its nearness, so that the result
// is unbiased (the IPU's stochastic rounding). `key` and `draw` select the
// random numbers: element i uses a hash of (key, draw, i).
void roundToHalfStochastically(float* data, size_t count, uint64_t key, uint64_t draw);
// How float16 results are rounded: to nearest, or stochastically with the
// random numbers of one (key, draw). round() rounds elements [begin, end) of
// a buffer on the calling thread, element i with the random number that the
// rounding of the whole buffer gives it, so a buffer rounded in parts, in
// any order, on any threads, ends as one rounded at once; roundAll() rounds a
// whole buffer, large ones over the OpenMP threads.
class HalfRounding {
public:
  static HalfRounding toNearest() { return HalfRounding(std::nullopt); }
  static HalfRounding stochastic(uint64_t key, uint64_t draw);
  // A kernel's result k (halfResultsOf's order) in its run `draw`: to nearest
  // without a key, else stochastically from key + k.
  static HalfRounding ofResult(std::optional<uint64_t> stochasticKey, size_t result, uint64_t draw);
  void round(float* data, int64_t begin, int64_t end) const;
  void roundAll(float* data, size_t count) const;

private:
  explicit HalfRounding(std::optional<uint64_t> stream) : stream_(stream) {}
  std::optional<uint64_t> stream_; // the stochastic draw's random stream
};

// float16 bits to float32 carriers, and float32 to float16 bits (rounding).
void halfToFloat(const uint16_t* in, float* out, size_t count);
void floatToHalf(const float* in, uint16_t* out, size_t count);

// Runs `inner` and rounds the listed outputs (the float16 ones) after it: to
// nearest, or stochastically with a random key (each run draws anew).
class HalfRoundingKernel : public Kernel {
public:
  HalfRoundingKernel(std::unique_ptr<Kernel> inner, std::vector<BoundTensor> halfOutputs,
                     std::optional<uint64_t> stochasticKey);
  void run(dnnl::stream& stream) override;
  std::string implementation() const override;

private:
  std::unique_ptr<Kernel> inner_;
  std::vector<BoundTensor> halfOutputs_;
  std::optional<uint64_t> stochasticKey_;
  uint64_t runs_ = 0;
};

// What a node's kernel rounds to float16: its float16 outputs, then the
// float16 inputs it writes in place (a float16 weight an optimizer updates),
// in that order (the order selects each one's random numbers).
std::vector<BoundTensor> halfResultsOf(const KernelRequest& request);

// The kernel as it must run for its node: wrapped in a HalfRoundingKernel
// when any output, or any input it writes in place (a float16 weight an
// optimizer updates), is float16.
std::unique_ptr<Kernel> roundingHalfResults(std::unique_ptr<Kernel> kernel,
                                            const KernelRequest& request);

} // namespace popsim::kernels
