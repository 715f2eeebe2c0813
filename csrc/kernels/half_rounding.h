#pragma once

#include "kernels/kernel.h"
#include "kernels/kernel_factory.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

// float16 values on popsim's host: each lives in a float32 carrier that holds
// exactly a float16 value, so every kernel computes in float32 and only its
// results are rounded, as an IPU rounds the result of every float16 op.
namespace popsim::kernels {

// Rounds `count` floats in place to their nearest float16 values (ties to
// even). Vectorised with F16C where the CPU has AVX2; the same bits either way.
void roundToHalf(float* data, size_t count);
// float16 bits to float32 carriers, and float32 to float16 bits (rounding).
void halfToFloat(const uint16_t* in, float* out, size_t count);
void floatToHalf(const float* in, uint16_t* out, size_t count);

// Runs `inner` and rounds the listed outputs (the float16 ones) after it.
class HalfRoundingKernel : public Kernel {
public:
  HalfRoundingKernel(std::unique_ptr<Kernel> inner, std::vector<BoundTensor> halfOutputs);
  void run(dnnl::stream& stream) override;
  std::string implementation() const override;

private:
  std::unique_ptr<Kernel> inner_;
  std::vector<BoundTensor> halfOutputs_;
};

// The kernel as it must run for its node: wrapped in a HalfRoundingKernel
// when any output, or any input it writes in place (a float16 weight an
// optimizer updates), is float16.
std::unique_ptr<Kernel> roundingHalfResults(std::unique_ptr<Kernel> kernel,
                                            const KernelRequest& request);

} // namespace popsim::kernels
