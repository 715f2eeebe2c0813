"""A model compiled for a call: from the user's model, options and first call
to a frozen CompiledModel, in processing order (ARCHITECTURE.md, section 1):

1. trace the model on one micro-batch and import the trace into popsim IR
   (compilation.import_call), its replica-grouped parameters traced with
   their first group's value;
2. for training, bind the optimizer to the program's parameters and check
   what it brings (optimizer_binding);
3. check the anchors against the model (anchors.plan) and build the training
   config and the compile options (the host runtime builds these);
4. compile, or load loadExecutable's program or a cached one
   (executable_cache.executable_for), and make the host runtime's device
   program of it for the job's replicas;
5. tell the device program which variables are sharded and grouped.

The weights then go to the device (training/weight_flow.py binds the program).
"""

import contextlib
import time
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Set, Tuple

import torch

from popsim import _C
from popsim.api.options import Options
from popsim.compile import anchors as _anchors
from popsim.compile import compilation as _compilation
from popsim.compile import call_spec as _call_spec
from popsim.compile import executable_cache as _executable_cache
from popsim.compile import executable_file as _executable_file
from popsim.compile.progress import CompileProgress
from popsim.device import process_group as _process_group
from popsim.device import replication as _replication
from popsim.frontend import structure as _structure
from popsim.frontend import tracing as _tracing
from popsim.frontend import weights as _weights
from popsim.training import optimizer_binding as _binding
from popsim.training import poptorch_state_names as _poptorch_names
from popsim.training import replica_grouping as _replica_grouping


class CompiledModel(NamedTuple):
    """What a compilation made, fixed until the model compiles again."""
    graph: _C.Graph  # as imported from the trace
    program: _C.DeviceProgram  # on the device, for the job's replicas
    compile_options: _C.CompileOptions
    signature: _tracing.Signature  # the call it compiled for
    output_structure: _structure.Structure
    input_updates: List[int]  # inputs the model modifies in place, by index
    # (output index, dtype) of outputs the device holds widened.
    narrow_outputs: List[Tuple[int, torch.dtype]]
    stages: List[Tuple[str, int, int]]  # (block, stage, ipu) as compiled
    anchors: _anchors.CallAnchors
    call_spec: _call_spec.CallSpec  # the compiling call, tensors as shapes and dtypes
    binding: Optional[_binding.OptimizerBinding]  # a training model's optimizer
    replica_groups: Dict[str, int]  # each replica-grouped parameter's number of groups
    broadcast_buffers: List[str]  # replicated training: buffers replica 0 hands on
    flags: Tuple[bool, ...]  # every module's train/eval flag as compiled
    started: float  # time.perf_counter() when compiling started


def module_flags(model: torch.nn.Module) -> Tuple[bool, ...]:
    """Every module's train/eval flag, which a training model is compiled for."""
    return tuple(module.training for module in model.modules())


@contextlib.contextmanager
def flags_set(model: torch.nn.Module, flags: Tuple[bool, ...]) -> Iterator[None]:
    """The modules' train/eval flags set to `flags` (in modules() order), and
    the caller's restored after."""
    modules = list(model.modules())
    saved = [module.training for module in modules]
    for module, flag in zip(modules, flags):
        module.training = flag
    try:
        yield
    finally:
        for module, flag in zip(modules, saved):
            module.training = flag


def _buffer_names(model: torch.nn.Module) -> Set[str]:
    return {name for prefix, module in model.named_modules()
            for name in (f"{prefix}.{b}" if prefix else b
                         for b, t in module._buffers.items() if t is not None)}


def compile_model(model: torch.nn.Module, shallow: torch.nn.Module, options: Options,
                  training: bool, optimizer: Optional[torch.optim.Optimizer],
                  per_replica_params: Dict[str, tuple], flags: Tuple[bool, ...],
                  names_by_tensor: Dict[int, str], reported_attributes: Set[str],
                  args: Tuple[Any, ...], kwargs: Dict[str, Any], progress: CompileProgress,
                  exported: Optional[Tuple[str, _executable_file.ProgramFile]] = None
                  ) -> CompiledModel:
    """Compiles `model` (the user's; `shallow` is the executor's copy, which is
    traced) for the call (`args`, `kwargs`) with its modules' train/eval `flags`;
    `exported` is loadExecutable's file, whose program it loads instead."""
    started = time.perf_counter()
    progress.phase("trace")
    groupings = _replica_grouping.plan(per_replica_params, dict(model.named_parameters()),
                                       options, training)
    shallow.training = flags[0]  # the shallow copy has its own top-level flag: the model's
    with _replica_grouping.traced_with_first_group(model, groupings), flags_set(model, flags):
        imported = _compilation.import_call(shallow, options, training, args, kwargs,
                                            lambda: progress.phase("import"))
    graph = imported.graph
    binding = None
    if training:
        assert optimizer is not None, "a training model has an optimizer"
        binding = _binding.OptimizerBinding(optimizer, names_by_tensor)
        _binding.check_group_attributes(optimizer, options, reported_attributes)
        _replica_grouping.check_no_clipping(groupings, binding.max_grad_norm)
    tensors = _weights.named_tensors(shallow)
    # The optimizer's state and compound hyper-parameters by PopTorch's names, which
    # anchors may name: the state the program may keep, and the scalars (host values).
    state_names, scalars = None, []
    if binding is not None:
        state_names = _poptorch_names.of_binding(
            binding, {name: grouping.group_count for name, grouping in groupings.items()})
        scalars = list(state_names.ipu_param(binding.optimizer.param_groups,
                                             _binding.grad_scale(options),
                                             binding.loss_scaling()))
    anchor_plan = _anchors.plan(
        options, training, binding.trained_names() if binding is not None else [],
        list(tensors), (state_names.candidate_names() if state_names is not None else []) + scalars)
    anchor_shapes = {name: tensors[name].shape for _, name in anchor_plan.gradients}
    # The parameters as replicated tensor sharding chooses among them (the host's rule).
    candidates = _compilation.shard_candidates(model.named_parameters())
    config = _compilation.training_config(
        options, binding, groupings, candidates,
        [name for _, name in anchor_plan.gradients])
    compiled = _compilation.compile_options(options, graph, training, config)
    progress.phase("compile")
    program = _replication.device_program(
        _executable_cache.executable_for(graph, compiled, options, exported), options, training,
        compiled, [(g.size, g.stride, g.job) for g in groupings.values()])
    progress.phase("weights")
    replication = _replication.of(options, training)
    broadcast_buffers: List[str] = []
    if (training and replication.job > 1 and options.broadcast_buffers
            and not program.cost_only):
        buffers = _buffer_names(shallow)
        broadcast_buffers = [name for name in program.weight_names() if name in buffers]
    if training and options.Distributed.numProcesses > 1 and not program.cost_only:
        # Every process starts training from process 0's weights, whatever their seeds.
        _process_group.broadcast_from_first_process(
            _weights.host_weights(shallow, program.weight_names()))
    if not program.cost_only:
        program.shard_variables(_C.sharded_variables(config, candidates))
        if groupings:  # more than one group: several replicas
            program.group_variables(
                {variable: list(grouping.job) for name, grouping in groupings.items()
                 for variable in [name] + (binding.parameter_states(name) if binding else [])})
    return CompiledModel(
        graph=graph, program=program, compile_options=compiled, signature=imported.signature,
        output_structure=imported.output_structure, input_updates=graph.input_updates(),
        narrow_outputs=[(i, dtype) for i, dtype in enumerate(imported.output_dtypes)
                        if dtype in _tracing.WIDENED_DTYPES],
        stages=[(s.block, s.stage, s.ipu) for s in compiled.compiler.stages],
        anchors=_anchors.resolve(
            anchor_plan, anchor_shapes, program, tensors, names_by_tensor,
            {**(state_names.sources(binding.state_shapes(program))
                if state_names is not None and binding is not None else {}),
             **{name: None for name in scalars}}),
        call_spec=_call_spec.call_spec(args, kwargs), binding=binding,
        replica_groups={name: grouping.group_count for name, grouping in groupings.items()},
        broadcast_buffers=broadcast_buffers, flags=flags, started=started)
