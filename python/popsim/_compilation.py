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
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, NamedTuple,
                    Optional, Sequence, Tuple)

import torch

from popsim import _C, _engine_options, _replica_grouping, _replication, _tracing, _weights
from popsim.enums import HalfFloatCastingBehavior, OutputMode
from popsim.errors import CompilationError, InputError, OptionError
from popsim.options import Options, source_location_excludes
from popsim.strategies import AutoStage, PipelinedExecution

if TYPE_CHECKING:
    from popsim._training import OptimizerBinding

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


def micro_batches(options: Options, signature: "_tracing.Signature",
                  tensors: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    """One micro-batch of every input (float64 ones as float32), copied (tracing
    runs the model, which may modify its inputs in place); InputErrors name the
    input that cannot be split."""
    tensors, _ = float64_as_float32(signature.tensor_names, tensors)
    iterations = options.device_iterations
    accumulation = options.Training.gradient_accumulation
    replication = _replication.of(options)
    replica_label, replicas = replication.input_label, replication.input_parts
    factor = iterations * accumulation * replicas
    if accumulation == 1 and replicas == 1:
        explained = (f"deviceIterations ({iterations}): each call runs {iterations} device "
                     "iteration(s) on micro-batches of equal size")
    else:
        product = f"deviceIterations ({iterations})"
        if accumulation > 1:
            product += f" x gradientAccumulation ({accumulation})"
        if replicas > 1:
            product += f" x {replica_label} ({replicas})"
        explained = (f"{product} = {factor}: each call runs {iterations} device iteration(s) "
                     f"of {accumulation} micro-batch(es) on each of {replicas} replica(s), "
                     "all of equal size")
    micro = []
    for name, tensor in zip(signature.tensor_names, tensors):
        if tensor.dtype not in SUPPORTED_DTYPES + _tracing.WIDENED_DTYPES:
            raise InputError(
                f"Input '{name}' has dtype {tensor.dtype}; popsim takes float32, float16, "
                "int32, int64, bool, uint8, int8 and int16 tensors, and float64 ones as float32 "
                "(convert it, e.g. with .float()).")
        if tensor.numel() == 0:
            raise InputError(
                f"Input '{name}' has no elements (shape {list(tensor.shape)}). popsim, as "
                "PopTorch, streams tensors that hold data: give every input at least one "
                "element (a batch of at least one sample per micro-batch), or leave the empty "
                "one out of the model's inputs.")
        if tensor.dim() == 0:
            if factor == replicas:  # one micro-batch per call: every replica gets the scalar
                micro.append(tensor.clone())
                continue
            raise InputError(
                f"Input '{name}' is a scalar (0-d tensor), but popsim splits each input along "
                f"dimension 0 into {explained}. Give it a batch dimension (e.g. "
                f"{name}.expand({factor})), or use one device iteration and no gradient "
                "accumulation.")
        if tensor.shape[0] % factor != 0:
            raise InputError(
                f"Invalid batch dimension: input '{name}' has {tensor.shape[0]} samples in "
                f"dimension 0, which must be a multiple of {explained}.")
        micro.append(tensor[: tensor.shape[0] // factor].clone())
    return micro


class ImportedCall(NamedTuple):
    """A call's model as popsim IR, and how its inputs and outputs are laid out."""
    signature: "_tracing.Signature"
    graph: _C.Graph
    output_structure: Any
    output_dtypes: List[torch.dtype]
    # float16 buffers the device holds in float32 (Precision.runningStatisticsAlwaysFloat).
    float32_buffers: List[str]


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
    """Traces the model on one micro-batch of the call's inputs and imports the
    trace into popsim IR (C++). `tracing_done` marks the end of the trace."""
    signature = _tracing.Signature(args, kwargs, model.forward)
    micro = micro_batches(options, signature, signature.tensors(args, kwargs))
    batched = [tensor for tensor in micro if tensor.dim() > 0]
    if batched:
        replication = _replication.of(options)
        replica_label, replicas = replication.input_label, replication.input_parts
        signature.batch_explanation = (
            f"micro-batch {batched[0].shape[0]} x deviceIterations {options.device_iterations} "
            f"x gradientAccumulation {options.Training.gradient_accumulation}"
            + (f" x {replica_label} {replicas}" if replicas > 1 else ""))
    downcast = downcasts_mixed_floats(options)
    try:
        with float32_statistics(model, options) as float32_buffers:
            traced, flat = _tracing.trace(model, signature, micro, training,
                                          module_scopes=options.module_namescope,
                                          downcast_mixed_floats=downcast,
                                          shapes_only=options.Simulator.cost_only)
    except (MemoryError, RuntimeError) as error:
        if isinstance(error, RuntimeError) and "can't allocate memory" not in str(error):
            raise
        raise CompilationError(host_memory_message(type(model).__name__, error)) from error
    tracing_done()
    _warn_about_float64(traced, float32_buffers, model)
    graph = _C.import_module(traced, _tracing.widened(micro), source_location_excludes(options),
                             _tracing.MODEL_ATTRIBUTE, signature.tensor_names,
                             training=training, random_seed=random_seed(options),
                             downcast_mixed_floats=downcast)
    # 8- and 16-bit integer inputs are int32 on the device; the host streams
    # them at their own width (8-bit images cross PCIe as bytes).
    for index, tensor in enumerate(micro):
        if tensor.dtype in _tracing.WIDENED_DTYPES:
            graph.set_input_streamed_element_bytes(index, tensor.element_size())
    # (flat's outputs are set: the trace ran its forward().)
    return ImportedCall(signature, graph, flat.output_structure,
                        flat.output_dtypes,  # type: ignore[arg-type]
                        float32_buffers)


def _warn_about_float64(traced: torch.jit.ScriptModule, float32_tensors: Sequence[str],
                        model: torch.nn.Module) -> None:
    """Warns, once per compilation, that the model's float64 parameters,
    buffers and ops compute in float32 on the device, as PopTorch computes
    them (the IPU has no float64 arithmetic), naming them."""
    host = _weights.named_tensors(model)
    tensors = [name for name in float32_tensors
               if name in host and host[name].dtype == torch.float64]
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
    behavior = options.Precision.half_float_casting
    if behavior == HalfFloatCastingBehavior.Default:
        return options.Jit.trace_model
    return behavior == HalfFloatCastingBehavior.FloatDowncastToHalf


def random_seed(options: Options) -> int:
    """Options.randomSeed, or one drawn from torch's generator."""
    seed = options.random_seed
    return seed if seed is not None else torch.initial_seed() % (2**63)


def sharded_weights(options: Options, binding: Optional["OptimizerBinding"],
                    parameters: Iterable[Tuple[str, torch.Tensor]]) -> Dict[str, torch.Size]:
    """{weight: shape} of the weights each replica stores only a shard of
    (replicated tensor sharding of TensorLocations' weight location): the
    trained ones in training (over the job's replicas), any in inference."""
    if binding is not None:
        return binding.sharded_weight_shapes(options)
    return _replication.sharded_by(options.TensorLocations.weight_location,
                                   _replication.of(options, training=False).job, parameters)


def training_config(options: Options, binding: Optional["OptimizerBinding"],
                    groupings: Dict[str, "_replica_grouping.Grouping"],
                    parameters: Iterable[Tuple[str, torch.Tensor]],
                    anchored_gradients: Sequence[str]) -> "_C.TrainingConfig":
    """What the program's training passes are told (compiler.training): the
    optimizer, replicas, sharding, loss scaling and anchored gradients for a
    training model; for inference, only the weights sharding splits."""
    if binding is not None:
        config = binding.config(options)
        config.grouped_parameters = _replica_grouping.training_groups(groupings)
        config.anchored_gradients = list(anchored_gradients)
        return config
    config = _C.TrainingConfig()
    sharded = sharded_weights(options, None, parameters)
    if sharded:
        config.replicas = _replication.of(options, training=False).job
        config.sharded_weights = list(sharded)
    return config


def compile_options(options: Options, graph: "_C.Graph", training: bool,
                    output_mode: OutputMode, config: "_C.TrainingConfig") -> "_C.CompileOptions":
    """The typed options C++ compiles `graph` with, `config` being the
    program's training config (training_config). Blocks without an execution
    strategy run pipelined, a stage per IPU (as PopTorch does)."""
    blocks = graph.blocks()
    strategy = options.execution_strategy
    if strategy is None and blocks:
        strategy = PipelinedExecution(AutoStage.SameAsIpu)
    stages = strategy._assign(blocks) if strategy is not None else []
    ipus_used = 1 + max((ipu for _, _, ipu in stages), default=0)
    if options.auto_round_num_ipus:  # IPUs come in powers of two
        ipus_used = 1 << (ipus_used - 1).bit_length()
    num_ipus = _replication.ipus_per_replica(options, ipus_used)
    for ipu in options.available_memory_proportion:
        if ipu >= num_ipus:
            raise OptionError(
                f"setAvailableMemoryProportion names IPU{ipu} but the simulated system has "
                f"{num_ipus} IPU(s), IPU0 to IPU{num_ipus - 1}. Remove the entry or raise "
                "Simulator.numIpus.")
    compiled = _C.CompileOptions()
    system = compiled.system
    system.num_ipus = num_ipus
    system.chip = getattr(_C.ChipVersion, options.Simulator.ipu_version)
    system.memory_per_ipu = options.Simulator.memory_per_ipu or 0
    replicas = _replication.of(options, training).local
    system.replicas_per_host_thread = _engine_options.replicas_per_host_thread(
        options._Popart.get("engineOptions"), replicas)
    program = compiled.compiler
    program.program = _C.ProgramKind.Training if training else _C.ProgramKind.Inference
    program.stages = [_C.StageAssignment(*stage) for stage in stages]
    program.device_iterations = options.device_iterations
    program.gradient_accumulation = options.Training.gradient_accumulation
    program.recomputation = options.Training.recomputation_enabled
    program.output_mode = getattr(_C.OutputMode, output_mode.name)
    program.output_return_period = options.output_return_period
    # Collectives are costed on all the job's IPUs (every replica's, in every process).
    config.system_ipus = num_ipus * config.replicas
    program.training = config
    memory = compiled.memory
    memory.prefetch_depth = options.prefetch_depth
    memory.half_partials = options.Precision.partials_type == torch.float16
    memory.available_memory_proportion = dict(options.available_memory_proportion)
    compiled.clock.synthetic_data = options.synthetic_data
    kernels = compiled.kernels
    kernels.threads_per_ipu = options.Simulator.threads_per_ipu or 0
    if replicas > 1 and not kernels.threads_per_ipu:  # the host's threads shared by all IPUs
        kernels.threads_per_ipu = max(1, torch.get_num_threads() // (replicas * ipus_used))
    kernels.stochastic_rounding = options.Precision.stochastic_rounding
    kernels.floating_point_exceptions = options.Precision.floating_point_exceptions
    kernels.cost_only = options.Simulator.cost_only
    if options.Simulator.allow_over_capacity and not options.Simulator.cost_only:
        raise OptionError(
            "Simulator.allowOverCapacity() needs Simulator.costOnly(): only a run that computes "
            "nothing may exceed its IPUs' memory. Set costOnly() too, or leave "
            "allowOverCapacity off.")
    compiled.allow_over_capacity = options.Simulator.allow_over_capacity
    kernels.stochastic_rounding_seed = random_seed(options)
    options.TensorLocations._fill(compiled)
    if strategy is not None:
        strategy._fill(compiled)
    return compiled
