"""A compilation's first steps, from the user's call and options: the
micro-batch the model is traced on, the trace and its import into popsim IR,
the random seed, and the typed compile options (_C.CompileOptions) built
from popsim.Options. compile_options is the one place they are built: the
C++ side receives them whole and copies nothing.

The Executor (`_executor.py`) runs the phases (trace, import, compile,
weights) and keeps what they produce; the functions here hold no state.
"""

import contextlib
import warnings
import weakref
from typing import (Any, Callable, Dict, Iterable, Iterator, List, NamedTuple,
                    Optional, Sequence, Tuple)

import torch

from popsim import _C
from popsim.api import engine_options as _engine_options
from popsim.training import replica_grouping as _replica_grouping
from popsim.frontend import tracing as _tracing
from popsim.frontend import weights as _weights
from popsim.api.errors import CompilationError, InputError
from popsim.api.log import LOGGER
from popsim.api.option_fields import source_location_excludes
from popsim.api.options import Options

from popsim.training.optimizer_binding import OptimizerBinding

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.int32, torch.int64, torch.bool)


def float64_as_float32(names: Sequence[str], tensors: Sequence[torch.Tensor]
                       ) -> Tuple[List[torch.Tensor], List[str]]:
    """float64 inputs converted to float32, as PopTorch converts them (the IPU
    has no float64 arithmetic); also the names of the inputs converted."""
    converted = [name for name, t in zip(names, tensors) if t.dtype == torch.float64]
    return [t.float() if t.dtype == torch.float64 else t for t in tensors], converted


def float64_warning(converted: Sequence[str]) -> str:
    return (f"Input(s) {', '.join(repr(name) for name in converted)} of dtype torch.float64 "
            "are converted to float32: popsim, like PopTorch on the IPU, computes in float32 "
            "(convert them with .float() to silence this warning).")


def synthetic_inputs(tensors: Sequence[torch.Tensor], seed: int) -> List[torch.Tensor]:
    """What enableSyntheticData feeds the device instead of a call's inputs:
    random normal floats and zero integers and booleans (valid labels and
    indices), of the inputs' shapes and dtypes, drawn once from `seed`."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(t.shape, generator=generator).to(t.dtype) if t.is_floating_point()
            else torch.zeros_like(t) for t in tensors]


def _refuse_sparse_tensors(model: torch.nn.Module, names: Sequence[str],
                           tensors: Sequence[torch.Tensor]) -> None:
    """Refuses sparse (or other non-strided) inputs, parameters and buffers, naming them:
    popsim, like PopTorch, computes with dense tensors only."""
    for name, tensor in zip(names, tensors):
        if tensor.layout != torch.strided:
            raise InputError(
                f"Input '{name}' is a {tensor.layout} tensor; popsim, like PopTorch, takes "
                f"dense tensors only: pass it as .to_dense() and compute with dense ops "
                f"(torch.mm or @ in place of torch.sparse.mm).")
    for kind, named in (("Parameter", model.named_parameters()),
                        ("Buffer", model.named_buffers())):
        for name, tensor in named:
            if tensor.layout != torch.strided:
                raise CompilationError(
                    f"{kind} '{name}' of the model is a {tensor.layout} tensor; popsim, like "
                    f"PopTorch, holds dense tensors only: register it as .to_dense() and "
                    f"compute with dense ops (torch.mm or @ in place of torch.sparse.mm).")


def micro_batches(options: Options, signature: "_tracing.Signature",
                  tensors: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    """One micro-batch of every input (float64 ones as float32), copied (tracing
    runs the model, which may modify its inputs in place); InputErrors name the
    input that cannot be split."""
    tensors, _ = float64_as_float32(signature.tensor_names, tensors)
    split = _C.batch_split_of(options._session)  # the host's split, and its messages
    micro = []
    for name, tensor in zip(signature.tensor_names, tensors):
        if tensor.dtype not in SUPPORTED_DTYPES + _tracing.WIDENED_DTYPES:
            raise InputError(
                f"Input '{name}' has dtype {tensor.dtype}; popsim takes float32, float16, "
                "int32, int64, bool, uint8, int8 and int16 tensors, and float64 ones as float32 "
                "(convert it, e.g. with .float()).")
        shape = split.micro_batch_shape(name, list(tensor.shape))
        micro.append(tensor[:shape[0]].clone() if shape else tensor.clone())
    return micro


# The attribute of a stand-in input (stand_in) holding the micro-batch it stands for.
_TRACED_VALUE = "_popsim_traced_value"


def stand_in(value: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """A call input of `shape` standing for micro-batches like `value` without
    holding them (sizeJob's call stands for a POD's global batch): a stride-0
    view of one zero, which a cost-only call never reads. The model traces on
    `value` itself (values_to_trace)."""
    tensor = torch.zeros((), dtype=value.dtype).expand(*shape)
    setattr(tensor, _TRACED_VALUE, value)
    return tensor


def values_to_trace(tensors: Sequence[torch.Tensor], micro: Sequence[torch.Tensor]
                    ) -> List[torch.Tensor]:
    """The micro-batch to trace (`micro`, one micro-batch of the call's `tensors`),
    with the values that stand-in inputs (stand_in) stand for: the model then
    traces as the job's call would, and code that branches on, checks or masks
    with its inputs' values sees the real ones."""
    traced = []
    for tensor, sliced in zip(tensors, micro):
        value = getattr(tensor, _TRACED_VALUE, None)
        if value is not None:
            (value,), _ = float64_as_float32([""], [value])  # as micro_batches converts
            if (value.shape, value.dtype) == (sliced.shape, sliced.dtype):
                sliced = value.clone()  # (tracing may modify its inputs in place)
        traced.append(sliced)
    return traced


class ImportedCall(NamedTuple):
    """A call's model as popsim IR, and how its inputs and outputs are laid out."""
    signature: "_tracing.Signature"
    graph: _C.Graph
    output_structure: Any
    output_dtypes: List[torch.dtype]


def host_memory_message(model: str, error: BaseException) -> str:
    """The error of a model whose tracing ran the host out of memory."""
    return (f"The host ran out of memory tracing {model} on one micro-batch ({error}). popsim "
            "traces every model on the host, also with Simulator.costOnly() and in "
            "popsim.sizeJob: its weights (in float32 where they are float16 on the device) and "
            "one micro-batch's activations must fit the host's memory, and models that do not "
            "are out of scope. Size it on a host with more memory.")


def import_call(model: torch.nn.Module, options: Options, training: bool,
                args: Tuple[Any, ...], kwargs: Dict[str, Any],
                tracing_done: Callable[[], None]) -> ImportedCall:
    """Traces the model on one micro-batch of the call's inputs (values_to_trace)
    and imports the trace into popsim IR (C++). `tracing_done` marks the end of
    the trace."""
    signature = _tracing.Signature(args, kwargs, model.forward,
                                   split_factor=_C.batch_split_of(options._session).factor)
    tensors = signature.tensors(args, kwargs)
    _refuse_sparse_tensors(model, signature.tensor_names, tensors)
    _warn_about_inputs_requiring_grad(signature.tensor_names, tensors)
    micro = values_to_trace(tensors, micro_batches(options, signature, tensors))
    split = _C.batch_split_of(options._session)
    signature.batch_explanation = lambda rows: split.batch_text(rows // split.factor)
    downcast = downcasts_mixed_floats(options)
    try:
        with float32_statistics(model, options) as float32_buffers:
            traced, flat = _tracing.trace(model, signature, micro, training,
                                          module_scopes=options.module_namescope,
                                          downcast_mixed_floats=downcast,
                                          shapes_only=options.Simulator.cost_only)
    except (MemoryError, RuntimeError) as error:
        if isinstance(error, RuntimeError) and "can't allocate memory" not in str(error):
            note = _different_micro_batches(signature.tensor_names, tensors, micro)
            if note is not None and type(error) is RuntimeError:
                raise RuntimeError(f"{error}\n{note}") from error
            raise
        raise CompilationError(host_memory_message(type(model).__name__, error)) from error
    tracing_done()
    _warn_about_float64(traced, float32_buffers, model)
    excludes = source_location_excludes(options.source_location_excludes)
    graph = _C.import_module(traced, _tracing.widened(micro), excludes,
                             _tracing.MODEL_ATTRIBUTE, signature.tensor_names,
                             training=training, random_seed=_signed_seed(random_seed(options)),
                             downcast_mixed_floats=downcast)
    # 8- and 16-bit integer inputs are int32 on the device; the host streams
    # them at their own width (8-bit images cross PCIe as bytes).
    for index, tensor in enumerate(micro):
        if tensor.dtype in _tracing.WIDENED_DTYPES:
            graph.set_input_streamed_element_bytes(index, tensor.element_size())
    # (flat's outputs are set: the trace ran its forward().)
    return ImportedCall(signature, graph, flat.output_structure,
                        flat.output_dtypes)  # type: ignore[arg-type]


def _different_micro_batches(names: Sequence[str], tensors: Sequence[torch.Tensor],
                             micro: Sequence[torch.Tensor]) -> Optional[str]:
    """What a failed trace was given when the inputs' micro-batches differ in size: inputs
    whose rows differ in a call have micro-batches that differ too, which forward() may
    not expect (two inputs added row by row)."""
    rows = [(name, tensor.shape[0], part.shape[0])
            for name, tensor, part in zip(names, tensors, micro) if part.dim() > 0]
    if len({part for _, _, part in rows}) < 2:
        return None
    listed = ", ".join(f"{name} {whole} -> {part}" for name, whole, part in rows)
    return (f"(popsim traced forward() on one micro-batch of each input, its rows of the call "
            f"split by deviceIterations, gradientAccumulation and the replicas: {listed}. "
            "Inputs with different numbers of rows have micro-batches of different sizes.)")


def _warn_about_inputs_requiring_grad(names: Sequence[str],
                                      tensors: Sequence[torch.Tensor]) -> None:
    """Warns, once per compilation, that inputs with requires_grad=True get no gradient, as
    PopTorch warns: a model's calls compute gradients for its parameters only."""
    wanting = [name for name, tensor in zip(names, tensors) if tensor.requires_grad]
    if wanting:
        LOGGER.warning(
            "Input tensor has requires_grad=True set. This tensor will be detached because "
            "backward pass via inputs is not supported: popsim computes no gradient for input(s) "
            "%s (a training model's backward pass ends at its parameters).",
            ", ".join(f"'{name}'" for name in wanting))


def _warn_about_float64(traced: torch.jit.ScriptModule, float32_tensors: Sequence[str],
                        model: torch.nn.Module) -> None:
    """Warns, once per compilation, that the model's float64 parameters,
    buffers and ops compute in float32 on the device, as PopTorch computes
    them (the IPU has no float64 arithmetic), naming them."""
    host = _weights.named_tensors(model)
    tensors = [name for name in float32_tensors
               if name in host and host[name].dtype == torch.float64]
    ops = _float64_ops(traced)
    if not tensors and not ops:
        return
    parts = []
    if tensors:
        parts.append(f"parameters and buffers {', '.join(repr(t) for t in tensors[:5])}"
                     + (f" and {len(tensors) - 5} more" if len(tensors) > 5 else ""))
    if ops:
        parts.append(f"ops {', '.join(ops[:3])}" + (f" and {len(ops) - 3} more"
                                                      if len(ops) > 3 else ""))
    warnings.warn(f"The model uses torch.float64 ({'; '.join(parts)}): popsim, like PopTorch "
                  "on the IPU, computes float64 as float32, and returns float64 outputs as "
                  "float32. Convert with .float() to silence this warning.", stacklevel=4)


# A trace's float64 ops, by traced module: a trace the planners reuse
# (trace_reuse) compiles many times, and its graph does not change.
_FLOAT64_OPS: "weakref.WeakKeyDictionary[torch.jit.ScriptModule, List[str]]" = \
    weakref.WeakKeyDictionary()


def _float64_ops(traced: torch.jit.ScriptModule) -> List[str]:
    """The ops of `traced` that give float64 tensors, each with its source line."""
    found = _FLOAT64_OPS.get(traced)
    if found is not None:
        return found
    ops = []
    for node in traced.inlined_graph.nodes():
        # The tracer records Python numbers (x * 2.0) as 0-d float64 constants,
        # which promote nothing: they are not the model's float64.
        if node.kind() == "prim::Constant" and all(
                output.type().dim() == 0 for output in node.outputs()
                if isinstance(output.type(), torch._C.TensorType)):
            continue
        if any(isinstance(output.type(), torch._C.TensorType)
               and output.type().scalarType() == "Double" for output in node.outputs()):
            where = node.sourceRange().split("\n")[0].strip() if node.sourceRange() else ""
            ops.append(f"{node.kind()}" + (f" ({where})" if where else ""))
    _FLOAT64_OPS[traced] = ops
    return ops


@contextlib.contextmanager
def float32_statistics(model: torch.nn.Module, options: Options) -> Iterator[List[str]]:
    """The host tensors the device holds in float32 although their dtype is
    another, swapped for float32 copies while the model is traced; yields
    their names. These are float64 parameters and buffers (the IPU computes
    float64 as float32, as PopTorch does) and, with
    Precision.runningStatisticsAlwaysFloat (the default), the float16
    running statistics of batch norms, as PopTorch keeps them. The host's
    tensors keep their dtype."""
    swapped = []
    for prefix, module in model.named_modules():
        for group in (module._parameters, module._buffers):
            for name, tensor in group.items():
                if tensor is not None and tensor.dtype == torch.float64:
                    swapped.append((group, prefix, name, tensor))
        if (options.Precision.running_statistics_always_float
                and isinstance(module, torch.nn.modules.batchnorm._BatchNorm)):
            for name in ("running_mean", "running_var"):
                buffer = module._buffers.get(name)
                if buffer is not None and buffer.dtype == torch.float16:
                    swapped.append((module._buffers, prefix, name, buffer))
    for group, _, name, tensor in swapped:
        copy = tensor.detach().float()
        group[name] = (torch.nn.Parameter(copy, requires_grad=tensor.requires_grad)
                       if isinstance(tensor, torch.nn.Parameter) else copy)
    try:
        yield [f"{prefix}.{name}" if prefix else name for _, prefix, name, _ in swapped]
    finally:
        for group, _, name, tensor in swapped:
            group[name] = tensor


def downcasts_mixed_floats(options: Options) -> bool:
    """Whether ops mixing float16 and float32 operands compute in float16
    (Precision.halfFloatCasting: FloatDowncastToHalf; Default is that only
    under PopTorch's legacy tracing frontend, Jit.traceModel(True), and
    PyTorch's promotion otherwise, as in PopTorch 3)."""
    return options._session.downcasts_mixed_floats()


def random_seed(options: Options) -> int:
    """Options.randomSeed (an unsigned 64-bit integer), or one drawn from torch's generator."""
    seed = options.random_seed
    return seed if seed is not None else torch.initial_seed() % (2**63)


def _signed_seed(seed: int) -> int:
    """An unsigned 64-bit seed as the int64 of the same bits, which the importer takes (as
    the C++ API's Options::randomSeed casts it)."""
    return seed - 2**64 if seed >= 2**63 else seed


def shard_candidates(parameters: Iterable[Tuple[str, torch.Tensor]]
                     ) -> List[Tuple[str, bool, List[int]]]:
    """The model's parameters as replicated tensor sharding chooses among them (the host's
    rule, csrc/host/tensor_sharding.h): name, floating point or not, shape."""
    return [(name, parameter.is_floating_point(), list(parameter.shape))
            for name, parameter in parameters]


def training_config(options: Options, binding: Optional[OptimizerBinding],
                    groupings: Dict[str, "_replica_grouping.Grouping"],
                    candidates: List[Tuple[str, bool, List[int]]],
                    anchored_gradients: Sequence[str]) -> "_C.TrainingConfig":
    """What the program's training passes are told (compiler.training): the
    optimizer, replicas, sharding (the host's choice among `candidates`, from
    shard_candidates), loss scaling and anchored gradients for a training model; for
    inference, only the weights sharding splits. First, a PopART option the model
    refuses raises (Options._raise_invalid)."""
    options._raise_invalid(binding is not None)
    if binding is not None:
        config = _C.shard_parameters(options._session, True, candidates, binding.config(options))
        config.grouped_parameters = _replica_grouping.training_groups(groupings)
        config.anchored_gradients = list(anchored_gradients)
        return config
    return _C.shard_parameters(options._session, False, candidates, _C.TrainingConfig())


def compile_options(options: Options, graph: "_C.Graph", training: bool,
                    config: "_C.TrainingConfig") -> "_C.CompileOptions":
    """The typed options C++ compiles `graph` with, `config` being the
    program's training config (training_config): the host runtime builds
    them (csrc/host/compile_options_builder.h) from the session's options,
    the environment's engine options and the host's threads."""
    return _C.build_compile_options(options._session, graph, training, config,
                                    random_seed(options), _engine_options.environment_threads(),
                                    torch.get_num_threads())
