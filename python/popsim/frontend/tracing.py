"""Tracing a user's model into TorchScript for popsim's C++ frontend.

The model is wrapped so that the traced function takes a flat tuple of
tensors and returns one: nested inputs and outputs, keyword arguments and
non-tensor arguments (baked in as constants) are handled here, in Python.
"""

import collections
import contextlib
import inspect
import sys
import threading
import warnings
from typing import Any, Callable, Dict, Iterator, List, NoReturn, Optional, Sequence, Tuple

import torch

from popsim.frontend import blocks as _blocks
from popsim.frontend import traced_python_values as _python_values
from popsim.api import device as _device
from popsim.frontend import half_tracing as _half_tracing
from popsim.frontend import name_scope as _name_scope
from popsim.frontend import structure as _structure
from popsim.frontend import torch_checkpoints as _torch_checkpoints
from popsim.frontend import custom_functions as _custom_functions
from popsim.frontend import python_losses as _python_losses
from popsim.frontend import trace_reuse as _trace_reuse
from popsim.frontend import value_guards as _value_guards
from popsim.frontend.ops import LIBRARY as _LIBRARY
from popsim.api.errors import ArgumentError, CompilationError, InputError
from popsim.api.log import LOGGER

# torch.no_grad() and friends leave no trace of their own, so tracing records
# each change of the grad mode as popsim::grad_mode(enabled): the importer
# stops gradients at the values computed while it is off.
_LIBRARY.define("grad_mode(bool enabled) -> ()", alias_analysis="CONSERVATIVE")
_LIBRARY.impl("grad_mode", lambda enabled: None, "CompositeExplicitAutograd")

MODEL_ATTRIBUTE = "model"


# Narrow integer inputs reach the device as int32 (exact for conversions and views).
WIDENED_DTYPES = (torch.uint8, torch.int8, torch.int16)


def widened(tensors: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    return [t.int() if t.dtype in WIDENED_DTYPES else t for t in tensors]


class Signature:
    """What a compiled model was traced with: the input structure, tensor
    dtypes and shapes (with iterations stacked) and the non-tensor values."""

    def __init__(self, args: Sequence[Any], kwargs: Dict[str, Any],
                 forward: Callable[..., Any], split_factor: Optional[int] = None) -> None:
        """`split_factor`: the micro-batches of a call, when forward()'s tensor defaults are
        inputs (see _tensor_defaults); None keeps them out of the signature."""
        self._defaults = ({} if split_factor is None
                          else _tensor_defaults(forward, split_factor))
        value = _bind_arguments(forward, args, kwargs, compiling=True, defaults=self._defaults)
        self.positional_count = len(args)
        self.argument_names = list(value)
        leaves, names, self.structure = _structure.flatten(value, "")
        self.names = names
        self.tensor_positions = [i for i, leaf in enumerate(leaves) if _structure.is_tensor(leaf)]
        self.constants = {i: leaf for i, leaf in enumerate(leaves) if i not in self.tensor_positions}
        self.tensor_types = [(leaves[i].dtype, tuple(leaves[i].shape)) for i in self.tensor_positions]
        self.tensor_names = [self.names[i] for i in self.tensor_positions]
        self.forward = forward
        # How an input's rows of a call split into micro-batches (set by the model), for
        # error messages: inputs may differ in dimension 0.
        self.batch_explanation: Optional[Callable[[int], str]] = None

    def tensors(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> List[torch.Tensor]:
        """The flat tensor inputs of a call, checked against this signature.
        Each error starts with PopTorch's sentence for the same mismatch, so
        code matching PopTorch's messages keeps working."""
        value = _bind_arguments(self.forward, args, kwargs, defaults=self._defaults)
        leaves, names, structure = _structure.flatten(value, "", like=self.structure)
        if structure != self.structure:
            missing = [name for name in self.argument_names if name not in value]
            if len(args) != self.positional_count:
                lead = (f"Number of positional arguments mismatch: expected "
                        f"{self.positional_count} arguments but got {len(args)}. ")
            elif missing:
                lead = f"Missing arguments: {', '.join(missing)}. "
            else:
                lead = ""
            raise InputError(
                f"{lead}The model was compiled for inputs structured as {self.structure!r} "
                f"({', '.join(self.names)}) but was called with {structure!r} "
                f"({', '.join(names)}). {_RECOMPILE_HINT}"
            )
        for position, expected in self.constants.items():
            leaf = leaves[position]
            if _structure.is_tensor(leaf) or leaf != expected:
                lead = (_mismatch("Type", names[position], type(expected), type(leaf))
                        if _structure.is_tensor(leaf)
                        else _mismatch("Value", names[position], expected, leaf))
                raise InputError(
                    f"{lead}Input '{names[position]}' was {expected!r} when the model was "
                    f"compiled and is now {leaf!r}; non-tensor inputs are compiled into the "
                    f"program as constants. {_RECOMPILE_HINT}"
                )
        tensors = []
        for position, (dtype, shape), name in zip(self.tensor_positions, self.tensor_types,
                                                  self.tensor_names):
            tensor = leaves[position]
            if not _structure.is_tensor(tensor):
                raise InputError(f"{_mismatch('Type', name, torch.Tensor, type(tensor))}Input "
                                 f"'{name}' was a tensor when the model was compiled and is "
                                 f"now {tensor!r}. {_RECOMPILE_HINT}")
            if tensor.dtype != dtype:
                raise InputError(f"{_mismatch('Data type', name, dtype, tensor.dtype)}Input "
                                 f"'{name}' has dtype {tensor.dtype} but the model was "
                                 f"compiled for {dtype}. {_RECOMPILE_HINT}")
            if tuple(tensor.shape) != shape:  # the one comparison valid inputs pay
                lead = _mismatch("Shape", name, torch.Size(shape), tensor.shape)
                if (tensor.dim() > 0 and len(shape) > 0 and tuple(tensor.shape[1:]) == shape[1:]
                        and self.batch_explanation is not None):
                    raise InputError(
                        f"{lead}Input '{name}' has {tensor.shape[0]} samples in dimension 0 but "
                        f"the model was compiled for {shape[0]} per call "
                        f"({self.batch_explanation(shape[0])}). Pass batches of {shape[0]} (a "
                        "popsim.DataLoader with drop_last=True, the default, yields only full "
                        "ones), or call destroy() to compile for another batch size.")
                raise InputError(f"{lead}Input '{name}' has shape {list(tensor.shape)} but the "
                                 f"model was compiled for {list(shape)}. {_RECOMPILE_HINT}")
            tensors.append(tensor)
        return tensors


def _mismatch(what: str, name: str, expected: object, got: object) -> str:
    """PopTorch's sentence for an input that differs from the compiled one."""
    return f"{what} mismatch for {name}: expected {expected} but got {got}. "


_RECOMPILE_HINT = (
    "popsim compiles one program per input signature: wrap the model again for the new "
    "inputs, or call destroy() on this one first."
)


def _signature_of(forward: Callable[..., Any]) -> inspect.Signature:
    """forward()'s signature; a TorchScript model's (torch.jit.script or torch.jit.load)
    from its schema, which inspect cannot read."""
    schema = getattr(forward, "schema", None)  # (a torch.ScriptMethod's FunctionSchema)
    if not isinstance(schema, torch._C.FunctionSchema):
        return inspect.signature(forward)
    parameters = []
    for argument in schema.arguments[1:]:  # (after self)
        kind = (inspect.Parameter.KEYWORD_ONLY if argument.kwarg_only
                else inspect.Parameter.POSITIONAL_OR_KEYWORD)
        default = (argument.default_value if argument.has_default_value()
                   else inspect.Parameter.empty)
        parameters.append(inspect.Parameter(argument.name, kind, default=default))
    return inspect.Signature(parameters)


def _tensor_defaults(forward: Callable[..., Any], split_factor: int) -> Dict[str, torch.Tensor]:
    """forward()'s tensor defaults as inputs, as PopTorch makes them, so that a call may
    pass one that the compiling call left out, and the other way round.

    A default is one micro-batch's value: a call that leaves it out passes it repeated along
    dimension 0 for each of the call's `split_factor` micro-batches. A 0-d default cannot be
    repeated that way, so with several micro-batches it stays a constant of the program."""
    try:
        parameters = _signature_of(forward).parameters
    except (TypeError, ValueError):  # no inspectable signature: no defaults to read
        return {}
    defaults = {}
    for name, parameter in parameters.items():
        default = parameter.default
        if not isinstance(default, torch.Tensor) or (default.dim() == 0 and split_factor > 1):
            continue
        defaults[name] = (default if split_factor == 1
                          else default.repeat(split_factor, *[1] * (default.dim() - 1)))
    return defaults


def _bind_arguments(forward: Callable[..., Any], args: Sequence[Any], kwargs: Dict[str, Any],
                    compiling: bool = False,
                    defaults: Optional[Dict[str, torch.Tensor]] = None) -> Dict[str, Any]:
    """Arguments as an ordered dict keyed by forward()'s parameter names, with `defaults`
    for the parameters the call leaves out.

    A call forward() cannot take is refused with Python's reason when it is the compiling
    call; a later one is keyed by position, so that Signature.tensors says how it differs
    from the compiled call in PopTorch's words."""
    try:
        bound = _signature_of(forward).bind(*args, **kwargs)
    except (TypeError, ValueError) as error:  # ValueError: no inspectable signature
        if compiling and isinstance(error, TypeError):  # as eager's call would fail
            missing = _missing_parameters(forward, args, kwargs)
            reason = (f"{_missing_in_pythons_words(missing)} (Mandatory parameter "
                      f"{missing[0][0]} missing)" if missing else str(error))
            raise ArgumentError(f"The model's forward() cannot take this call: {reason}. Call "
                                "the wrapped model as you would call the model itself.") \
                from error
        try:  # the arguments it names (a call leaving one out), else by position
            return _named_arguments(_signature_of(forward).bind_partial(*args, **kwargs),
                                    defaults)
        except (TypeError, ValueError):
            values = {f"args[{i}]": arg for i, arg in enumerate(args)}
            values.update(kwargs)
            return values
    return _named_arguments(bound, defaults)


def _named_arguments(bound: inspect.BoundArguments,
                     defaults: Optional[Dict[str, torch.Tensor]]) -> Dict[str, Any]:
    """A bound call's arguments keyed by parameter name (items of *args as name[i], **kwargs
    by their keys), with `defaults` for the parameters it leaves out."""
    values = {}
    for name, parameter in bound.signature.parameters.items():
        if name not in bound.arguments:
            if defaults and name in defaults:
                values[name] = defaults[name]
            continue
        value, kind = bound.arguments[name], parameter.kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            for i, item in enumerate(value):
                values[f"{name}[{i}]"] = item
        elif kind == inspect.Parameter.VAR_KEYWORD:
            values.update(value)
        else:
            values[name] = value
    return values


def _missing_parameters(forward: Callable[..., Any], args: Sequence[Any],
                        kwargs: Dict[str, Any]) -> List[Tuple[str, Any]]:
    """The required parameters of forward() a call leaves out, with their kinds (none when
    the call fails otherwise)."""
    try:
        bound = _signature_of(forward).bind_partial(*args, **kwargs)
    except TypeError:
        return []
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [(name, parameter.kind) for name, parameter in bound.signature.parameters.items()
            if parameter.default is inspect.Parameter.empty and parameter.kind not in variadic
            and name not in bound.arguments]


def _missing_in_pythons_words(missing: List[Tuple[str, Any]]) -> str:
    """"missing 1 required positional argument: 'b'", as Python says it of a call."""
    parts = []
    for keyword_only, what in ((False, "positional"), (True, "keyword-only")):
        names = [repr(name) for name, kind in missing
                 if (kind == inspect.Parameter.KEYWORD_ONLY) == keyword_only]
        if names:
            listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
            plural = "s" if len(names) > 1 else ""
            parts.append(f"missing {len(names)} required {what} argument{plural}: {listed}")
    return "; ".join(parts)


def _call_with(forward: Callable[..., Any], values: Dict[str, Any]) -> Any:
    """Calls forward with the values of _bind_arguments, as Python would bind them.

    The values hold only the arguments the call gave, so passing them in order
    would shift a keyword argument into a skipped optional parameter: Python's
    own BoundArguments decides which go by position and which by keyword."""
    signature = _signature_of(forward)
    parameters = signature.parameters
    arguments: Dict[str, Any] = {}
    extra: Dict[str, Any] = {}
    for name, value in values.items():
        parameter = parameters.get(name.split("[")[0])
        if parameter is not None and parameter.kind == inspect.Parameter.VAR_POSITIONAL:
            arguments.setdefault(parameter.name, []).append(value)
        elif (parameter is not None and parameter.name == name
              and parameter.kind != inspect.Parameter.VAR_KEYWORD):
            arguments[name] = value
        else:
            extra[name] = value  # a **kwargs entry (or a call that did not bind)
    var_keyword = next((p.name for p in parameters.values()
                        if p.kind == inspect.Parameter.VAR_KEYWORD), None)
    if var_keyword is None and extra:
        return forward(**{**arguments, **extra})  # raises the usual TypeError
    if extra:
        assert var_keyword is not None
        arguments[var_keyword] = extra
    ordered = {name: tuple(arguments[name]) if parameters[name].kind ==
               inspect.Parameter.VAR_POSITIONAL else arguments[name]
               for name in parameters if name in arguments}
    bound = inspect.BoundArguments(signature, collections.OrderedDict(ordered))
    return forward(*bound.args, **bound.kwargs)


class _FlatModel(torch.nn.Module):
    """The traced function: flat tensors in, flat tensors out."""

    def __init__(self, model: torch.nn.Module, signature: Signature) -> None:
        super().__init__()
        self.model = model
        self._signature = signature
        # Set when forward() runs, in the trace.
        self.output_structure: Optional[_structure.Structure] = None
        self.output_names: Optional[List[str]] = None
        self.output_dtypes: Optional[List[torch.dtype]] = None
        # Set when a returned tensor is not computed in the trace (made outside forward()
        # and returned as it is), which torch.jit.trace cannot return: each output is then
        # returned as a copy, which the trace records from the tensor as a constant.
        self.copy_outputs = False

    def forward(self, *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        leaves: List[Any] = [None] * (len(self._signature.tensor_positions)
                                      + len(self._signature.constants))
        for position, value in self._signature.constants.items():
            leaves[position] = value
        for position, tensor in zip(self._signature.tensor_positions, tensors):
            leaves[position] = tensor
        values = _structure.unflatten(leaves, self._signature.structure)
        # forward() is called directly (the module's own call would put a
        # module boundary around the whole trace), so a BeginBlock on the model
        # itself starts its block here, before anything runs.
        block_start = getattr(self.model, "_popsim_block", None)
        if block_start is not None:
            block_start(self.model, ())
        with _value_guards.recording() as guards:
            output = _call_with(self.model.forward, values)
        flat, names, self.output_structure = _structure.flatten(output, "output",
                                                                none_as_empty=True)
        self.output_names = names
        self.output_dtypes = [leaf.dtype for leaf in flat if _structure.is_tensor(leaf)]
        for leaf, name in zip(flat, names):
            if not _structure.is_tensor(leaf):
                shown = repr(leaf) if len(repr(leaf)) <= 80 else repr(leaf)[:77] + "..."
                raise CompilationError(
                    f"The model returns {type(leaf).__name__} {shown} as {name}; popsim models "
                    f"return tensors (or tuples, lists, dicts, NamedTuples and dataclasses "
                    f"of tensors)."
                )
        outputs = tuple(leaf.clone() for leaf in flat) if self.copy_outputs else tuple(flat)
        return _value_guards.attached(outputs, guards)


@contextlib.contextmanager
def module_mode(model: torch.nn.Module, training: bool) -> Iterator[None]:
    """Puts every submodule in train or eval mode and restores each one's flag after."""
    flags = [(module, module.training) for module in model.modules()]
    model.train(training)
    try:
        yield
    finally:
        for module, flag in flags:
            module.training = flag


@contextlib.contextmanager
def _untouched_state(model: torch.nn.Module) -> Iterator[None]:
    """Tracing runs the model once on real data: batch norm updates its running
    statistics and dropout draws random numbers. Neither must leak into the
    user's model or random stream, so buffers and the RNG state are restored."""
    buffers = [(buffer, buffer.detach().clone()) for buffer in model.buffers()]
    rng = torch.get_rng_state()
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)
        torch.set_rng_state(rng)


@contextlib.contextmanager
def _unreplaced_buffers_and_parameters(model: torch.nn.Module) -> Iterator[None]:
    """A forward() may update a buffer in place (the device keeps it as state), but not
    remove or rebind a buffer or parameter: the program holds the tensors that were there
    when it was traced, so the model would silently lose the change. Such a forward() is
    refused after its trace, in PopTorch's words, with the model's tensors put back."""
    # (A scripted submodule's own forward is TorchScript, which cannot rebind its
    # tensors; its _buffers is a view of the C++ module without dict's methods.)
    held = [(path, module, kind, dict(tensors))
            for path, module in model.named_modules()
            if not isinstance(module, torch.jit.ScriptModule)
            for kind, tensors in (("Buffer", module._buffers), ("Parameter", module._parameters))]
    traced = False
    try:
        yield
        traced = True
    finally:
        refused = None
        for path, module, kind, before in held:
            now = module._buffers if kind == "Buffer" else module._parameters
            for name, tensor in before.items():
                if now.get(name) is tensor:
                    continue
                if refused is None:
                    refused = _rebound_message(kind, f"{path}.{name}" if path else name, name,
                                               removed=now.get(name) is None and
                                               tensor is not None)
                now[name] = tensor
        if traced and refused is not None:
            raise CompilationError(refused)


def _rebound_message(kind: str, path: str, name: str, removed: bool) -> str:
    if removed:
        return (f"{kind} {path} is removed from the model when calling the forward method. "
                f"popsim compiles the model's {kind.lower()}s as they were before forward() "
                f"ran; keep {kind.lower()} {path} registered (the model was left as it was).")
    return (f"{kind} {path} is reassigned within the model when calling the forward method. "
            f"This is not supported. Consider using self.{name}.copy_(src) to copy data from a "
            f"source tensor, where src is the name of the source tensor. (popsim keeps the "
            f"{kind.lower()} on the device and updates it in place; a new tensor bound to its "
            f"name would not be seen. The model was left as it was.)")


def _cumulative_batch_norm_forward(module: torch.nn.modules.batchnorm._BatchNorm
                                   ) -> Callable[[torch.Tensor], torch.Tensor]:
    """forward() of a training batch norm with momentum=None, which averages
    its running statistics over all batches so far. PyTorch computes that
    step's factor, 1 / num_batches_tracked, on the host as a Python float,
    which a trace would freeze at its first value: here it is a tensor op on
    the buffer, so the device counts the steps. Same formula as PyTorch's
    kernel (the unbiased variance for running_var)."""
    # (Its buffers are there: _cumulative_batch_norms picks batch norms that track
    # running statistics, which mypy does not see here.)
    def forward(input: torch.Tensor) -> torch.Tensor:
        module._check_input_dim(input)
        module.num_batches_tracked.add_(1)  # type: ignore[union-attr]
        factor = 1.0 / module.num_batches_tracked  # type: ignore[operator]
        dims = [0] + list(range(2, input.dim()))
        statistics = input.detach()
        module.running_mean.mul_(1 - factor).add_(  # type: ignore[union-attr]
            factor * statistics.mean(dims))
        module.running_var.mul_(1 - factor).add_(  # type: ignore[union-attr]
            factor * statistics.var(dims, unbiased=True))
        return torch.nn.functional.batch_norm(input, None, None, module.weight, module.bias,
                                              True, 0.0, module.eps)
    return forward


@contextlib.contextmanager
def _cumulative_batch_norms(model: torch.nn.Module) -> Iterator[None]:
    """Batch norms with momentum=None trace through _cumulative_batch_norm_forward."""
    patched = [module for module in model.modules()
               if isinstance(module, torch.nn.modules.batchnorm._BatchNorm)
               and getattr(module, "momentum") is None  # torch's stubs say a float
               and module.training and module.track_running_stats
               and module.running_mean is not None]
    saved = [module.__dict__.get("forward") for module in patched]
    for module in patched:
        setattr(module, "forward", _cumulative_batch_norm_forward(module))
    try:
        yield
    finally:
        for module, forward in zip(patched, saved):
            if forward is None:
                del module.forward
            else:
                setattr(module, "forward", forward)


@contextlib.contextmanager
def _recorded_grad_mode() -> Iterator[None]:
    """torch.no_grad, enable_grad and set_grad_enabled all switch the mode
    through torch._C._set_grad_enabled: wrapped, each switch is traced."""
    switch = torch._C._set_grad_enabled

    def recorded(enabled: bool) -> None:
        switch(enabled)
        torch.ops.popsim.grad_mode(bool(enabled))

    torch._C._set_grad_enabled = recorded
    try:
        yield
    finally:
        torch._C._set_grad_enabled = switch


@contextlib.contextmanager
def _no_backward() -> Iterator[None]:
    """popsim computes gradients itself: backward() inside forward() is an error, and so is
    a gradient hook on a tensor (Tensor.register_hook), which popsim's backward pass would
    not run: the weights would silently train as if it were not there."""
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise CompilationError(
            "The model's forward() calls backward(). popsim training models compute the gradients "
            "of the returned loss and update the weights on the device: return the loss from "
            "forward() instead of calling backward() on it.")

    def refuse_hook(*args: Any, **kwargs: Any) -> NoReturn:
        raise CompilationError(
            f"The model's forward() registers a gradient hook (Tensor.register_hook at "
            f"{_caller()}). popsim computes the gradients on the device from the traced forward "
            f"pass and cannot run a Python function on them: remove the hook, or write what it "
            f"does into forward(). To scale a gradient by s, use x.detach() + s * (x - x.detach()) "
            f"in place of x; to clip the gradients' norm, give the popsim.optim optimizer "
            f"max_grad_norm=.")

    with _replaced((torch.Tensor, "backward", refuse), (torch.autograd, "backward", refuse),
                   (torch.Tensor, "register_hook", refuse_hook)):
        yield


@contextlib.contextmanager
def _no_gradients_inside() -> Iterator[None]:
    """torch.autograd.grad inside forward() (a gradient penalty, forces from an energy) is an
    error that names its line: PyTorch's tracer would fail with a message about constants."""
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise CompilationError(
            f"The model's forward() calls torch.autograd.grad (at {_caller()}). popsim "
            f"differentiates only the loss a training model returns, once, on the device; "
            f"gradients computed inside forward() (gradient penalties, derivatives of an "
            f"output with respect to the inputs) are not supported. Compute them on the host "
            f"with eager PyTorch.")

    with _replaced((torch.autograd, "grad", refuse)):
        yield


@contextlib.contextmanager
def _replaced(*swaps: Tuple[Any, str, Callable[..., Any]]) -> Iterator[None]:
    """Each (owner, attribute, replacement) of `swaps` in place while inside; the originals
    are back afterwards."""
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in swaps]
    for owner, name, replacement in swaps:
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _refuse_gradient_hooks(model: torch.nn.Module) -> None:
    """Gradient hooks registered before compiling, on a parameter (Tensor.register_hook) or a
    module (register_full_backward_hook): popsim's backward pass on the device would not run
    them, so the model would silently train as if they were not there."""
    for name, parameter in model.named_parameters():
        if getattr(parameter, "_backward_hooks", None):
            raise CompilationError(
                f"Parameter {name} has a gradient hook (Tensor.register_hook). popsim computes "
                f"the gradients on the device and cannot run a Python function on them: remove "
                f"the hook. To clip the gradients' norm, give the popsim.optim optimizer "
                f"max_grad_norm=.")
    for name, module in model.named_modules():
        if module._backward_hooks:
            raise CompilationError(
                f"Module {name or type(module).__name__} has a backward hook "
                f"(register_full_backward_hook or register_backward_hook). popsim computes the "
                f"gradients on the device and cannot run a Python function on them: remove the "
                f"hook before compiling the model.")


def _caller() -> str:
    """file:line of the code that called the refused function (two frames up)."""
    frame = sys._getframe(2)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


# Tracing changes process-wide state for its duration (the block markers'
# state, torch.Tensor.backward, torch._C._set_grad_enabled, the RNG state,
# warning filters), so models
# compiled from several threads trace one at a time.
_TRACE_LOCK = threading.Lock()
# Work put off until no model traces: a training model the garbage collector
# drops during a trace copies its weights home (torch ops, which must not
# join the trace or meet its dispatch mode), so it waits until the trace ends.
_DEFERRED: List[Callable[[], object]] = []


def unless_tracing(work: Callable[[], object]) -> bool:
    """Runs `work()` now, or after the trace in progress; True if deferred."""
    if _TRACE_LOCK.locked():
        _DEFERRED.append(work)
        return True
    work()
    return False


def _run_deferred() -> None:
    while _DEFERRED:
        work = _DEFERRED.pop(0)
        try:
            work()
        except Exception:  # noqa: BLE001 - as __del__ would have ignored it
            pass


def trace(model: torch.nn.Module, signature: Signature,
          micro_batch_tensors: Sequence[torch.Tensor], training: bool,
          module_scopes: bool = False, downcast_mixed_floats: bool = True,
          shapes_only: bool = False) -> Tuple[torch.jit.ScriptModule, _FlatModel]:
    """Traces the model on one micro-batch; returns (traced, flat wrapper).

    Each module traces with its own train/eval flag, as eager PyTorch would run
    it (frozen batch norm stays frozen), in inference as in training. With
    `module_scopes`, ops are named after their submodules.
    Float16 ops run in float32 underneath the trace (_half_tracing.py), as
    Precision.halfFloatCasting says for mixed operands. With `shapes_only` (a
    cost-only compilation), matmuls, convolutions and the ops with float16
    operands do not compute: they give zeros of their results' shapes and
    dtypes. Inside trace_reuse.reusing_traces(), such a trace is kept and
    reused."""
    reuse_key = None
    if shapes_only and _trace_reuse.active():
        reuse_key = _trace_reuse.key(
            model, signature.names, signature.structure, signature.constants,
            micro_batch_tensors, (training, module_scopes, downcast_mixed_floats))
        reused = _trace_reuse.kept(reuse_key)
        if reused is not None:
            return reused
    try:
        with _TRACE_LOCK:
            try:
                result = _trace_retried(model, signature, micro_batch_tensors, training,
                                        module_scopes, downcast_mixed_floats, shapes_only)
            except _half_tracing.UncomputedValueRead as read:
                # forward() branches on (or reads) a value computed from the data, which
                # a cost-only trace leaves uncomputed: trace computing, so that the
                # program is the one a computing run of this micro-batch compiles.
                LOGGER.info("popsim: %s; tracing the model computing its values, as a "
                            "computing run does.", read)
                result = _trace_retried(model, signature, micro_batch_tensors, training,
                                        module_scopes, downcast_mixed_floats, False)
    finally:
        _run_deferred()
    if reuse_key is not None:
        _trace_reuse.keep(reuse_key, result)
    return result


def _trace_retried(model: torch.nn.Module, signature: Signature,
                   micro_batch_tensors: Sequence[torch.Tensor], training: bool,
                   module_scopes: bool, downcast_mixed_floats: bool, shapes_only: bool
                   ) -> Tuple[torch.jit.ScriptModule, _FlatModel]:
    """_trace, again with sizes as ints and bools an op takes as numbers as 0-d tensors
    where PyTorch's tracer failed on such a Python value (traced_python_values.py). Only
    such models pay for the second trace and for its TorchFunctionMode, which adds a
    Python call to every op. Where the second trace fails too, its error is raised."""
    try:
        return _trace(model, signature, micro_batch_tensors, training, module_scopes,
                      downcast_mixed_floats, shapes_only)
    except (RuntimeError, TypeError) as error:
        if not _python_values.failed_on_python_values(error):
            raise
        LOGGER.debug("popsim: tracing again with eager's Python values: %s",
                     str(error).split("\n")[0])
    return _trace(model, signature, micro_batch_tensors, training, module_scopes,
                  downcast_mixed_floats, shapes_only, eager_values=True)


def _trace(model: torch.nn.Module, signature: Signature,
           micro_batch_tensors: Sequence[torch.Tensor], training: bool, module_scopes: bool,
           downcast_mixed_floats: bool, shapes_only: bool, eager_values: bool = False
           ) -> Tuple[torch.jit.ScriptModule, _FlatModel]:
    """One trace. With `eager_values`, sizes are ints and ops given a Python bool as a
    number get a 0-d bool tensor (traced_python_values.py)."""
    if training:
        _refuse_gradient_hooks(model)
    flat = _FlatModel(model, signature)
    _blocks.reset_for_trace()
    # Entered one by one, each left again if a later one (or the trace) fails.
    with contextlib.ExitStack() as guards:
        guards.enter_context(_unreplaced_buffers_and_parameters(model))  # checked last
        if module_scopes:
            guards.enter_context(_name_scope.module_scopes(model))
        # A forward may write buffers in eval mode too.
        guards.enter_context(_untouched_state(model))
        guards.enter_context(_device.running_on_ipu())
        # Each module runs as its own train/eval flag says, in inference as in training, as
        # eager PyTorch and PopTorch run it (PopTorch's users call model.eval() before wrapping
        # a model for inference).
        guards.enter_context(_cumulative_batch_norms(model))
        guards.enter_context(_no_gradients_inside())
        if training:
            guards.enter_context(_no_backward())
            guards.enter_context(_recorded_grad_mode())
        # Grad stays enabled: some modules (e.g. TransformerEncoderLayer) switch to
        # fused kernels under no_grad that have no popsim lowering.
        # Always on, for float16 parameters and inputs as for float16 made inside
        # forward(); ops without float16 operands pass straight through it.
        weights = [*model.parameters(), *model.buffers()]
        guards.enter_context(_half_tracing.half_on_cpu(downcast_mixed_floats, shapes_only, weights))
        # torch.utils.checkpoint (which PyTorch's tracer cannot record when reentrant) as
        # popsim recomputation checkpoints.
        guards.enter_context(_torch_checkpoints.as_recomputation_checkpoints())
        # torch.autograd.Functions as traced ops, with their backward as a custom gradient.
        guards.enter_context(_custom_functions.as_traced_functions(model, training))
        # torch.nn.functional's losses written in Python, marked as losses.
        guards.enter_context(_python_losses.traceable_python_losses(training))
        if eager_values:
            guards.enter_context(_python_values.eager_python_values())
        with torch.enable_grad(), warnings.catch_warnings():
            # PyTorch's and torchvision's own modules turn shapes into Python values
            # (attention's shape asserts, swin's window padding); popsim compiles
            # fixed shapes, so those warnings are noise. Warnings from the user's
            # code are kept, but for its reads of Python values from tensors, which
            # popsim checks at run time instead (value_guards.py).
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning,
                                    module=r"torch(vision)?(\.|$)")
            if eager_values:
                # Warnings of the ops called through traced_python_values' mode name its
                # line; the first trace, which ran the same forward(), showed each at the
                # user's.
                warnings.filterwarnings("ignore",
                                        module=r"popsim\.frontend\.traced_python_values$")
            try:
                traced = torch.jit.trace(flat, tuple(micro_batch_tensors), check_trace=False,
                                         strict=False)
            except RuntimeError as error:
                if _UNTRACED_OUTPUT not in str(error):
                    raise
                # Rare (a tensor made outside forward(), returned as it is): trace again with
                # every output copied, so normal models keep outputs without copies.
                flat.copy_outputs = True
                _blocks.reset_for_trace()
                traced = torch.jit.trace(flat, tuple(micro_batch_tensors), check_trace=False,
                                         strict=False)
    return traced, flat


# torch.jit.trace's refusal of an output the trace did not compute.
_UNTRACED_OUTPUT = "did not have observable data dependence with trace inputs"
