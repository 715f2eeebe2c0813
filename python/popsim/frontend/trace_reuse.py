"""Reusing one trace across the planners' cost-only compilations.

Tracing runs the model's forward() on the host (the float16 ops emulated in
float32): for BERT-Large at a micro-batch of 8 it takes about 6 s, while
importing the trace and compiling it cost-only takes about 0.3 s. The
planners compile one model many times with options that do not change its
trace (the pipeline stages as Stage groups of the same blocks, replication,
gradient accumulation, device iterations, recomputation, tensor locations,
memory proportions), so inside ``reusing_traces()`` a cost-only trace is kept
and returned again when the same model is traced on inputs of the same
shapes and dtypes, with the same annotations and flags.

Only cost-only traces (``shapes_only``) are reused. A cost-only trace runs
on the micro-batch the planner was given (size_job.cost_only_call), whose
values the model's code may read (checks, masks, branches), so the key holds
a digest of the inputs' bytes beside their shapes and dtypes; it names
everything else a trace depends on: each weight and buffer by name, shape,
dtype and whether it trains, each module's class, train flag and hooks
(BeginBlock annotations are hooks), the call's structure and non-tensor
values, and the tracing flags. Weights are not keyed by storage: a
compilation puts back the buffers its trace ran with as new tensors (batch
norm's statistics), and a cost-only compilation never reads weights' values.
"""

import contextlib
import hashlib
from typing import Any, Dict, Hashable, Iterator, Optional, Sequence, Tuple

import torch

# The traces kept by the innermost reusing_traces(), or None outside it.
_kept: Optional[Dict[Hashable, Any]] = None


@contextlib.contextmanager
def reusing_traces() -> Iterator[None]:
    """Within it, a cost-only trace of a model is traced once per key (see the module's doc)."""
    global _kept
    outer = _kept
    _kept = {} if outer is None else outer
    try:
        yield
    finally:
        _kept = outer


def _module_state(model: torch.nn.Module) -> Tuple[Hashable, ...]:
    modules = tuple(
        (name, type(module).__qualname__, module.training,
         repr(getattr(module, "_popsim_block", None)),
         tuple(repr(hook) for hook in module._forward_pre_hooks.values()),
         tuple(repr(hook) for hook in module._forward_hooks.values()))
        for name, module in model.named_modules())
    tensors = tuple((name, tuple(tensor.shape), tensor.dtype, tensor.requires_grad)
                    for name, tensor in [*model.named_parameters(), *model.named_buffers()])
    return modules + tensors


def key(model: torch.nn.Module, names: Sequence[str], structure: Any,
        constants: Dict[int, Any], tensors: Sequence[torch.Tensor],
        flags: Tuple[bool, ...]) -> Hashable:
    """What a cost-only trace of `model` on `tensors` depends on."""
    return (type(model).__qualname__, _module_state(model), tuple(names), repr(structure),
            repr(sorted(constants.items())),
            tuple((tuple(t.shape), t.dtype, _digest(t)) for t in tensors), flags)


def _digest(tensor: torch.Tensor) -> bytes:
    """A digest of a tensor's values (a micro-batch is a few MB at most)."""
    return hashlib.blake2b(tensor.detach().contiguous().numpy().tobytes(),
                           digest_size=16).digest()


def kept(trace_key: Hashable) -> Optional[Any]:
    """The trace kept under `trace_key`, or None (also outside reusing_traces())."""
    return None if _kept is None else _kept.get(trace_key)


def keep(trace_key: Hashable, traced: Any) -> None:
    """Keeps a trace for the rest of the innermost reusing_traces() (no-op outside it)."""
    if _kept is not None:
        _kept[trace_key] = traced


def active() -> bool:
    return _kept is not None
