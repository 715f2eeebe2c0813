"""Python values that PyTorch 1.13's tracer cannot take, made as eager makes them.

- **Bools given to an op as a number.** The tracer records `x.masked_fill(mask,
  True)`, `mask == True`, `torch.full(size, False)` or `torch.where(c, True,
  False)` with a bool constant where the op's schema takes a number (Scalar);
  the alias analysis that ends torch.jit.trace then stops with "INTERNAL ASSERT
  FAILED ... We don't have an op for aten::masked_fill", so a plain trace (and
  PopTorch) cannot trace such a model.
- **Sizes.** While tracing, `x.size(2)` and `x.shape[0]` are 0-d tensors, which
  ops taking a list of ints refuse: `F.max_pool1d(h, h.size(2))` (TextCNN's
  pooling over time) or `x.roll(x.shape[0] // 2, 0)` fail with "must be tuple of
  ints, not Tensor".

When a trace fails so, popsim traces again under a TorchFunctionMode that gives
each op what eager gives it: sizes as Python ints (popsim compiles fixed shapes,
so they are constants of the program anyway), and a bool an op takes as a
number as a 0-d bool tensor, which the tracer records as a constant of the op's
Tensor form (or the number it converts to) and which takes part in type
promotion exactly as a Python bool does (bool has one dtype). Which arguments
are numbers comes from the op's schemas: a bool goes where some schema that
fits the call's tensors takes a number there and none takes a bool
(keepdim=True and other flags stay bools).
"""

import contextlib
import functools
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from torch.overrides import TorchFunctionMode

# Made once, outside any trace: torch.tensor() inside a trace warns that its
# result is a constant.
_AS_TENSOR = {True: torch.tensor(True), False: torch.tensor(False)}


def _schema_names(function_name: str) -> List[str]:
    """The aten operators a Python function or Tensor method may be: `masked_fill`,
    `__and__` (an aten op of its own), `__eq__` as `eq`, `__radd__` as `add`."""
    names = [function_name]
    if function_name.startswith("__") and function_name.endswith("__"):
        bare = function_name[2:-2]
        names.append(bare)
        if bare.startswith("r"):
            names.append(bare[1:])
    return [f"aten::{name}" for name in names]


@functools.lru_cache(maxsize=None)
def _schemas(function_name: str) -> Tuple[Any, ...]:
    for name in _schema_names(function_name):
        schemas = torch._C._jit_get_schemas_for_operator(name)
        if schemas:
            return tuple(schemas)
    return ()


def _fits(schema: Any, args: Sequence[Any]) -> bool:
    """Whether the schema takes each tensor of the call's positional arguments as a tensor."""
    if len(args) > len(schema.arguments):
        return False
    return all("Tensor" in str(argument.type)
               for argument, value in zip(schema.arguments, args)
               if isinstance(value, torch.Tensor))


def _takes_a_number(schemas: Sequence[Any], args: Sequence[Any],
                    position: Optional[int], name: Optional[str]) -> bool:
    kinds = set()
    for schema in schemas:
        if not _fits(schema, args):
            continue
        for index, argument in enumerate(schema.arguments):
            if (position is not None and index == position and not argument.kwarg_only) or (
                    name is not None and argument.name == name):
                kinds.add(str(argument.type).replace("Optional[", "").rstrip("]"))
    return "number" in kinds and "bool" not in kinds


def _with_bool_numbers(function: Callable[..., Any], args: Sequence[Any],
                       kwargs: Dict[str, Any]) -> Tuple[Sequence[Any], Dict[str, Any]]:
    """args and kwargs with each bool the op takes as a number made a 0-d bool tensor."""
    positions = [i for i, value in enumerate(args) if type(value) is bool]
    names = [name for name, value in kwargs.items() if type(value) is bool]
    if not positions and not names:
        return args, kwargs
    schemas = _schemas(getattr(function, "__name__", ""))
    if not schemas:
        return args, kwargs
    new_args = list(args)
    for i in positions:
        if _takes_a_number(schemas, args, i, None):
            new_args[i] = _AS_TENSOR[args[i]]
    new_kwargs = dict(kwargs)
    for name in names:
        if _takes_a_number(schemas, args, None, name):
            new_kwargs[name] = _AS_TENSOR[kwargs[name]]
    return new_args, new_kwargs


_SIZES = (torch.Tensor.size, torch.Tensor.shape.__get__)  # type: ignore[attr-defined]
# (Not in torch's type stubs.)
_set_tracing_state: Callable[[Any], None] = getattr(torch._C, "_set_tracing_state")


class _EagerPythonValues(TorchFunctionMode):
    def __torch_function__(self, func: Callable[..., Any], types: Any, args: Sequence[Any] = (),
                           kwargs: Optional[Dict[str, Any]] = None) -> Any:
        if func in _SIZES:  # read untraced: ints, as in eager
            state = torch._C._get_tracing_state()
            _set_tracing_state(None)
            try:
                return func(*args, **(kwargs or {}))
            finally:
                _set_tracing_state(state)
        args, kwargs = _with_bool_numbers(func, args, kwargs or {})
        return func(*args, **kwargs)


# The alias analysis' words when an op was recorded with a bool where its schema takes a
# number.
_BOOL_NUMBER_FAILURE = re.compile(
    r"We don't have an op for aten::\w+ but it isn't a special case\.\s+"
    r"Argument types: [^\n]*\bbool\b")


def failed_on_python_values(error: BaseException) -> bool:
    """Whether a trace failed on an op recorded with a bool as a number, or with a
    TypeError about a tensor (a size, which is a tensor while tracing, where an op or
    torch.nn.functional takes a number or a list of them)."""
    if isinstance(error, TypeError):
        return "tensor" in str(error).lower()
    return isinstance(error, RuntimeError) and _BOOL_NUMBER_FAILURE.search(str(error)) is not None


@contextlib.contextmanager
def eager_python_values() -> Iterator[None]:
    """While tracing: sizes as ints, and bools an op takes as numbers as 0-d bool tensors."""
    with _EagerPythonValues():
        yield
