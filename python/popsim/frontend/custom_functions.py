"""torch.autograd.Function while popsim traces: its forward becomes ordinary ops and its
backward the gradient popsim's autodiff uses.

PyTorch's tracer records a Function as a call into Python that popsim cannot compile. While
popsim traces, ``Function.apply`` instead runs ``forward`` under ``no_grad`` (as eager autograd
does), so its ops are traced and pass no gradient on, and, in a training model, runs
``backward`` once on placeholders for the outputs' gradients. The program gets
``custom_gradient(inputs, outputs, placeholders, gradients)``: the outputs, whose gradient
with respect to each input is the traced backward with the real output gradients in place of
the placeholders (ir/ops/custom_gradient.cpp). The backward's results are checked, summed to
their input's shape and cast to its dtype as eager autograd does. What the trace cannot keep
is refused with the Function's name: ``mark_dirty`` (forward writing an input in place), and a
backward that reads a Python value from a gradient (traced once, it would keep the value the
stand-in gave; compiler/training/custom_gradients.cpp refuses it).
"""

import contextlib
import functools
import sys
import types
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import torch

from popsim.api.errors import CompilationError
from popsim.frontend.ops import LIBRARY as _LIBRARY

_LIBRARY.define("gradient_placeholder(Tensor output) -> Tensor")
_LIBRARY.impl("gradient_placeholder", torch.zeros_like, "CPU")
_LIBRARY.impl("gradient_placeholder", torch.empty_like, "Meta")
_LIBRARY.define("custom_gradient(Tensor[] inputs, Tensor[] outputs, Tensor[] placeholders, "
                "Tensor[] gradients, str name) -> Tensor[]")
_LIBRARY.impl("custom_gradient", lambda inputs, outputs, *rest: [o.clone() for o in outputs],
              "CPU")
_LIBRARY.impl("custom_gradient", lambda inputs, outputs, *rest: [torch.empty_like(o)
                                                                  for o in outputs], "Meta")

# torch.autograd.Function's own apply (torch._C._FunctionBase's), for calls outside a trace.
_EAGER_APPLY = torch._C._FunctionBase.__dict__["apply"]


class _TracedContext:
    """The ``ctx`` a Function's forward and backward share while popsim traces, with the
    parts of torch.autograd.function.FunctionCtx that a trace can keep."""

    def __init__(self, function: str, needs_input_grad: Tuple[bool, ...]) -> None:
        self._function = function
        self.needs_input_grad = needs_input_grad
        self.saved_tensors: Tuple[Optional[torch.Tensor], ...] = ()
        self.non_differentiable: List[torch.Tensor] = []

    def save_for_backward(self, *tensors: Optional[torch.Tensor]) -> None:
        for index, tensor in enumerate(tensors):
            if tensor is not None and not isinstance(tensor, torch.Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument "
                                f"{index} is of type {type(tensor).__name__}")
        self.saved_tensors = tensors

    @property
    def saved_variables(self) -> Tuple[Optional[torch.Tensor], ...]:
        return self.saved_tensors

    def save_for_forward(self, *tensors: Optional[torch.Tensor]) -> None:
        pass  # forward-mode AD, which popsim does not run

    def mark_non_differentiable(self, *tensors: torch.Tensor) -> None:
        self.non_differentiable.extend(tensors)

    def set_materialize_grads(self, value: bool) -> None:
        # popsim's backward always receives tensors: zeros for an output the loss does not
        # depend on, which is what materialised gradients are.
        del value

    def mark_dirty(self, *tensors: torch.Tensor) -> None:
        raise CompilationError(
            f"The torch.autograd.Function {self._function} writes its input in place "
            f"(ctx.mark_dirty). popsim traces a Function's forward and backward as separate "
            f"ops: write forward out of place (return a new tensor instead of modifying the "
            f"input).")


def _gradient_for(function: str, index: int, argument: torch.Tensor, gradient: Any,
                  where: str) -> torch.Tensor:
    """The backward's result for `argument` as eager autograd takes it: summed to the
    argument's shape where it was broadcast, and in the argument's dtype."""
    if not isinstance(gradient, torch.Tensor):
        raise CompilationError(
            f"The backward of the torch.autograd.Function {function} (applied at {where}) "
            f"returned a {type(gradient).__name__} as gradient {index}; return a tensor of "
            f"shape {list(argument.shape)}, or None for no gradient.")
    if gradient.shape != argument.shape:
        try:
            gradient = gradient.sum_to_size(argument.shape)
        except RuntimeError:
            raise CompilationError(
                f"The backward of the torch.autograd.Function {function} (applied at {where}) "
                f"returned an invalid gradient at index {index}: got {list(gradient.shape)} but "
                f"expected shape compatible with {list(argument.shape)} (eager PyTorch raises "
                f"here too). Return a gradient of the input's shape.") from None
    return gradient.to(argument.dtype) if gradient.dtype != argument.dtype else gradient


def _apply(function: type, training: bool, args: Sequence[Any], where: str) -> Any:
    name = function.__name__
    needs = tuple(training and torch.is_grad_enabled() and isinstance(a, torch.Tensor)
                  and a.requires_grad for a in args)
    ctx = _TracedContext(name, needs)
    with torch.no_grad():
        result = function.forward(ctx, *args)  # type: ignore[attr-defined]
    outputs = result if isinstance(result, tuple) else (result,)
    excluded = {id(t) for t in ctx.non_differentiable}
    differentiable = [o for o in outputs if isinstance(o, torch.Tensor) and o.is_floating_point()
                      and id(o) not in excluded]
    if not any(needs) or not differentiable:
        return result
    placeholders = {id(o): torch.ops.popsim.gradient_placeholder(o) for o in differentiable}
    output_grads = [placeholders.get(id(o)) if isinstance(o, torch.Tensor) else None
                    for o in outputs]
    with torch.no_grad():
        output_grads = [torch.zeros_like(o) if g is None and isinstance(o, torch.Tensor) else g
                        for o, g in zip(outputs, output_grads)]
        grads = function.backward(ctx, *output_grads)  # type: ignore[attr-defined]
        grads = grads if isinstance(grads, tuple) else (grads,)
        while len(grads) > len(args) and grads[-1] is None:
            grads = grads[:-1]  # eager autograd ignores extra Nones
        if len(grads) != len(args):
            raise CompilationError(
                f"The backward of the torch.autograd.Function {name} (applied at {where}) "
                f"returned an incorrect number of gradients (expected {len(args)}, got "
                f"{len(grads)}): return one per argument of forward, None for the arguments "
                f"without one.")
        inputs, gradients = [], []
        for index, (argument, needed, gradient) in enumerate(zip(args, needs, grads)):
            if needed and gradient is not None:
                inputs.append(argument)
                gradients.append(_gradient_for(name, index, argument, gradient, where))
    if not inputs:
        return result
    passed = torch.ops.popsim.custom_gradient(inputs, differentiable,
                                              [placeholders[id(o)] for o in differentiable],
                                              gradients, name)
    for output in passed:
        # The op has no autograd kernel of its own; its outputs need a gradient as a
        # Function's do, so that what reads them (another Function, say) knows they do.
        output.requires_grad_()
    replaced = dict(zip((id(o) for o in differentiable), passed))
    new_outputs = tuple(replaced.get(id(o), o) if isinstance(o, torch.Tensor) else o
                        for o in outputs)
    return new_outputs if isinstance(result, tuple) else new_outputs[0]


def _is_eager_apply(value: Any) -> bool:
    """Whether `value` is some Function's apply bound before popsim traced (`swish =
    Swish.apply` at import), which calls torch's own apply whatever Function.apply is."""
    owner = getattr(value, "__self__", None)
    return (isinstance(value, types.BuiltinMethodType) and value.__name__ == "apply"
            and isinstance(owner, type) and issubclass(owner, torch.autograd.Function))


@contextlib.contextmanager
def as_traced_functions(model: torch.nn.Module, training: bool) -> Iterator[None]:
    """While inside, torch.autograd.Function.apply traces the Function (see the module doc)
    when PyTorch's tracer is recording, and runs it as eager PyTorch does otherwise. So do
    aliases of a Function's apply bound before the trace, where the model's modules can
    reach them: in the globals of the files that define the model's classes, and as
    attributes of its modules."""
    def apply(function: type, *args: Any) -> Any:
        if torch._C._get_tracing_state() is None:
            return _EAGER_APPLY.__get__(None, function)(*args)
        caller = sys._getframe(1)
        return _apply(function, training, args,
                      f"{caller.f_code.co_filename}:{caller.f_lineno}")

    namespaces = [vars(sys.modules[type(module).__module__]) for module in model.modules()
                  if type(module).__module__ in sys.modules]
    namespaces += [vars(module) for module in model.modules()]
    aliases = []
    for namespace in {id(n): n for n in namespaces}.values():
        for name, value in list(namespace.items()):
            if _is_eager_apply(value):
                aliases.append((namespace, name, value))
                namespace[name] = functools.partial(apply, value.__self__)
    torch.autograd.Function.apply = classmethod(apply)  # type: ignore[assignment]
    try:
        yield
    finally:
        del torch.autograd.Function.apply  # torch._C._FunctionBase's again
        for namespace, name, value in aliases:
            namespace[name] = value
