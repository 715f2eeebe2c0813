"""PyTorch's loss functions that PyTorch 1.13 writes in Python, as a trace needs them.

A training model's loss is found by the loss ops in its trace (aten::mse_loss,
aten::cross_entropy_loss, ...). gaussian_nll_loss, multilabel_soft_margin_loss
and triplet_margin_with_distance_loss leave only the arithmetic they are made
of, so while a training model traces each marks its result with
popsim::torch_loss, which popsim reads as such a loss op (not as
popsim.identity_loss, which would make it the model's only loss).

binary_cross_entropy with a weight broadcasts the weight with _infer_size on
the input's sizes, which are tensors while tracing, and the trace fails; here
the weight is broadcast with expand_as instead, the same values.
"""

import contextlib
from typing import Any, Callable, Iterator, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch.nn import _reduction

from popsim.frontend.ops import LIBRARY as _library

_library.define("torch_loss(Tensor x) -> Tensor")
_library.impl("torch_loss", lambda x: x.clone(), "CPU")

_PYTHON_LOSSES = ("gaussian_nll_loss", "multilabel_soft_margin_loss",
                  "triplet_margin_with_distance_loss")


def _marked(loss_function: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def marked(*args: Any, **kwargs: Any) -> torch.Tensor:
        loss = loss_function(*args, **kwargs)
        # (Only this thread traces: another thread's eager call is left as it was.)
        return torch.ops.popsim.torch_loss(loss) if torch.jit.is_tracing() else loss

    return marked


def _binary_cross_entropy(original: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def binary_cross_entropy(input: torch.Tensor, target: torch.Tensor,
                             weight: Optional[torch.Tensor] = None, size_average: Any = None,
                             reduce: Any = None, reduction: str = "mean") -> torch.Tensor:
        if weight is None or not torch.jit.is_tracing():
            return original(input, target, weight, size_average, reduce, reduction)
        if size_average is not None or reduce is not None:
            reduction = _reduction.legacy_get_string(size_average, reduce)
        if target.size() != input.size():  # eager's check and message
            raise ValueError(
                f"Using a target size ({target.size()}) that is different to the input size "
                f"({input.size()}) is deprecated. Please ensure they have the same size.")
        return torch._C._nn.binary_cross_entropy(  # type: ignore[attr-defined]
            input, target, weight.expand_as(target), _reduction.get_enum(reduction))

    return binary_cross_entropy


@contextlib.contextmanager
def traceable_python_losses(training: bool) -> Iterator[None]:
    """While inside, torch.nn.functional's Python-written losses trace as popsim needs: marked
    as losses in a training model's trace, and binary_cross_entropy's weight broadcast."""
    swaps: List[Tuple[str, Callable[..., torch.Tensor]]] = [
        ("binary_cross_entropy", _binary_cross_entropy(F.binary_cross_entropy))]
    if training:
        swaps += [(name, _marked(getattr(F, name))) for name in _PYTHON_LOSSES]
    saved = [(name, getattr(F, name)) for name, _ in swaps]
    for name, replacement in swaps:
        setattr(F, name, replacement)
    try:
        yield
    finally:
        for name, original in saved:
            setattr(F, name, original)
