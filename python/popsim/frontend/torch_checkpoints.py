"""torch.utils.checkpoint while popsim traces: the checkpointed function's inputs and
outputs become popsim recomputation checkpoints.

PyTorch's checkpoint stores a function's inputs, runs it without keeping what it computes
inside, and runs it again in the backward pass. popsim builds the backward pass itself, from
the trace, so the same intent is a recomputation checkpoint (popsim.recomputationCheckpoint)
on the function's inputs and outputs: with ``Options.Training.recomputation(True)`` the
backward pass recomputes what lies between them instead of stashing it, and either way the
values and gradients are those of the function. PyTorch's tracer cannot record the reentrant
variant at all (``use_reentrant=True``, 1.13's default, fails with ``unordered_map::at``).

Both variants are replaced where ``checkpoint`` calls them (``CheckpointFunction.apply`` and
``_checkpoint_without_reentrant``), so models that imported ``checkpoint`` or
``checkpoint_sequential`` by name are covered too. As in eager PyTorch, a reentrant checkpoint
none of whose inputs requires a gradient gives outputs that do not either: its function's
parameters get no gradient from it (PyTorch warns; so does popsim).
"""

import contextlib
import warnings
from typing import Any, Callable, Iterator

import torch
import torch.utils.checkpoint as _checkpoint

from popsim.frontend.tensor_ops import recomputationCheckpoint


def _checkpointed(value: Any) -> Any:
    """`value` with each floating-point tensor in it a recomputation checkpoint."""
    if isinstance(value, torch.Tensor):
        return recomputationCheckpoint(value) if value.is_floating_point() else value
    if isinstance(value, (tuple, list)):
        return type(value)(_checkpointed(item) for item in value)
    return value


def _run_reentrant(function: Callable[..., Any], preserve_rng_state: bool, *args: Any) -> Any:
    if not any(isinstance(arg, torch.Tensor) and arg.requires_grad for arg in args):
        # Eager's CheckpointFunction runs the function under no_grad: nothing in it trains.
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=3)
        with torch.no_grad():
            return function(*args)
    return _run_without_reentrant(function, preserve_rng_state, *args)


def _run_without_reentrant(function: Callable[..., Any], preserve_rng_state: bool = True,
                           *args: Any, **kwargs: Any) -> Any:
    del preserve_rng_state  # popsim's recomputation redraws the forward pass's random values
    return _checkpointed(function(*_checkpointed(args), **kwargs))


@contextlib.contextmanager
def as_recomputation_checkpoints() -> Iterator[None]:
    """While inside, torch.utils.checkpoint's checkpoints are popsim's (see the module doc)."""
    function_class = _checkpoint.CheckpointFunction
    saved_apply = function_class.__dict__.get("apply")
    saved_without = _checkpoint._checkpoint_without_reentrant
    function_class.apply = staticmethod(_run_reentrant)  # type: ignore[assignment]
    _checkpoint._checkpoint_without_reentrant = _run_without_reentrant
    try:
        yield
    finally:
        if saved_apply is None:
            del function_class.apply  # inherited from torch.autograd.Function again
        else:
            function_class.apply = saved_apply  # type: ignore[assignment]
        _checkpoint._checkpoint_without_reentrant = saved_without
