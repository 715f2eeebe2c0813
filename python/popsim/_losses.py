"""popsim.identity_loss: marks a custom loss for a training model.

In eager PyTorch it reduces its input like a loss would. Inside a popsim
model it is also recorded as a marker op (popsim::identity_loss), which tells
popsim which value to minimise, e.g. when a model combines several losses.
"""

import torch

from popsim._ops import LIBRARY as _library
from popsim.errors import OptionError

_REDUCTIONS = ("sum", "mean", "none")

_library.define("identity_loss(Tensor x, str reduction) -> Tensor")


def _reduce(x: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "sum":
        return x.sum()
    if reduction == "mean":
        return x.mean()
    return x.clone()


_library.impl("identity_loss", _reduce, "CPU")


def identity_loss(x: torch.Tensor, reduction: str) -> torch.Tensor:
    """Marks `x` as the loss to minimise, reduced with "sum", "mean" or "none".

    With reduction="none", `x` must already be a scalar.
    """
    if reduction not in _REDUCTIONS:
        raise OptionError(f"identity_loss reduction must be 'sum', 'mean' or 'none', "
                          f"got {reduction!r}.")
    if torch.jit.is_tracing():
        return torch.ops.popsim.identity_loss(x, reduction)
    return x if reduction == "none" else _reduce(x, reduction)
