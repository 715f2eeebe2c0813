"""PopTorch's tensor helpers, built from PyTorch ops popsim compiles (so
they also run in plain PyTorch): nop, dynamic_slice, dynamic_update,
serializedMatMul, for_loop and cond; ipu_print_tensor, a marker op the
device prints; recomputationCheckpoint, a marker recomputation stashes;
set_available_memory, a matmul's or convolution's temporary memory budget;
set_overlap_for_input / _output, markers for inputs and outputs that stream
through IO tiles; and custom_op, which names what it would need."""

import contextlib
import warnings
from typing import Any, Callable, Iterator, List, Mapping, NoReturn, Optional, Sequence, Union

import torch

from popsim.api.device import isRunningOnIpu
from popsim.frontend.ops import LIBRARY as _LIBRARY
from popsim.api.enums import MatMulSerializationMode, OverlapMode
from popsim.api.errors import ArgumentError, UnsupportedOperationError

_LIBRARY.define("print_tensor(Tensor x, str title, bool print_gradient, int summarise_threshold, "
                "int edge_items, int max_line_width, int digits, str float_format, "
                "str separator, str open_bracket, str close_bracket) -> Tensor")
_LIBRARY.impl("print_tensor", lambda x, *options: x.clone(), "CPU")
_FLOAT_FORMATS = ("auto", "fixed", "scientific", "none")
_LIBRARY.define("recomputation_checkpoint(Tensor x) -> Tensor")
_LIBRARY.impl("recomputation_checkpoint", lambda x: x.clone(), "CPU")
_LIBRARY.define("set_available_memory(Tensor x, float proportion) -> Tensor")
_LIBRARY.impl("set_available_memory", lambda x, proportion: x.clone(), "CPU")
# MultiConv's partialsTypes for the convolution that computed x.
_LIBRARY.define("partials_type(Tensor x, bool half) -> Tensor")
_LIBRARY.impl("partials_type", lambda x, half: x.clone(), "CPU")
# dynamic_slice / dynamic_update while popsim traces: index_select and
# index_copy whose start is data of the compiled program. The trace runs them
# once on the example inputs, whose start may be outside the tensor (it is
# only an example): there they clamp the positions so that tracing does not
# fail on a value the program never uses; popsim lowers them as index_select
# and index_copy, which check the positions when the model runs.
_LIBRARY.define("dynamic_select(Tensor self, int dim, Tensor index) -> Tensor")
_LIBRARY.impl("dynamic_select", lambda x, dim, index: x.index_select(
    dim, index.clamp(0, x.shape[dim] - 1)), "CPU")
_LIBRARY.define("dynamic_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor")
_LIBRARY.impl("dynamic_copy", lambda x, dim, index, source: x.index_copy(
    dim, index.clamp(0, x.shape[dim] - 1), source), "CPU")
for _direction in ("input", "output"):
    _LIBRARY.define(f"set_overlap_for_{_direction}(Tensor x, str mode) -> Tensor")
    _LIBRARY.impl(f"set_overlap_for_{_direction}", lambda x, mode: x.clone(), "CPU")
# The markers above give a copy of x: their meta kernels say so, so that a cost-only
# trace records them without copying activations (half_tracing's _meta_result).
for _marker in ("print_tensor", "recomputation_checkpoint", "set_available_memory",
                "partials_type", "set_overlap_for_input", "set_overlap_for_output"):
    _LIBRARY.impl(_marker, lambda x, *settings: torch.empty_like(x), "Meta")


@contextlib.contextmanager
def _shape_checks() -> Iterator[None]:
    """Argument checks on shapes, which are fixed in a compiled program: the
    tracer's warning about turning traced sizes into Python values is noise
    there."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        yield


def _require_tensor(value: object, what: str, function: str) -> None:
    if not isinstance(value, torch.Tensor):
        raise ArgumentError(f"{function} expects {what} to be a torch.Tensor, got "
                            f"{type(value).__name__}.")


def _require_int(value: int, what: str, function: str, smallest: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < smallest:
        raise ArgumentError(f"{function} expects {what} to be an int >= {smallest} (a constant of "
                            f"the compiled program), got {value!r}.")


def _require_within(tensor: torch.Tensor, dim: int, size: int, function: str) -> None:
    """dim names a dimension of the tensor, and size fits in it (the start is data)."""
    if dim >= tensor.dim():
        raise ArgumentError(f"{function} expects dim in [{-tensor.dim()}, {tensor.dim() - 1}] "
                            f"for a tensor of {tensor.dim()} dimensions, got {dim}.")
    if size > tensor.shape[dim]:
        raise ArgumentError(f"{function}: size {size} is larger than the tensor's dimension {dim} "
                            f"({tensor.shape[dim]} elements).")


def nop(tensor: torch.Tensor) -> torch.Tensor:
    """Passes a tensor through unchanged, as an op the graph optimiser keeps on an IPU.

    Args:
        tensor: The tensor to pass through.

    Returns:
        A copy of ``tensor``.

    Raises:
        ArgumentError: when ``tensor`` is not a ``torch.Tensor``.
    """
    _require_tensor(tensor, "its argument", "popsim.nop")
    return tensor.clone()


def _positions(start: torch.Tensor, size: int, step: int, function: str) -> torch.Tensor:
    """start + [0, step, 2 step, ...] below start + size, as int64."""
    _require_tensor(start, "start", function)
    if start.numel() != 1 or start.is_floating_point():
        raise ArgumentError(f"{function} expects start to be an integer tensor with one element, "
                            f"got {start.dtype} of shape {list(start.shape)}.")
    return start.reshape(()).long() + torch.arange(0, size, step)


def dynamic_slice(tensor: torch.Tensor, dim: int, start: torch.Tensor, size: int,
                  step: int) -> torch.Tensor:
    """Slices ``tensor[start : start + size : step]`` along ``dim``, ``start`` being data.

    ``start`` is a tensor computed on the device, whose value may change from call to call;
    ``size`` and ``step`` are constants of the compiled program. A slice that leaves the
    tensor is an :class:`popsim.ExecutionError` when the compiled model runs.

    Args:
        tensor: The tensor to slice.
        dim: The dimension to slice along (negative counts from the end).
        start: A one-element integer tensor: the first position of the slice.
        size: The length of the range to take positions from, at least 1 and at most the
            length of ``dim``.
        step: The distance between the positions taken, at least 1.

    Returns:
        The ``ceil(size / step)`` positions ``start``, ``start + step``, ... of ``tensor``
        along ``dim``.

    Raises:
        ArgumentError: when an argument has the wrong type, ``dim`` is not a dimension of
            ``tensor``, ``size`` or ``step`` is below 1, ``size`` is larger than the
            dimension, or ``start`` is not a one-element integer tensor.
    """
    with _shape_checks():
        _require_tensor(tensor, "tensor", "popsim.dynamic_slice")
        _require_int(dim, "dim", "popsim.dynamic_slice", -tensor.dim())
        if isinstance(size, int) and not isinstance(size, bool) and size < 1:
            # PopTorch's sentence first, for code that matches it.
            lead = ("The start and end of a slice must be different." if size == 0 else
                    "Taking a slice of a tensor with the end less than the start is not "
                    "supported.")
            raise ArgumentError(f"{lead} popsim.dynamic_slice expects size to be an int >= 1 (a "
                                f"constant of the compiled program), got {size}.")
        _require_int(size, "size", "popsim.dynamic_slice", 1)
        _require_int(step, "step", "popsim.dynamic_slice", 1)
        _require_within(tensor, dim, size, "popsim.dynamic_slice")
        positions = _positions(start, size, step, "popsim.dynamic_slice")
    if isRunningOnIpu():  # popsim is tracing: the start is data, not this example's value
        return torch.ops.popsim.dynamic_select(tensor, dim % tensor.dim(), positions)
    return tensor.index_select(dim, positions)


def dynamic_update(input: torch.Tensor, src: torch.Tensor, dim: int, start: torch.Tensor,
                   size: int) -> torch.Tensor:
    """Writes ``src`` over ``input[start : start + size]`` along ``dim``, ``start`` being data.

    ``start`` is a tensor computed on the device, whose value may change from call to call;
    ``size`` is a constant of the compiled program. ``input`` itself is left unchanged.

    Args:
        input: The tensor to update.
        src: The values to write: a tensor of ``input``'s number of dimensions and dtype, of
            length ``size`` along ``dim``.
        dim: The dimension to update along (negative counts from the end).
        start: A one-element integer tensor: the first position to write.
        size: How many positions to write, ``src``'s length along ``dim``: at least 1 and at
            most the length of ``dim``.

    Returns:
        A copy of ``input`` with ``src`` written at positions ``start`` to
        ``start + size - 1`` along ``dim``.

    Raises:
        ArgumentError: when an argument has the wrong type, ``src`` does not match ``input`` (its
            number of dimensions, dtype or length along ``dim``), ``dim`` is not a dimension of
            ``input``, ``size`` is out of range, or ``start`` is not a one-element integer
            tensor.
    """
    with _shape_checks():
        _require_tensor(input, "input", "popsim.dynamic_update")
        _require_tensor(src, "src", "popsim.dynamic_update")
        _require_int(dim, "dim", "popsim.dynamic_update", -input.dim())
        _require_int(size, "size", "popsim.dynamic_update", 1)
        if src.dim() != input.dim() or src.dtype != input.dtype:
            raise ArgumentError(f"popsim.dynamic_update expects src like input (dim {input.dim()}, "
                                f"{input.dtype}), got dim {src.dim()}, {src.dtype}.")
        _require_within(input, dim, size, "popsim.dynamic_update")
        if src.shape[dim] != size:
            raise ArgumentError(f"popsim.dynamic_update: src has {src.shape[dim]} elements along "
                                f"dim {dim}, but size is {size}.")
        positions = _positions(start, size, 1, "popsim.dynamic_update")
    if isRunningOnIpu():  # popsim is tracing: the start is data, not this example's value
        return torch.ops.popsim.dynamic_copy(input, dim % input.dim(), positions, src)
    return input.index_copy(dim, positions, src)


def serializedMatMul(lhs: torch.Tensor, rhs: torch.Tensor, mode: MatMulSerializationMode,
                     factor: int = 0, keep_precision: bool = False) -> torch.Tensor:
    """Computes ``lhs @ rhs`` as ``factor`` smaller matmuls, one after the other.

    The matmul is split along the dimension ``mode`` names, so that each part needs a
    fraction of the temporary memory (popsim's memory plan and clock see the smaller matmuls).
    Splitting the reducing dimension sums the partial products, which rounds as the IPU's
    serialized matmul does.

    Args:
        lhs: The left operand, with 2 or more dimensions when split.
        rhs: The right operand, with 2 or more dimensions when split.
        mode: The dimension to split: ``InputChannels`` (the rows of ``lhs``),
            ``ReducingDim`` (the dimension the matmul sums over) or ``OutputChannels`` (the
            columns of ``rhs``); ``Disabled`` does not split.
        factor: How many parts to split into; it must divide the split dimension. 0 or 1 does
            not split.
        keep_precision: A ``bool``, as PopTorch takes; meant for float16 operands (this
            function checks it but does not use its value).

    Returns:
        The product, as ``torch.matmul(lhs, rhs)`` gives it.

    Raises:
        ArgumentError: when ``mode`` is not a :class:`popsim.MatMulSerializationMode`,
            ``factor`` is not an ``int`` >= 0, ``keep_precision`` is not a ``bool``, or an
            operand to split has fewer than 2 dimensions.
        ValueError: when ``factor`` does not divide the split dimension.
    """
    if not isinstance(mode, MatMulSerializationMode):
        raise ArgumentError("popsim.serializedMatMul expects a popsim.MatMulSerializationMode, "
                            f"got {mode!r}.")
    _require_int(factor, "factor", "popsim.serializedMatMul", 0)
    if not isinstance(keep_precision, bool):
        raise ArgumentError(f"popsim.serializedMatMul expects keep_precision to be a bool, got "
                            f"{keep_precision!r}.")
    if mode == MatMulSerializationMode.Disabled or factor <= 1:
        return torch.matmul(lhs, rhs)
    if lhs.dim() < 2 or rhs.dim() < 2:
        raise ArgumentError("popsim.serializedMatMul splits matrices: lhs and rhs need 2 or more "
                            f"dimensions, got {list(lhs.shape)} and {list(rhs.shape)}.")
    operand, dim = {MatMulSerializationMode.InputChannels: (lhs, -2),
                    MatMulSerializationMode.ReducingDim: (lhs, -1),
                    MatMulSerializationMode.OutputChannels: (rhs, -1)}[mode]
    with _shape_checks():
        size = int(operand.shape[dim])
    if size % factor != 0:
        raise ValueError(f"popsim.serializedMatMul: factor {factor} does not divide the "
                         f"{mode.name} dimension ({size}).")
    if mode == MatMulSerializationMode.InputChannels:
        return torch.cat([torch.matmul(part, rhs) for part in lhs.chunk(factor, -2)], -2)
    if mode == MatMulSerializationMode.OutputChannels:
        return torch.cat([torch.matmul(lhs, part) for part in rhs.chunk(factor, -1)], -1)
    partials = [torch.matmul(a, b) for a, b in zip(lhs.chunk(factor, -1), rhs.chunk(factor, -2))]
    total = partials[0]
    for partial in partials[1:]:
        total = total + partial
    return total


def _as_list(outputs: Union[torch.Tensor, Sequence[torch.Tensor]], function: str, what: str
             ) -> List[torch.Tensor]:
    outputs = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)
    for index, output in enumerate(outputs):
        _require_tensor(output, f"{what}[{index}]", function)
    return outputs


def for_loop(count: int, body: Callable[..., Sequence[torch.Tensor]],
             inputs: List[torch.Tensor]) -> List[torch.Tensor]:
    """Runs ``body(*inputs)`` ``count`` times, each time on the previous outputs.

    The body takes and returns as many tensors, of the same shapes and dtypes, and sees
    copies (its in-place writes stay inside). popsim compiles the loop unrolled: the same
    numbers as a device loop.

    Args:
        count: How many times to run the body, an ``int`` >= 0 (a constant of the compiled
            program).
        body: The function to repeat: it takes the tensors of ``inputs`` as positional
            arguments and returns a tensor or a sequence of tensors like them.
        inputs: The list of tensors of the first iteration.

    Returns:
        The last iteration's outputs as a list (copies of ``inputs`` when ``count`` is 0).

    Raises:
        ArgumentError: when ``count`` is not an ``int`` >= 0, ``inputs`` is not a list of
            tensors, or the body returns something other than tensors like its inputs.
    """
    _require_int(count, "count", "popsim.for_loop", 0)
    if not isinstance(inputs, list):
        raise ArgumentError(f"popsim.for_loop expects inputs to be a list of tensors, got "
                            f"{type(inputs).__name__} (Object is not list).")
    for index, value in enumerate(inputs):
        if not isinstance(value, torch.Tensor):  # PopTorch's words in parentheses
            raise ArgumentError(f"popsim.for_loop expects inputs[{index}] to be a torch.Tensor, "
                                f"got {type(value).__name__} (Object contained in list at index "
                                f"{index} is not torch.tensor).")
    values = [tensor.clone() for tensor in inputs]
    for _ in range(count):
        outputs = _as_list(body(*values), "popsim.for_loop", "the body's outputs")
        shapes = [(t.shape, t.dtype) for t in values]
        if [(t.shape, t.dtype) for t in outputs] != shapes:
            raise ArgumentError(
                "popsim.for_loop: the body must return tensors like its inputs (as many, "
                f"same shapes and dtypes): took {[(list(s), d) for s, d in shapes]}, returned "
                f"{[(list(t.shape), t.dtype) for t in outputs]}.")
        values = outputs
    return values


def cond(condition: torch.Tensor, then_body: Callable[..., Sequence[torch.Tensor]],
         then_inps: List[torch.Tensor], else_body: Callable[..., Sequence[torch.Tensor]],
         else_inps: List[torch.Tensor]) -> List[torch.Tensor]:
    """Runs ``then_body(*then_inps)`` when ``condition`` holds, else ``else_body(*else_inps)``.

    In a compiled model both branches run and the condition picks their outputs (which must
    match in number, shape and dtype), so the condition may change from call to call; run
    eagerly, only the branch taken runs.

    Args:
        condition: A one-element tensor, taken as a bool.
        then_body: The function run when ``condition`` holds; it returns a tensor or a
            sequence of tensors.
        then_inps: The list of tensors passed to ``then_body``.
        else_body: The function run otherwise; it returns tensors like ``then_body``'s.
        else_inps: The list of tensors passed to ``else_body``.

    Returns:
        The chosen branch's outputs, as a list of tensors.

    Raises:
        ArgumentError: when ``condition`` is not a one-element tensor, ``then_inps`` or
            ``else_inps`` is not a list, a branch returns something other than tensors, or
            (compiled) the branches' outputs differ in number, shape or dtype.
    """
    _require_tensor(condition, "condition", "popsim.cond")
    if condition.numel() != 1:
        raise ArgumentError(f"popsim.cond expects a condition with one element, got shape "
                            f"{list(condition.shape)}.")
    if not isinstance(then_inps, list) or not isinstance(else_inps, list):
        raise ArgumentError("popsim.cond expects then_inps and else_inps to be lists of tensors.")
    if not torch.jit.is_tracing():
        taken = then_body(*then_inps) if bool(condition) else else_body(*else_inps)
        return _as_list(taken, "popsim.cond", "the branch's outputs")
    then_out = _as_list(then_body(*then_inps), "popsim.cond", "then_body's outputs")
    else_out = _as_list(else_body(*else_inps), "popsim.cond", "else_body's outputs")
    if [(t.shape, t.dtype) for t in then_out] != [(t.shape, t.dtype) for t in else_out]:
        raise ArgumentError(
            "popsim.cond: then_body and else_body must return as many tensors, of the same "
            f"shapes and dtypes: {[(list(t.shape), t.dtype) for t in then_out]} and "
            f"{[(list(t.shape), t.dtype) for t in else_out]}.")
    chosen = condition.reshape(()).bool()
    return [torch.where(chosen, a, b) for a, b in zip(then_out, else_out)]


def custom_op(inputs: Sequence[torch.Tensor], name: str, domain: str, domain_version: int,
              example_outputs: Sequence[torch.Tensor],
              attributes: Optional[Mapping[str, object]] = None) -> NoReturn:
    """Refuses PopTorch's custom ops, which run Poplar code that popsim cannot run.

    The arguments are PopTorch's; popsim only names the op in the error. Write the op with
    PyTorch operations instead: popsim computes those, forward and backward.

    Args:
        inputs: The op's input tensors.
        name: The custom op's name.
        domain: The custom op's domain.
        domain_version: The version of the domain.
        example_outputs: Tensors like the op's outputs.
        attributes: The op's attributes, by name.

    Returns:
        Nothing: it always raises.

    Raises:
        UnsupportedOperationError: always, naming the op.
    """
    raise UnsupportedOperationError(
        f"popsim.custom_op: custom op '{name}' (domain '{domain}', version {domain_version}) "
        "is Poplar/PopART code, which popsim, having no Poplar, cannot run. Write the op with "
        "PyTorch operations (popsim computes those, forward and backward) and call it instead.")


def ipu_print_tensor(tensor: torch.Tensor, title: str = "", print_gradient: bool = True,
                     summarise_threshold: int = 1000, edge_items: int = 3,
                     max_line_width: int = 80, digits: int = 4, float_format: str = "auto",
                     separator: str = ", ", open_bracket: str = "(",
                     close_bracket: str = ")") -> torch.Tensor:
    """Prints a tensor on stderr each time the compiled model computes it.

    In a compiled model, the host prints the tensor as ``title: (...)`` each time the op
    runs (every micro-batch), on stderr and laid out as Poplar prints it on an IPU: an outer
    dimension opens its bracket on the title's line, each of its rows follows on a line of its
    own, and its closing bracket ends the text on a line of its own. Use the returned tensor: an unused print is optimised away. Run
    eagerly (outside a popsim model) it prints nothing.

    Args:
        tensor: The tensor to print.
        title: The text printed in front of the values, followed by ``": "``; empty prints
            the values alone.
        print_gradient: Whether a training model also prints the tensor's gradient, as
            ``title_gradient``.
        summarise_threshold: Tensors of more elements than this show only ``edge_items`` at
            each end of each dimension; 0 means no limit.
        edge_items: How many elements a summarised tensor shows at each end, at least 1.
        max_line_width: The characters after which rows are broken; 0 means no limit.
        digits: The significant digits the values are printed with (in fixed notation, those
            of the largest value: 8 digits print 1.4962566).
        float_format: ``"auto"``, ``"fixed"``, ``"scientific"`` or ``"none"``: how the
            numbers are formatted (aligned).
        separator: The text between two values.
        open_bracket: The text that opens each dimension.
        close_bracket: The text that closes each dimension.

    Returns:
        ``tensor`` (through the printing op in a compiled model).

    Raises:
        ArgumentError: when ``tensor`` is not a tensor, or ``summarise_threshold``,
            ``edge_items``, ``max_line_width`` or ``digits`` is not an ``int`` in range.
        ValueError: when ``float_format`` is not one of the four formats.
    """
    _require_tensor(tensor, "tensor", "popsim.ipu_print_tensor")
    if float_format not in _FLOAT_FORMATS:
        raise ValueError(f"popsim.ipu_print_tensor expects float_format to be one of "
                         f"{', '.join(_FLOAT_FORMATS)}, got {float_format!r}.")
    for name, value, smallest in (("summarise_threshold", summarise_threshold, 0),
                                  ("edge_items", edge_items, 1),
                                  ("max_line_width", max_line_width, 0), ("digits", digits, 0)):
        _require_int(value, name, "popsim.ipu_print_tensor", smallest)
    if not torch.jit.is_tracing():
        return tensor
    return torch.ops.popsim.print_tensor(tensor, str(title), bool(print_gradient),
                                         summarise_threshold, edge_items, max_line_width,
                                         digits, float_format, separator, open_bracket,
                                         close_bracket)


def recomputationCheckpoint(*tensors: Any) -> Any:
    """Marks tensors that recomputation keeps (stashes) instead of recomputing them.

    In a model trained with ``Options.Training.recomputation(True)``, the backward pass
    recomputes only the ops after the checkpoint. Use the returned tensors. Elsewhere it
    changes nothing.

    Example:
        >>> class Deep(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(4))
        ...     def forward(self, x, target):
        ...         for layer in self.layers:
        ...             x = popsim.recomputationCheckpoint(torch.tanh(layer(x)))
        ...         return x, torch.nn.functional.mse_loss(x, target)
        >>> opts = popsim.Options()
        >>> opts.Training.recomputation(True)  # doctest: +ELLIPSIS
        Options.Training(...recomputation_enabled=True...)
        >>> trainer = popsim.trainingModel(Deep(), opts)
        >>> out, loss = trainer(torch.randn(4, 8), torch.randn(4, 8))
        >>> out.shape
        torch.Size([4, 8])

    Args:
        *tensors: The tensors to keep: one tensor, or several, in nested tuples and lists if
            need be.

    Returns:
        The tensor, when given one tensor; the tuple or list, when given one tuple or list;
        otherwise a tuple of its arguments, with nested tuples and lists kept.

    Raises:
        ArgumentError: when an argument is not a tensor (or a tuple or list of them).
    """
    def checkpoint(value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return type(value)(checkpoint(item) for item in value)
        _require_tensor(value, "its arguments", "popsim.recomputationCheckpoint")
        if not torch.jit.is_tracing():
            return value
        return torch.ops.popsim.recomputation_checkpoint(value)

    if len(tensors) == 1:  # one tensor, or one tuple or list of them, as PopTorch returns
        return checkpoint(tensors[0])
    return checkpoint(tensors)


def set_partials_type(tensor: torch.Tensor, half: bool) -> torch.Tensor:
    """popsim.MultiConv's partials type for the convolution that computed ``tensor``: float16
    partials when ``half``, float32 ones otherwise (see MultiConv.partialsTypes)."""
    return torch.ops.popsim.partials_type(tensor, bool(half))


def set_available_memory(tensor: torch.Tensor,
                         available_memory_proportion: float) -> torch.Tensor:
    """Sets the share of its IPU's memory the matmul or convolution that computed a tensor may use.

    The op that computed ``tensor`` (looking through views such as reshapes) may use this
    share of its IPU's memory for its temporaries, instead of the IPU's
    ``availableMemoryProportion``: a smaller share runs it in more serial passes (more cycles,
    less memory). On other ops it has no effect (popsim logs a warning). Use the returned
    tensor. Run eagerly, it changes nothing.

    Args:
        tensor: The output of a matmul or convolution.
        available_memory_proportion: The share, in (0, 1].

    Returns:
        ``tensor`` (through the marker op in a compiled model).

    Raises:
        ArgumentError: when ``tensor`` is not a tensor.
        ValueError: when ``available_memory_proportion`` is not a number in (0, 1].
    """
    _require_tensor(tensor, "tensor", "popsim.set_available_memory")
    proportion = available_memory_proportion
    if (isinstance(proportion, bool) or not isinstance(proportion, (int, float))
            or not 0.0 < proportion <= 1.0):
        raise ValueError(f"popsim.set_available_memory expects available_memory_proportion in "
                         f"(0, 1], got {proportion!r}.")
    if not torch.jit.is_tracing():
        return tensor
    return torch.ops.popsim.set_available_memory(tensor, float(proportion))


def _set_overlap(tensors: Any, mode: OverlapMode, direction: str) -> Any:
    function = f"popsim.set_overlap_for_{direction}"
    if not isinstance(mode, OverlapMode):
        raise ArgumentError(f"{function} expects mode to be a popsim.OverlapMode, got {mode!r}.")
    marker = getattr(torch.ops.popsim, f"set_overlap_for_{direction}")

    def mark(value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return type(value)(mark(item) for item in value)
        if isinstance(value, dict):
            return type(value)((key, mark(item)) for key, item in value.items())
        if not isinstance(value, torch.Tensor):
            raise ArgumentError(f"You may only set overlap for torch.tensor {direction}s. "
                                f"{type(value)} is not supported: {function} takes tensors, or "
                                "tuples, lists and dicts of them.")
        return marker(value, mode.value) if torch.jit.is_tracing() else value

    return mark(tensors)


def set_overlap_for_input(input_tensors: Any, mode: OverlapMode) -> Any:
    """Marks model inputs to stream from the host through the IO tiles, beside the compute.

    Apply it to the model's inputs first thing in ``forward`` and use only the returned
    tensors. It needs ``Options.TensorLocations.numIOTiles`` and a
    :class:`popsim.ShardedExecution` (or phased) strategy; outside a popsim model it returns
    its argument.

    Args:
        input_tensors: A tensor, or tuples, lists and dicts of them.
        mode: How the inputs' transfers overlap the compute, a :class:`popsim.OverlapMode`.

    Returns:
        ``input_tensors``, with the same structure, each tensor marked.

    Raises:
        ArgumentError: when ``mode`` is not a :class:`popsim.OverlapMode` or a leaf of
            ``input_tensors`` is not a tensor.
    """
    return _set_overlap(input_tensors, mode, "input")


def set_overlap_for_output(output_tensors: Any, mode: OverlapMode) -> Any:
    """Marks model outputs to stream to the host through the IO tiles, while the compute goes on.

    Apply it to tensors ``forward`` returns (once each), just before returning them. It has
    the requirements of :func:`popsim.set_overlap_for_input`; outside a popsim model it
    returns its argument.

    Args:
        output_tensors: A tensor, or tuples, lists and dicts of them.
        mode: How the outputs' transfers overlap the compute, a :class:`popsim.OverlapMode`.

    Returns:
        ``output_tensors``, with the same structure, each tensor marked.

    Raises:
        ArgumentError: when ``mode`` is not a :class:`popsim.OverlapMode` or a leaf of
            ``output_tensors`` is not a tensor.
    """
    return _set_overlap(output_tensors, mode, "output")
