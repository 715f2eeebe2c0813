"""PopTorch's CPU ops: ``popsim.CPU(fn, ID)`` runs a Python function on the
host in the middle of an inference model. Eagerly it is just ``fn``; when
popsim compiles the model, ``fn`` runs once (untraced) to learn its results'
types, and the program gets a host_call op: at run time the simulated IPU
streams the inputs to the host, which runs ``fn`` on them and streams its
results back (the simulated clock charges both transfers)."""

import atexit
import threading
from typing import Any, Callable, List, Sequence

import torch

from popsim import _C
from popsim.api import device as _device
from popsim.frontend.ops import LIBRARY as _LIBRARY
from popsim.api.errors import InputError

_LIBRARY.define("host_call(Tensor[] inputs, str id, str output_dtypes, int[] output_ranks, "
                "int[] output_shapes) -> Tensor[]")

# The results of the call being traced, which the op returns to the trace.
_TRACED = threading.local()


def _traced_results(inputs: List[torch.Tensor], id: str, output_dtypes: str,
                    output_ranks: List[int], output_shapes: List[int]) -> List[torch.Tensor]:
    return [result.clone() for result in _TRACED.results]


_LIBRARY.impl("host_call", _traced_results, "CPU")

_DTYPE_NAMES = {torch.float32: "f32", torch.int32: "i32", torch.int64: "i64", torch.bool: "bool"}

atexit.register(_C.clear_host_functions)  # before the Python functions die


def _untraced(fn: Callable[..., Any], inputs: Sequence[torch.Tensor]) -> Any:
    """fn(*inputs) with the tracer paused, so its ops stay on the host."""
    state = torch._C._get_tracing_state()
    torch._C._set_tracing_state(None)  # type: ignore[attr-defined]  # in torch, not its stubs
    try:
        with torch.no_grad():
            return fn(*[i.detach() for i in inputs])
    finally:
        torch._C._set_tracing_state(state)  # type: ignore[attr-defined]


class CPU:
    """Runs ``layer_to_call`` on the host inside an inference model, as
    PopTorch's ``poptorch.CPU``: call the instance in ``forward`` with tensor
    arguments; it returns what ``layer_to_call`` returns (a tensor, or a tuple
    or list of tensors). Every call of the compiled model runs the function
    once per use per device iteration, on the host. ``ID`` names the op in
    errors; a later CPU op with the same ID replaces the function."""

    def __init__(self, layer_to_call: Callable, ID: str):
        """Wraps ``layer_to_call`` as a CPU op named ``ID``.

        A ``torch.nn.Module`` given as ``layer_to_call`` has its parameters' ``requires_grad``
        turned off: host code has nothing to train.

        Args:
            layer_to_call: The function (or module) to run on the host. Given tensors, it
                returns a float32, int32, int64 or bool tensor, or a tuple or list of them, of
                the same types on every call.
            ID: A non-empty name for the op, used in errors; a later CPU op with the same ID
                replaces the function.

        Raises:
            InputError: when ``layer_to_call`` is not callable or ``ID`` is not a non-empty
                ``str``.
        """
        if not callable(layer_to_call):
            raise InputError(f"popsim.CPU expects a function to call, got {type(layer_to_call)}.")
        if not isinstance(ID, str) or not ID:
            raise InputError(f"popsim.CPU expects a non-empty str ID, got {ID!r}.")
        self._layer_to_call = layer_to_call
        if isinstance(layer_to_call, torch.nn.Module):
            layer_to_call.requires_grad_(False)  # host code: no parameters to train
        self._ID = ID

    @property
    def ID(self) -> str:
        """The op's name, as given to the constructor."""
        return self._ID

    def __call__(self, *inputs: Any) -> Any:
        if not _device.isRunningOnIpu():
            return self._layer_to_call(*inputs)
        for position, value in enumerate(inputs):
            if not isinstance(value, torch.Tensor):
                raise InputError(f"The CPU op '{self._ID}' takes tensors; argument {position} is "
                                 f"{type(value).__name__}.")
        results = _untraced(self._layer_to_call, inputs)
        single = isinstance(results, torch.Tensor)
        results = [results] if single else list(results)
        for position, result in enumerate(results):
            if not isinstance(result, torch.Tensor) or result.dtype not in _DTYPE_NAMES:
                raise InputError(
                    f"The CPU op '{self._ID}' must return float32, int32, int64 or bool tensors; "
                    f"result {position} is "
                    f"{result.dtype if isinstance(result, torch.Tensor) else type(result).__name__}.")
        _C.register_host_function(self._ID, self._run_on_host)
        _TRACED.results = results
        try:
            outputs = torch.ops.popsim.host_call(
                list(inputs), self._ID, ",".join(_DTYPE_NAMES[r.dtype] for r in results),
                [r.dim() for r in results], [d for r in results for d in r.shape])
        finally:
            _TRACED.results = []
        if single:
            return outputs[0]
        return tuple(outputs) if isinstance(results, tuple) else list(outputs)

    def _run_on_host(self, inputs: List[torch.Tensor], outputs: List[torch.Tensor]) -> None:
        """The host's side of one call: the op's input buffers in, its output
        buffers filled (results must keep the traced types)."""
        results = self._layer_to_call(*[i.clone() for i in inputs])
        results = [results] if isinstance(results, torch.Tensor) else list(results)
        if len(results) != len(outputs):
            raise ValueError(f"it returned {len(results)} tensor(s), and {len(outputs)} when "
                             "the model was compiled")
        for position, (result, output) in enumerate(zip(results, outputs)):
            if (not isinstance(result, torch.Tensor) or result.shape != output.shape
                    or result.dtype != output.dtype):
                got = (f"{result.dtype}{list(result.shape)}" if isinstance(result, torch.Tensor)
                       else type(result).__name__)
                raise ValueError(f"result {position} is {got}, and was {output.dtype}"
                                 f"{list(output.shape)} when the model was compiled: a CPU op "
                                 "must return the same types on every call")
            output.copy_(result)
