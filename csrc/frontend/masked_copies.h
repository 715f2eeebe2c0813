#pragma once

namespace torch::jit {
struct Graph;
} // namespace torch::jit

namespace popsim::frontend {

// `out[mask] = src[mask]` (and out.index_put((mask,), src[mask])): each
// masked element of out takes src's element at the same position. Reading
// src[mask] alone gives a tensor whose length depends on the mask's data,
// which a compiled program cannot have (the importer refuses it), but the
// pair is the elementwise out.copy_(torch.where(mask, src, out)), which this
// pass writes in its place when src has out's shape and dtype and the
// selection has no other use, and nothing writes in place between the read
// and the write (the pair is one Python statement). The mask's dims are the
// leading dims of out; it is unsqueezed to out's rank.
void rewriteMaskedCopies(torch::jit::Graph& graph);

} // namespace popsim::frontend
