// Complex numbers, which popsim recognises only to refuse them with the
// reason and what to write instead: the IPU has no complex arithmetic (nor
// does PopTorch compute with complex dtypes). Models meet them mostly in
// rotary position embeddings written with torch.polar and view_as_complex,
// and in spectrograms (torch.stft, torch.fft).

#include "frontend/lowering_registry.h"

namespace popsim::frontend::lowerings {

void registerComplexNumbers(LoweringRegistry& registry) {
  // Fourier transforms give complex numbers (stft's return_complex=False form
  // only lays their parts out as reals), and the IPU has no FFT.
  for (const char* op :
       {"aten::stft", "aten::istft", "aten::fft_fft", "aten::fft_ifft", "aten::fft_rfft",
        "aten::fft_irfft", "aten::fft_hfft", "aten::fft_ihfft", "aten::fft_fft2", "aten::fft_ifft2",
        "aten::fft_rfft2", "aten::fft_irfft2", "aten::fft_fftn", "aten::fft_ifftn",
        "aten::fft_rfftn", "aten::fft_irfftn"}) {
    registry.refuse(op, "a Fourier transform, whose result is complex numbers, which the IPU does "
                        "not compute with: compute spectrograms on the host (in the DataLoader's "
                        "workers) before the model, or as a Conv1d whose fixed weights are the "
                        "windowed cosine and sine rows of the transform (the real and imaginary "
                        "parts), from which magnitudes follow as sqrt(re^2 + im^2)");
  }
  for (const char* op :
       {"aten::view_as_complex", "aten::view_as_real", "aten::polar", "aten::complex"}) {
    registry.refuse(op,
                    "complex numbers, which the IPU does not compute with: write the arithmetic "
                    "with real tensors (rotary embeddings: x * cos + rotate_half(x) * sin, with "
                    "cos and sin as float buffers, where rotate_half(x) is "
                    "cat([-x[..., d/2:], x[..., :d/2]], -1))");
  }
}

} // namespace popsim::frontend::lowerings
