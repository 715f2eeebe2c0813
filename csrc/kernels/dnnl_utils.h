#pragma once

#include "ir/tensor_type.h"
#include "kernels/kernel.h"
#include "kernels/kernel_factory.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <unordered_map>
#include <vector>

namespace popsim::kernels {

using dnnl::memory;

bool isDnnlDType(ir::DType dtype);
memory::data_type toDnnlDType(ir::DType dtype);
// oneDNN has no 0-d tensors: a scalar becomes {1}.
memory::dims toDnnlDims(const ir::Shape& shape);
// Row-major descriptor of `shape`.
memory::desc plainDesc(const ir::Shape& shape, ir::DType dtype = ir::DType::Float32);
// The tensor as a flat vector of numel elements (for shape-agnostic ops).
memory::desc flatDesc(const ir::TensorType& type);
// `shape` padded with leading 1s to `rank` dimensions.
ir::Shape padRank(const ir::Shape& shape, size_t rank);

// Channels per block in oneDNN's channel-blocked layouts (nChw8c, nChw16c)
// for the vector ISA oneDNN uses: one vector of floats.
int64_t channelBlock();
// A 4-d NCHW shape in the channel-blocked layout with `block` channels.
memory::desc channelBlockedDesc(const ir::Shape& shape, memory::data_type type, int64_t block);

// Memory owned by a kernel for oneDNN's scratchpads and for outputs nobody
// reads (e.g. layer-norm statistics in inference). It lives as long as the
// kernel. Left uninitialised: its users write before they read, and zeroing
// every kernel's scratchpad took a large share of compiling a model.
class ScratchBuffer {
public:
  explicit ScratchBuffer(size_t bytes)
      : data_(new float[(bytes + sizeof(float) - 1) / sizeof(float)]) {}
  void* data() { return data_.get(); }

private:
  std::unique_ptr<float[]> data_;
};

// The attributes every primitive popsim creates is built with: the caller
// provides its scratchpad (scratchpad_mode::user). oneDNN's own scratchpad
// (library mode) is thread-local to the thread that created the primitive,
// while popsim creates its primitives when it compiles and runs them on the
// simulated IPUs' threads: a primitive that needs one would then read
// another thread's buffer, or none.
dnnl::primitive_attr primitiveAttributes();

// The primitive's scratchpad, bound into args as DNNL_ARG_SCRATCHPAD and
// kept alive in `owned`; nothing when it needs none. The descriptor must
// have been created with primitiveAttributes().
void bindScratchpad(const dnnl::primitive_desc_base& descriptor, const dnnl::engine& engine,
                    std::unordered_map<int, memory>& args,
                    std::vector<std::unique_ptr<ScratchBuffer>>& owned);

// A oneDNN primitive with all of its arguments (and its scratchpad) bound to
// fixed memory.
class PrimitiveKernel : public Kernel {
public:
  PrimitiveKernel(dnnl::primitive primitive, std::unordered_map<int, memory> args,
                  const dnnl::primitive_desc_base& descriptor);
  void run(dnnl::stream& stream) override;
  std::string implementation() const override { return implementation_; }
  // Keeps kernel-private memory (bound into args) alive with the kernel.
  void keepAlive(std::unique_ptr<ScratchBuffer> buffer) { owned_.push_back(std::move(buffer)); }

private:
  dnnl::primitive primitive_;
  std::unordered_map<int, memory> args_;
  std::string implementation_;
  std::vector<std::unique_ptr<ScratchBuffer>> owned_;
};

// The weights version to watch for an input that changes only when weights
// are written (a weight or a constant); nullptr for anything else, which may
// change every run.
const uint64_t* weightsVersionOf(const ir::Value& value, const KernelRequest& request);

// A oneDNN eltwise of a float tensor (request's input 0 into its output 0)
// over the flattened tensor; with `passNan`, NaN inputs are written back
// afterwards, for the algorithms whose jit kernels turn NaN into numbers
// where PyTorch returns NaN.
std::unique_ptr<Kernel> eltwiseKernel(const KernelRequest& request, dnnl::algorithm algorithm,
                                      float alpha, float beta, bool passNan);

// A oneDNN matmul dst = a x b (+ bias, [1, N]) bound to fixed memory.
std::unique_ptr<Kernel> matmulKernel(const dnnl::engine& engine, const memory::desc& a, void* aData,
                                     const memory::desc& b, void* bData, const memory::desc& dst,
                                     void* dstData, void* biasData = nullptr);

// A oneDNN reorder between two bound memories.
std::unique_ptr<Kernel> reorderKernel(const memory& from, const memory& to,
                                      const dnnl::engine& engine);

// Several kernels run in order as one (e.g. a primitive and a fix-up).
class SequenceKernel : public Kernel {
public:
  explicit SequenceKernel(std::vector<std::unique_ptr<Kernel>> parts);
  void run(dnnl::stream& stream) override;
  std::string implementation() const override;

private:
  std::vector<std::unique_ptr<Kernel>> parts_;
};

} // namespace popsim::kernels
