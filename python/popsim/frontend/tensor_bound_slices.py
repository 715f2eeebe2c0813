"""Slices whose bounds are tensors, ``t[e : e + n]``, traced as dynamic slices.

Eager PyTorch reads a tensor bound as a Python number, which a trace records as
``aten::Int`` of runtime data: a compiled program has no such number. PopTorch turns such
a slice into a dynamic slice when its length is a constant; popsim does too while it traces:
the start stays data of the program (it may change from call to call), the length ``n``
is the example call's ``stop - start``, and the program checks on every call that
``stop - start`` is still ``n`` (an ExecutionError naming the slice otherwise, rather than a
slice of another length computed as this one). Other forms (a tensor step, one tensor bound
and an open end, several tensor-bounded slices in one index) are refused with the reason.
"""

import contextlib
import os
import traceback
import warnings
from typing import Any, Iterator, Tuple

import torch

from popsim.api.errors import UnsupportedOperationError
from popsim.frontend.ops import LIBRARY as _LIBRARY

# start + (stop - start) checked to be `size` when the model runs, as int64: the first
# position of the slice. Its check is an op of the program (CheckRange), kept because
# the positions read its result.
_LIBRARY.define("checked_slice_start(Tensor start, Tensor stop, int size, str what) -> Tensor")
_LIBRARY.impl("checked_slice_start", lambda start, stop, size, what: start.clone(), "CPU")
_LIBRARY.impl("checked_slice_start", lambda start, stop, size, what: torch.empty_like(start),
              "Meta")


def _refused(reason: str) -> UnsupportedOperationError:
    """The error for a slice popsim cannot compile, at the user's line."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    for frame in reversed(traceback.extract_stack()[:-1]):
        path = os.path.abspath(frame.filename)
        if not path.startswith((here, torch_dir)):
            return UnsupportedOperationError(f"{reason} (at {frame.filename}:{frame.lineno})")
    return UnsupportedOperationError(reason)


def _is_bound(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


def _has_tensor_bound(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(item, slice) and (_is_bound(item.start) or _is_bound(item.stop)
                                            or _is_bound(item.step)) for item in items)


def _as_position(value: torch.Tensor, what: str) -> torch.Tensor:
    if value.numel() != 1 or value.is_floating_point() or value.is_complex():
        raise _refused(f"A slice's {what} is a {value.dtype} tensor of shape "
                            f"{list(value.shape)}; popsim slices with a tensor bound when it is "
                            "an integer tensor of one element (t[e : e + n]).")
    return value.reshape(()).long()


def _example_value(value: torch.Tensor) -> int:
    """The example call's value of a traced tensor, read without recording it in the trace."""
    state = torch._C._get_tracing_state()
    torch._C._set_tracing_state(None)  # type: ignore[attr-defined]  # in torch, not its stubs
    try:
        return int(value.item())
    finally:
        torch._C._set_tracing_state(state)  # type: ignore[attr-defined]


def _dimension_of(index: Tuple[Any, ...], position: int, rank: int) -> int:
    """The dimension index[position] slices: items before an Ellipsis count from the start,
    items after it from the end; None adds no dimension of the tensor."""
    if any(item is Ellipsis for item in index[:position]):
        after = [item for item in index[position + 1:] if item is not None]
        return rank - 1 - len(after)
    return sum(1 for item in index[:position] if item is not None)


def _sliced(original: Any, tensor: torch.Tensor, index: Any) -> torch.Tensor:
    items: Tuple[Any, ...] = index if isinstance(index, tuple) else (index,)
    bounded = [i for i, item in enumerate(items)
               if isinstance(item, slice) and (_is_bound(item.start) or _is_bound(item.stop)
                                               or _is_bound(item.step))]
    if len(bounded) > 1:
        raise _refused("An index slices several dimensions with tensor bounds; popsim "
                            "compiles one tensor-bounded slice per index (slice the dimensions "
                            "one after the other).")
    position = bounded[0]
    cut: slice = items[position]
    if _is_bound(cut.step):
        raise _refused("A slice's step is a tensor; popsim compiles slices whose step is a "
                            "Python int (its start may be a tensor: t[e : e + n : 2]).")
    if not (_is_bound(cut.start) and _is_bound(cut.stop)):
        raise _refused("A slice has one tensor bound and one bound that is not a tensor, "
                            "so its length would change with the tensor's value; popsim "
                            "compiles slices of one length: write both bounds from the same "
                            "tensor (t[e : e + n]), or use popsim.dynamic_slice(t, dim, e, n, "
                            "step).")
    step = 1 if cut.step is None else cut.step
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise _refused(f"A slice with tensor bounds has step {step!r}; popsim compiles "
                            "positive int steps.")
    start = _as_position(cut.start, "start")
    stop = _as_position(cut.stop, "stop")
    size = _example_value(stop - start)
    dim = _dimension_of(items, position, tensor.dim())
    length = tensor.shape[dim] if 0 <= dim < tensor.dim() else 0
    if size < 1 or size > length:
        raise _refused(f"A slice with tensor bounds is {size} long in the example call "
                            f"(stop - start) along dimension {dim} of length {length}; popsim "
                            "compiles slices of at least 1 and at most the dimension's length.")
    what = (f"the slice [start : stop : {step}] of dimension {dim}, compiled as {size} long "
            f"(stop - start in the example call), must keep that length")
    first = torch.ops.popsim.checked_slice_start(start, stop, size, what)
    positions = first + torch.arange(0, size, step)
    selected = torch.ops.popsim.dynamic_select(tensor, dim, positions)
    rest = items[:position] + (slice(None),) + items[position + 1:]
    if all(isinstance(item, slice) and item == slice(None) for item in rest):
        return selected
    return original(selected, rest)


@contextlib.contextmanager
def tensor_bound_slices() -> Iterator[None]:
    """While popsim traces, t[e : e + n] with e a tensor slices as a dynamic slice."""
    original = torch.Tensor.__getitem__

    def getitem(self: torch.Tensor, index: Any) -> Any:
        # (Only this thread's trace: the tracing state is per thread, and other threads
        # index eagerly meanwhile.)
        if torch._C._get_tracing_state() is not None and _has_tensor_bound(index):
            with warnings.catch_warnings():  # (the checks read shapes, fixed in the program)
                warnings.simplefilter("ignore", torch.jit.TracerWarning)
                return _sliced(original, self, index)
        return original(self, index)

    torch.Tensor.__getitem__ = getitem  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        torch.Tensor.__getitem__ = original  # type: ignore[method-assign, assignment]
