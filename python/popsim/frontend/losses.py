"""popsim.identity_loss: marks a custom loss for a training model.

In eager PyTorch it reduces its input like a loss would. Inside a popsim
model it is also recorded as a marker op (popsim::identity_loss), which tells
popsim which value to minimise, e.g. when a model combines several losses.
"""

import torch

from popsim.frontend.ops import LIBRARY as _library
from popsim.api.errors import OptionError

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
    """Marks ``x`` as the loss the training model minimises, reduced first.

    Inside a traced model it records a ``popsim::identity_loss`` marker, so popsim knows which
    value is the loss (useful when a model combines several losses or computes its own); run
    eagerly on the CPU it only reduces ``x``. A loss must be a float scalar, so with
    ``reduction="none"`` ``x`` must already be one, or the training model fails to compile.

    Args:
        x: The loss values.
        reduction: ``"sum"`` or ``"mean"`` to reduce ``x`` over all its elements, or ``"none"``
            to take ``x`` as it is.

    Returns:
        The reduced loss (``x`` itself, eagerly with ``"none"``), which the model may return
        or compute further with.

    Raises:
        OptionError: when ``reduction`` is not ``"sum"``, ``"mean"`` or ``"none"``.
    """
    if reduction not in _REDUCTIONS:
        raise OptionError(f"identity_loss reduction must be 'sum', 'mean' or 'none', "
                          f"got {reduction!r}.", option="identity_loss.reduction")
    if torch.jit.is_tracing():
        return torch.ops.popsim.identity_loss(x, reduction)
    return x if reduction == "none" else _reduce(x, reduction)
