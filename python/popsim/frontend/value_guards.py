"""Python values forward() reads from tensors of the model's data, checked at run time.

A trace records tensor operations only. ``if x.sum() > 0:``, ``int(t)`` or ``t.item()`` in
forward() give the compiling call's value, and the compiled program would keep it for every
later call, silently (torch's tracer only warns). While popsim traces, each such read of a
tensor computed from the model's inputs, parameters or buffers is recorded with its value;
the model's first output then passes through popsim::value_guard, which checks on the
device, at every call, that the tensor still gives that value, and stops the run with an
ExecutionError naming the line when it does not. Reads that keep their value (an assert on
the data, a flag that never changes) cost a check and nothing else.

Reads of tensors that depend only on constants and shapes are not checked: their values
cannot change. Slices bounded by tensors (``t[e : e + n]``) read no Python value: they
compile with the start as data (frontend/tensor_bound_slices), so ``__index__`` is left alone.
"""

import contextlib
import math
import traceback
import warnings
from typing import Any, Callable, Iterator, List, NamedTuple, Tuple

import torch

from popsim.api.option_fields import DEFAULT_SOURCE_LOCATION_EXCLUDES
from popsim.frontend import half_tracing as _half_tracing
from popsim.frontend.ops import LIBRARY as _LIBRARY

# `file`, `line` and `function` are the read's: the check is traced where forward() returns,
# but its errors name the line that read the value.
_LIBRARY.define("value_guard(Tensor result, Tensor value, float min, float max, str what, "
                "str file, int line, str function) -> Tensor")
_LIBRARY.impl("value_guard", lambda result, *_: result.clone(), "CPU")
_LIBRARY.impl("value_guard", lambda result, *_: torch.empty_like(result), "Meta")

# The tensor methods that hand a tensor's value to Python.
_READS = {"__bool__": "bool", "__int__": "int", "__float__": "float", "item": "number"}
# Ops whose results are a tensor's metadata, known when the model compiles.
_METADATA = {"prim::Constant", "aten::size", "aten::dim", "aten::numel", "prim::device",
             "prim::dtype", "prim::shape"}
# Where the model's data enters the trace: its inputs, parameters and buffers.
_DATA = {"prim::Param", "prim::TracedAttr", "prim::GetAttr"}


class Read(NamedTuple):
    """Where forward() read a value: the innermost frame outside torch and popsim."""
    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "<unknown location>"


class Guard(NamedTuple):
    """A value the trace fixed: the tensor it came from (as the check reads it), the
    range the check accepts, and where it was read."""
    tensor: torch.Tensor
    low: float
    high: float
    what: str
    read: Read


def depends_on_data(tensor: torch.Tensor) -> bool:
    """Whether a traced tensor is computed from the model's inputs, parameters or buffers."""
    if torch._C._get_tracing_state() is None:
        return False  # untraced code (a CPU op's function), whose values are not compiled
    root = torch._C._get_value_trace(tensor)  # type: ignore[attr-defined]  # not in the stubs
    stack, seen = [root], set()
    try:
        while stack:
            value = stack.pop()
            if value.unique() in seen:
                continue
            seen.add(value.unique())
            node = value.node()
            kind = node.kind()
            if kind in _DATA:
                if isinstance(value.type(), torch._C.TensorType):
                    return True
                continue
            if kind not in _METADATA:
                stack.extend(node.inputs())
        return False
    finally:
        del root, stack  # the trace's values must not outlive its graph


def _user_line() -> Read:
    """The innermost frame outside torch and popsim (the directories an op's source line
    skips by default): the line of forward() that read."""
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(DEFAULT_SOURCE_LOCATION_EXCLUDES):
            return Read(frame.filename, frame.lineno or 0, frame.name)
    return Read("", 0, "")


def _guard(tensor: torch.Tensor, read: str, value: Any) -> Guard:
    """The check that `tensor` still gives `value` when read as `read` ("bool", "int", ...)."""
    where = _user_line()
    # (The error's site, the check's, is the read's line: "check_range at model.py:12 ...".)
    what = (f"forward() read a tensor computed from the model's data as a Python "
            f"{read} ({value!r} when the model compiled); the compiled program keeps that "
            f"value, and this call's data gives another. Branch on the device instead "
            f"(torch.where, popsim.cond), or compute the value on the host and pass it as an "
            f"input. The tensor this call")
    if read == "bool" or isinstance(value, bool):
        what += " (1 for True, 0 for False)"
        # bool(t) is t != 0 (NaN included), which no single range of t says.
        flag = tensor if tensor.dtype == torch.bool else tensor.ne(0)
        return Guard(flag.reshape(()), float(bool(value)), float(bool(value)), what, where)
    flat = tensor.reshape(())
    if not tensor.is_floating_point():
        return Guard(flat, float(value), float(value), what, where)
    if read == "int":  # int() truncates towards zero: the values it gives this int
        low, high = (float(value), math.nextafter(value + 1.0, -math.inf)) if value > 0 else (
            (math.nextafter(value - 1.0, math.inf), float(value)) if value < 0 else
            (math.nextafter(-1.0, math.inf), math.nextafter(1.0, -math.inf)))
        return Guard(flat, low, high, what, where)
    # A float: the device computes it with its own kernels, which may round differently.
    tolerance = (1e-3 if tensor.dtype == torch.float16 else 1e-5) * abs(value) + 1e-7
    return Guard(flat, value - tolerance, value + tolerance, what, where)


@contextlib.contextmanager
def recording() -> Iterator[List[Guard]]:
    """Records a guard for each data-dependent read in the code run inside; the list fills
    as it runs.

    The reads are Tensor's own methods, replaced on torch.Tensor for the while (a
    TorchFunctionMode would also see them, but its handler's frame would hide the model's
    variable names from the tracer, which names the graph's values after them). Each
    replacement is deleted afterwards, so that torch.Tensor inherits torch's again."""
    guards: List[Guard] = []

    def reader(name: str, read: str) -> Callable[[torch.Tensor], Any]:
        original = getattr(torch._C._TensorBase, name)

        def read_value(tensor: torch.Tensor) -> Any:
            if torch._C._get_tracing_state() is None:  # another thread, or untraced code
                return original(tensor)
            if _half_tracing.reads_uncomputed(tensor):
                raise _half_tracing.UncomputedValueRead(str(_user_line()))
            with warnings.catch_warnings():
                # The tracer's warning that the value is fixed: popsim checks it instead.
                warnings.simplefilter("ignore", torch.jit.TracerWarning)
                value = original(tensor)
                if depends_on_data(tensor):
                    guards.append(_guard(tensor, read, value))
            return value

        return read_value

    replaced = []
    try:
        for name, read in _READS.items():
            assert name not in vars(torch.Tensor), name  # inherited, so deleting restores it
            setattr(torch.Tensor, name, reader(name, read))
            replaced.append(name)
        yield guards
    finally:
        for name in replaced:
            delattr(torch.Tensor, name)


def attached(outputs: Tuple[torch.Tensor, ...], guards: List[Guard]) -> Tuple[torch.Tensor, ...]:
    """The outputs with every guard checked on the way to the first one."""
    if not guards:
        return outputs
    if not outputs:
        warnings.warn(
            f"popsim: forward() read {len(guards)} tensor(s) computed from the model's data as "
            f"Python values (forward() at {guards[0].read}), which the compiled program "
            f"keeps; a model that returns no tensor cannot check them at run time.",
            stacklevel=2)
        return outputs
    first = outputs[0]
    for guard in guards:
        first = torch.ops.popsim.value_guard(first, guard.tensor, guard.low, guard.high,
                                             guard.what, *guard.read)
    return (first,) + tuple(outputs[1:])
