"""The wrapper that runs a PyTorch model on simulated IPUs.

``popsim.inferenceModel(model, options)`` and ``popsim.trainingModel(model,
options, optimizer)`` return an :class:`Executor`. The first call (or
``compile()``) traces the model on one micro-batch, lowers it to popsim's IR
in C++ (for training: with its backward pass and optimizer step), plans
memory on the simulated IPUs and builds the kernels; every call then runs
``deviceIterations`` iterations in C++.

Weights: an inference model copies the host model's weights to the device
when it compiles (and on copyWeightsToDevice()); it also picks up weights a
training model of the same host model has trained. While a training model
runs, its device weights are the source of truth; the host model is updated
lazily, when it is used (see _host_sync.py).
"""

import contextlib
import copy
import functools
import itertools
import json
import os
import threading
import time
import warnings
from typing import (Any, Callable, Concatenate, Dict, Iterator, List, Mapping,
                    NamedTuple, Optional, ParamSpec, Sequence, Set, Tuple, TypeVar, Union)

import torch
from torch.nn.modules.module import _IncompatibleKeys

from popsim import _C
from popsim.compile import anchors as _anchors
from popsim.compile import compilation as _compilation
from popsim.api import engine_options as _engine_options
from popsim.compile import executable_file as _executable_file
from popsim.api import hooks as _hooks
from popsim.training import host_sync as _host_sync
from popsim.training import optimizer_state as _optimizer_state
from popsim.device import process_group as _process_group
from popsim.training import replica_grouping as _replica_grouping
from popsim.device import replication as _replication
from popsim.frontend import structure as _structure
from popsim.frontend import tracing as _tracing
from popsim.training import optimizer_binding as _training
from popsim.training import registry as _training_registry
from popsim.frontend import weights as _weights
from popsim.api.log import LOGGER
from popsim.api.enums import CommGroupType, ConnectionType, OutputMode, VariableRetrievalMode
from popsim.api.errors import ExecutableFileError, InputError, OptionError
from popsim.compile.progress import CompileProgress
from popsim.reports.trace import ExecutionTrace
from popsim.reports.sizing import SizingReport
from popsim.api.options import Options, profile_directory

_log_counter = itertools.count()
PROFILE_DIR_VARIABLE = "POPSIM_PROFILE_DIR"
# Narrow integer inputs reach the device widened to int32 (exact; the importer
# allows only conversions and views of them, which give eager's numbers).
_WIDENED_DTYPES = _tracing.WIDENED_DTYPES
_widened = _tracing.widened


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors share an element of memory."""
    if a.numel() == 0 or b.numel() == 0 or a.storage().data_ptr() != b.storage().data_ptr():
        return False
    spans = []
    for t in (a, b):
        first = t.data_ptr()
        extent = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
        spans.append((first, first + (extent + 1) * t.element_size()))
    if not (spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]):
        return False
    if a.dtype != b.dtype:
        return True
    # Interleaved but maybe disjoint (x[:, :2] and x[:, 2:]): compare positions.
    positions = torch.arange(a.storage().size())
    at = [positions.as_strided(t.shape, t.stride(), t.storage_offset()).reshape(-1)
          for t in (a, b)]
    return bool(torch.isin(at[0], at[1]).any())


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _one_thread_at_a_time(method: Callable[Concatenate["Executor", _P], _R]
                          ) -> Callable[Concatenate["Executor", _P], _R]:
    """Serialises calls of one model from several threads: a call owns the
    model's device memory, its weights on the host and its call record, so a
    second thread waits for the first. Different models run concurrently."""

    @functools.wraps(method)
    def serialised(self: "Executor", *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)

    return serialised


def _module_flags(model: torch.nn.Module) -> Tuple[bool, ...]:
    """Every module's train/eval flag, which a training model is compiled for."""
    return tuple(module.training for module in model.modules())


@contextlib.contextmanager
def _flags_set(model: torch.nn.Module, flags: Tuple[bool, ...]) -> Iterator[None]:
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


# A compiled program on its device: the host runtime's, which runs a call on every replica
# (or, cost-only, replays the clock) and moves variables (csrc/host/device_program.h).
Program = _C.DeviceProgram


class Executor:
    """A model compiled for simulated IPUs, used like the model itself.

    PopTorch calls this class ``PoplarExecutor``; popsim provides that name too.
    """

    def __init__(self, model: Union[torch.nn.Module, "Executor"], options: Optional[Options] = None,
                 training: bool = False, optimizer: Optional[torch.optim.Optimizer] = None) -> None:
        """Wraps ``model`` for the simulated IPUs; nothing compiles before the first call.

        :func:`popsim.inferenceModel` and :func:`popsim.trainingModel` build executors this
        way. ``options`` are frozen (the caller's object too: :meth:`popsim.Options.clone`
        gives a copy to change) and the executor keeps a clone of them. As PopTorch does, the
        executor works on a shallow copy of ``model``: parameters and submodules are shared
        with it.

        Args:
            model: The ``torch.nn.Module`` to run, or an executor, whose model is wrapped
                again.
            options: The options to compile and run with; None means ``popsim.Options()``.
            training: True for a training model (each call runs optimizer steps), False for an
                inference model.
            optimizer: A training model's optimizer; None means
                :class:`popsim.optim.SGD` with ``lr=0.01``. An inference model keeps it unused.

        Raises:
            TypeError: when ``model`` is neither a ``torch.nn.Module`` nor an executor.
            OptionError: when ``options`` is not a :class:`popsim.Options`, when an inference
                model's options accumulate gradients (``Training.gradientAccumulation`` other
                than 1), when ``OutputMode.EveryN``'s period does not divide the micro-batches
                of a call, or when a training model's optimizer is not one popsim trains with
                (SGD, Adam, AdamW, RMSprop or LAMB).
        """
        if isinstance(model, Executor):
            model = model.model
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"popsim wraps torch.nn.Module instances, got {type(model).__name__}.")
        if options is None:
            options = Options()
        if not isinstance(options, Options):
            raise OptionError(f"options must be a popsim.Options, got {type(options).__name__}.")
        options._freeze()
        self._lock = threading.RLock()  # re-entrant: a call may sync this model's weights
        self._options = options.clone()
        self._options._freeze()
        self._user_model = model
        # A shallow copy, as PopTorch makes: parameters and submodules are shared
        # with the user's model, the top-level attributes are not.
        self._model = copy.copy(model)
        self._training = training
        self._check_options()
        self._record: Optional[_training_registry.TrainingRecord] = None
        if training:
            if optimizer is None:
                from popsim.training.optim import SGD

                optimizer = SGD(model.parameters(), lr=0.01)
            _training.optimizer_kind(optimizer)  # fails early for unsupported optimizers
            self._record = _training_registry.register(model, self)
        self._optimizer = optimizer
        # Replica-grouped parameters (PopTorch's attribute): name -> (CommGroupType,
        # shards, VariableRetrievalMode), set with ipu_model.<param>.replicaGrouping.
        self.per_replica_params: Dict[str, tuple] = {}
        # Kept across recompilations: same profile directory.
        self._profile_writer: Optional[_C.ProfileWriter] = None
        self._warned_float64 = False  # float64 inputs converted: said once per model
        # Optimizer attributes popsim does not use, said once.
        self._reported_attributes: Set[str] = set()
        # Options.logCycleCount, read once rather than on every call.
        self._log_cycles = self._options.log_cycle_count
        # A training model's own train/eval flags (kept through destroy()): the
        # modules' when it first compiles, or as Executor.train / eval set them.
        self._owned_flags: Optional[Tuple[bool, ...]] = None
        self._reset()

    @property
    def _program(self) -> Program:
        """The compiled program; only once the model has compiled."""
        assert self._executable is not None, "the model has not compiled"
        return self._executable

    @property
    def _compiled_signature(self) -> "_tracing.Signature":
        assert self._signature is not None, "the model has not compiled"
        return self._signature

    @property
    def _compiled_options(self) -> _C.CompileOptions:
        assert self._compile_options is not None, "the model has not compiled"
        return self._compile_options

    @property
    def _training_optimizer(self) -> torch.optim.Optimizer:
        assert self._optimizer is not None, "an inference model has no optimizer"
        return self._optimizer

    @property
    def _optimizer_binding(self) -> "_training.OptimizerBinding":
        """A training model's optimizer as the program uses it; once compiled."""
        assert self._binding is not None, "the training model has not compiled"
        return self._binding

    @property
    def _compiled_graph(self) -> _C.Graph:
        assert self._graph is not None, "the model has not compiled"
        return self._graph

    def _reset(self) -> None:
        close = getattr(self.__dict__.get("_executable"), "close", None)
        if close is not None:  # replicas: their threads
            close()
        self._graph: Optional[_C.Graph] = None
        # Every module's train/eval flag when compiled.
        self._compiled_flags: Optional[Tuple[bool, ...]] = None
        self._executable: Optional[Program] = None
        self._broadcast_buffers: List[str] = []  # replicated training: buffers replica 0 hands on
        self._signature: Optional[_tracing.Signature] = None
        self._output_structure: Optional[_structure.Structure] = None
        self._input_updates: List[int] = []  # inputs the model modifies in place, by index
        # (output index, dtype) of outputs widened on the device.
        self._narrow_outputs: List[Tuple[int, torch.dtype]] = []
        self._float32_buffers: List[str] = []  # float16 buffers the device holds in float32
        self._compilation_seconds = 0.0
        self._stages: List[Tuple[str, int, int]] = []  # (block, stage, ipu) as compiled
        self._last_call_items: Optional[int] = None  # the last call's batch, this process's
        self._binding: Optional[_training.OptimizerBinding] = None
        self._attached = False
        self._detached_state: Optional[Dict[str, torch.Tensor]] = None
        self._host_dirty = False
        # enableSyntheticData: drawn at the first call.
        self._synthetic_inputs: Optional[List[torch.Tensor]] = None
        self._optimizer_device_newer = False  # steps since the optimizer state was copied home
        self._optimizer_host_newer = False  # optimizer.load_state_dict() since the last call
        # optimizer.load_state_dict()'s "ipu_state", written to the device with the state
        self._pending_ipu_state: Optional[Dict[str, torch.Tensor]] = None
        self._syncing = False
        # Inference: training versions last uploaded.
        self._seen_training: Optional[Dict[int, int]] = None
        # Inference: _training_registry.generation when checked.
        self._seen_generation: Optional[int] = None
        self._compile_options: Optional[_C.CompileOptions] = None  # the program's
        # The compiling call's arguments, tensors as shapes and dtypes.
        self._call_spec: Optional[Tuple[_structure.Structure, List[Any]]] = None
        # (path, ProgramFile) while loadExecutable compiles.
        self._program_file: Optional[Tuple[str, _executable_file.ProgramFile]] = None
        self._anchor_plan = _anchors.AnchorPlan([], [])  # Options.anchorTensor's, checked
        self._device_anchors: Set[str] = set()  # the anchored variables the device holds
        # getAnchoredTensor's values from the last call.
        self._anchor_memory: Dict[str, torch.Tensor] = {}
        # Each anchored gradient's parameter shape, by name.
        self._anchor_shapes: Dict[str, torch.Size] = {}

    def _check_options(self) -> None:
        opts = self._options
        if not self._training and opts.Training.gradient_accumulation != 1:
            raise OptionError(
                "Inference models do not accumulate gradients: set "
                f"opts.Training.gradientAccumulation(1) (it is "
                f"{opts.Training.gradient_accumulation}). To run several micro-batches per "
                "call, use opts.deviceIterations(n).")
        accumulation = opts.Training.gradient_accumulation
        micro_batches = opts.device_iterations * accumulation
        if (opts.output_mode == OutputMode.EveryN
                and micro_batches % opts.output_return_period != 0):
            count = (f"deviceIterations to be a multiple of it, got {micro_batches}"
                     if accumulation == 1 else
                     f"the micro-batches per call (deviceIterations x gradientAccumulation = "
                     f"{micro_batches}) to be a multiple of it")
            raise OptionError(f"OutputMode.EveryN with output_return_period "
                              f"{opts.output_return_period} needs {count}.")

    @property
    def model(self) -> torch.nn.Module:
        """The user's model (its parameters are the ones popsim uses)."""
        return self._user_model

    def __getattr__(self, name: str) -> Any:
        # Only names the executor itself lacks get here: as PopTorch's
        # executor, it stands for the user's model (ipu_model.linear.weight,
        # ipu_model.state_dict(), ipu_model.parameters(), its buffers), whose
        # reads copy trained weights home first (_host_sync.py).
        model = self.__dict__.get("_user_model")
        if model is None or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        value = getattr(model, name)
        if isinstance(value, torch.nn.Parameter):
            # ipu_model.weight.replicaGrouping(...), as PopTorch's parameters offer it
            # (for this executor: the latest access through an executor decides).
            handle = _replica_grouping.GroupingHandle(self, name)
            setattr(value, "replicaGrouping", handle)
            setattr(value, "perReplica", handle)
        return value

    def _set_replica_grouping(self, name: str,
                              setting: Tuple[CommGroupType, int, VariableRetrievalMode]) -> None:
        if self._executable is not None:
            raise OptionError(f"replicaGrouping of '{name}': the model has compiled already; "
                              "set groupings before it first runs or compiles (or destroy() "
                              "it first).")
        self.per_replica_params[name] = setting

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        # isinstance(ipu_model, MyModel) and isinstance(ipu_model, nn.Module)
        # hold, as for PopTorch's executor; type() still says Executor.
        model = self.__dict__.get("_user_model")
        return type(model) if model is not None else Executor

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickling a wrapped model (torch.save(ipu_model, f), pickle.dumps)
        pickles the model it wraps, with the device's latest weights copied
        home first: loading gives that torch.nn.Module, without popsim."""
        if self._executable is not None:
            self._sync_host_if_needed()
        return self._user_model.__reduce_ex__(protocol)

    @property
    def options(self) -> Options:
        """The (frozen) options this model runs with."""
        return self._options

    def _output_mode(self) -> OutputMode:
        mode = self._options.output_mode
        if mode == OutputMode.Default:
            mode = OutputMode.Final if self._training else OutputMode.All
        return mode

    def train(self, mode: bool = True) -> "Executor":
        """Sets the train/eval flags of the wrapped model's modules, as ``Module.train(mode)``.

        A training model takes the flags it is given this way as its own: it compiles again at
        its next call when they changed since it compiled (dropout and batch statistics follow
        the flags, as in eager PyTorch). Flags set on the user's modules directly
        (``model.eval()`` to validate, say) leave it as it compiled, as PopTorch's executors own
        their mode. An inference model runs in eval mode whatever the flags.

        Args:
            mode: True for train mode, False for eval mode.

        Returns:
            This executor, so calls chain.
        """
        self._user_model.train(mode)
        if self._training:
            self._owned_flags = _module_flags(self._user_model)
        return self

    def eval(self) -> "Executor":
        """Sets the wrapped model's modules to eval mode, as ``train(False)`` does.

        Returns:
            This executor, so calls chain.
        """
        return self.train(False)

    @_one_thread_at_a_time
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if (self._executable is not None and self._training
                and self._owned_flags != self._compiled_flags):
            LOGGER.info("The training model's train/eval flags changed since it compiled "
                        "(Executor.train / eval): compiling again")
            self.destroy()
        if self._executable is None:
            self._compile(args, kwargs)
        if not self._attached:
            self.attachToDevice()
        start = time.perf_counter()
        if not self._training:
            self._catch_up_with_training()
        elif self._optimizer_host_newer:
            self._write_optimizer_state()
        tensors = self._compiled_signature.tensors(args, kwargs)
        self._last_call_items = next((t.shape[0] for t in tensors if t.dim() > 0), 0)
        if self._input_updates:
            self._refuse_written_inputs_sharing_memory(tensors)
        device_tensors, converted = _compilation.float64_as_float32(
            self._compiled_signature.tensor_names, tensors)
        if converted and not self._warned_float64:
            warnings.warn(_compilation.float64_warning(converted), stacklevel=2)
            self._warned_float64 = True
        synthetic = self._options.synthetic_data
        if synthetic and not self._cost_only:  # no host I/O: the device's own data in
            if self._synthetic_inputs is None:
                self._synthetic_inputs = _compilation.synthetic_inputs(
                    device_tensors, _compilation.random_seed(self._options))
            device_tensors = self._synthetic_inputs
        if self._cost_only:  # its values are never read: its types will do
            device_tensors = [torch.empty(t.shape, dtype=t.dtype, device="meta")
                              for t in device_tensors]
        outputs = self._program.run(_widened(device_tensors))
        if synthetic and not self._cost_only:
            outputs = [torch.zeros_like(output) for output in outputs]
        if self._log_cycles:
            LOGGER.info("Total number of IPU cycles: %d", self._program.first.last_run_cycles)
        if self._input_updates:
            outputs = (outputs[:-len(self._input_updates)] if synthetic or self._cost_only
                       else self._write_back_inputs(tensors, outputs))
        outputs, self._anchor_memory = _anchors.take(self._anchor_plan, outputs,
                                                     self._anchor_shapes)
        if self._anchor_plan.variables:
            names = [name for _, name in self._anchor_plan.variables]
            values = self._program.read_variables(sorted(set(names) & self._device_anchors))
            if _anchors.LOSS_SCALE_STATE not in values:  # a constant factor: the optimizer's
                scale = float(getattr(self._optimizer, "loss_scaling", 1.0) or 1.0)
                values[_anchors.LOSS_SCALE_STATE] = torch.tensor(scale)
            self._anchor_memory.update(
                {short: values[name] for short, name in self._anchor_plan.variables})
        for index, dtype in self._narrow_outputs:
            outputs[index] = outputs[index].to(dtype)
        if self._broadcast_buffers:
            self._program.broadcast(self._broadcast_buffers)
        if self._training:
            # A cost-only device trains nothing: the host stays the truth.
            self._host_dirty = not self._cost_only
            self._optimizer_device_newer = not self._cost_only
            assert self._record is not None
            self._record.called()
            self._count_optimizer_steps()
        assert self._output_structure is not None, "the model has compiled"
        result = _structure.unflatten(outputs, self._output_structure)
        if self._profile_writer is not None:
            self._profile_writer.after_call(self._program.first,
                                            time.perf_counter() - start, self._sizing_job())
        return result

    @property
    def _cost_only(self) -> bool:
        """Simulator.costOnly: the device computes and holds nothing."""
        return self._options.Simulator.cost_only

    def _refuse_written_inputs_sharing_memory(self, tensors: List[torch.Tensor]) -> None:
        """In eager PyTorch a write into one input shows through every input that
        shares its memory (m(x, x), m(x, x[:, :2])); popsim gives each input its
        own device buffer, so it refuses such calls instead of returning other
        numbers."""
        names = self._compiled_signature.tensor_names
        for index in self._input_updates:
            for other, tensor in enumerate(tensors):
                if other != index and _overlap(tensors[index], tensor):
                    raise InputError(
                        f"Input '{names[index]}' shares memory with input '{names[other]}', "
                        f"and the model writes '{names[index]}' in place: eager PyTorch would "
                        f"see the write through both, while popsim gives each input its own "
                        f"copy. Pass separate tensors (e.g. {names[other]}.clone()).")

    def _write_back_inputs(self, tensors: List[torch.Tensor], outputs: List[torch.Tensor]
                           ) -> List[torch.Tensor]:
        """Copies what the model wrote in place into the caller's input tensors,
        as eager PyTorch would have; returns the model's own outputs."""
        count = len(self._input_updates)
        with torch.no_grad():
            for index, value in zip(self._input_updates, outputs[-count:]):
                tensors[index].copy_(value.reshape(tensors[index].shape))
        return outputs[:-count]

    @_one_thread_at_a_time
    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compiles the model for these inputs without running it.

        The inputs are traced as a call with them would be (their shapes and dtypes matter,
        not their values). A model that has compiled already is left as it is.

        Args:
            *args: The positional inputs of a call of the model.
            **kwargs: The keyword inputs of a call of the model.
        """
        if self._executable is None:
            self._compile(args, kwargs)

    def isCompiled(self) -> bool:
        """Tells whether the model has compiled (and has not been destroyed since).

        Returns:
            True once the model has a compiled program, False before its first call or
            :meth:`popsim.Executor.compile` and after :meth:`popsim.Executor.destroy`.
        """
        return self._executable is not None

    @_one_thread_at_a_time
    def destroy(self) -> None:
        """Copies weights (and optimizer state) home and frees the compiled program;
        the next call compiles again."""
        if self._executable is not None and self._training:
            if self._attached and not self._cost_only:
                self.copyWeightsToHost()
                self._optimizer_binding.copy_state_to_host(self._executable)
            _host_sync.uninstall(self._user_model)
            _optimizer_state.uninstall(self._training_optimizer)  # training
        if self._record is not None:
            _training_registry.release(self._record)
            self._record = None
        self._reset()

    def __del__(self) -> None:
        # A training model dropped without destroy() still leaves its trained
        # weights and optimizer state in the host model, after any trace in
        # progress (the garbage collector may drop it in the middle of one).
        # (Errors are ignored: at interpreter exit, what this needs may already
        # be gone.)
        try:
            if self._training:
                _tracing.unless_tracing(self.destroy)
        except Exception:
            pass

    @_one_thread_at_a_time
    def copyWeightsToDevice(self) -> None:
        """Copies the host model's current parameters and buffers to the device.

        Edits to the host model after compilation are not seen by the device
        until this is called.

        Raises:
            InputError: when the model has not compiled.
        """
        self._require_compiled("copyWeightsToDevice")
        self._upload_weights()
        self._host_dirty = False

    @_one_thread_at_a_time
    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True
                        ) -> "_IncompatibleKeys":
        """Loads a state dict into the wrapped model, then copies the weights to the device.

        Calls the user model's ``load_state_dict``; when the model has compiled and is attached,
        the new weights are copied to the device (as PopTorch does), so the next call runs with
        them.

        Args:
            state_dict: The parameters and buffers to load, by name.
            strict: Whether the keys must match the model's exactly, as in
                ``torch.nn.Module.load_state_dict``.

        Returns:
            What ``torch.nn.Module.load_state_dict`` returns: the missing and unexpected keys.
        """
        result = self._user_model.load_state_dict(state_dict, strict)
        if self._executable is not None and self._attached:
            self._upload_weights()
            self._host_dirty = False
        return result

    @_one_thread_at_a_time
    def copyNamedBuffersToDevice(self) -> None:
        """Copies the host values of the buffers named by ``Options.updatableNamedBuffers``.

        Only those buffers go to the device; parameters and other buffers stay as they are
        there.

        Raises:
            InputError: when the model has not compiled.
            OptionError: when the options name no updatable buffers, when they name a buffer
                the model does not have, or one the compiled program does not read.
        """
        self._require_compiled("copyNamedBuffersToDevice")
        names = self._options.updatable_named_buffers
        if not names:
            raise OptionError(
                "copyNamedBuffersToDevice() copies the buffers named by "
                "Options.updatableNamedBuffers([...]), and this model's options name none.")
        buffers = dict(self._model.named_buffers())
        on_device = set(self._program.weight_names())
        unknown = [name for name in names if name not in buffers]
        if unknown:
            raise OptionError(
                f"updatableNamedBuffers names {unknown}, which the model does not have; its "
                f"buffers are {sorted(buffers)}.")
        unused = [name for name in names if name not in on_device]
        if unused:
            raise OptionError(
                f"updatableNamedBuffers names {unused}, which the compiled program does not "
                "read (popsim keeps only the buffers the model uses on the device).")
        self._program.write_variables({name: buffers[name] for name in names})

    @_one_thread_at_a_time
    def copyWeightsToHost(self) -> None:
        """Copies the device's weights (parameters and buffers) into the host model.

        With ``Simulator.costOnly`` nothing was computed, and the host model is left as it is.

        Raises:
            InputError: when the model has not compiled.
        """
        self._require_compiled("copyWeightsToHost")
        if self._cost_only:
            return  # nothing was computed: the host's weights are the model's
        names = self._program.weight_names()
        device = self._program.read_variables(names)
        host = _weights.host_weights(self._model, names)
        with torch.no_grad():
            for name in names:
                host[name].copy_(device[name])
        self._host_dirty = False

    @_one_thread_at_a_time
    def _sync_host_if_needed(self) -> None:
        if self._host_dirty and self._attached and not self._syncing:
            self._syncing = True
            try:
                self.copyWeightsToHost()
            finally:
                self._syncing = False

    def _sync_trainers_to_host(self) -> Dict[int, int]:
        """Copies weights home from training models of this model's modules;
        returns their versions."""
        for record in _training_registry.records(self._user_model):
            if record.trainer is not None:
                record.trainer._sync_host_if_needed()
        return _training_registry.versions(self._user_model)

    def _catch_up_with_training(self) -> None:
        """Uploads weights that training models of this model's modules trained since."""
        generation = _training_registry.generation
        if generation == self._seen_generation:  # no training model ran or came or went
            return
        if _training_registry.versions(self._user_model) != self._seen_training:
            self._seen_training = self._sync_trainers_to_host()
            self._upload_weights()
        self._seen_generation = generation

    @_one_thread_at_a_time
    def _sync_optimizer_state_to_host(self) -> None:
        """Copies the device's optimizer state into the optimizer (its
        state_dict() calls this first)."""
        if self._optimizer_device_newer and self._attached and not self._optimizer_host_newer:
            self._optimizer_binding.copy_state_to_host(self._program)
        self._optimizer_device_newer = False

    def _optimizer_state_loaded(self, ipu_state: Optional[Mapping[str, torch.Tensor]] = None
                                ) -> None:
        """optimizer.load_state_dict() ran: its state goes to the device next
        call, and then the state dict's "ipu_state", if it has one."""
        if ipu_state is not None:
            if self._executable is None:
                raise OptionError("optimizer.load_state_dict: an 'ipu_state' is the state of a "
                                  "compiled model's device; load it after the model compiles "
                                  "(or leave it out: 'state' holds the same).")
            known = self._device_optimizer_state()
            assert known is not None  # compiled
            for name, value in ipu_state.items():
                if name not in known[0] or tuple(value.shape) != tuple(known[0][name].shape):
                    raise OptionError(
                        f"optimizer.load_state_dict: ipu_state['{name}'] is not a state of this "
                        f"program of that shape; its optimizer state is "
                        f"{sorted(known[0])[:6]}{'...' if len(known[0]) > 6 else ''}.")
            self._pending_ipu_state = dict(ipu_state)
        self._optimizer_host_newer = True
        self._optimizer_device_newer = False

    def _device_optimizer_state(
            self) -> Optional[Tuple[Dict[str, torch.Tensor], Dict[str, torch.Tensor]]]:
        """PopTorch's ipu_state and ipu_param: the device's optimizer state by
        name, and each group's hyper-parameters (group<i>/<name>) and the loss
        scaling; None before the model compiles."""
        if self._executable is None or not self._training:
            return None
        binding = self._optimizer_binding
        names = sorted(binding.optimizer_state(self._program))
        state = self._program.read_variables(names) if self._attached else {}
        params = {f"group{index}/{name}": torch.tensor(value, dtype=torch.float64)
                  for index, group in enumerate(binding.optimizer.param_groups)
                  for name, value in _training.hyperparameters(
                      binding.kind, group, _training.grad_scale(self._options)).items()}
        params["loss_scaling"] = torch.tensor(binding.loss_scaling(), dtype=torch.float64)
        return state, params

    def _write_optimizer_state(self) -> None:
        # A compiled training model's: it has an optimizer and an executable.
        binding = _training.OptimizerBinding(self._training_optimizer,
                                             self._names_by_tensor())
        self._optimizer_binding.check_compatible(binding)
        self._binding = binding
        self._program.write_variables(binding.optimizer_state(self._program))
        if self._pending_ipu_state:  # load_state_dict's "ipu_state", after the state it mirrors
            self._program.write_variables(
                {name: value.detach().float() if value.is_floating_point() else value
                 for name, value in self._pending_ipu_state.items()})
            self._pending_ipu_state = None
        self._optimizer_binding.write_hyperparameters(self._program,
                                                      _training.grad_scale(self._options))
        self._optimizer_host_newer = False

    def _count_optimizer_steps(self) -> None:
        """Counts the device's optimizer steps as PyTorch's optimizer.step() does, for
        learning rate schedulers (which warn when the optimizer never stepped)."""
        if hasattr(self._optimizer, "_step_count"):
            # (Not None: None has no _step_count.)
            self._optimizer._step_count += (  # type: ignore[union-attr]
                self._options.device_iterations)

    @_one_thread_at_a_time
    def setOptimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Replaces the optimizer's hyper-parameters (``lr``, ...) without recompiling.

        A different optimizer object takes over: the old one gets the device's state first, and
        the new one's state, if it has any, goes to the device. Before the model compiles, the
        optimizer is only checked to be one popsim trains with, and is used when it compiles.

        Args:
            optimizer: The optimizer to train with from now on: the same kind as the current
                one, with the same parameter groups and the same settings that shape the
                program (momentum on or off, nesterov, amsgrad, ...); only numeric
                hyper-parameters may differ.

        Raises:
            InputError: when the model is an inference model.
            OptionError: when ``optimizer`` would need another program (another kind of
                optimizer, other parameter groups or flags, another ``max_grad_norm``, or a
                change of a hyper-parameter the program holds as a constant), or before the
                model compiles, when it is not one popsim trains with.
        """
        if not self._training:
            raise InputError("setOptimizer() is for training models.")
        if self._executable is not None:
            binding = _training.OptimizerBinding(optimizer, self._names_by_tensor())
            self._optimizer_binding.check_compatible(binding)
            _training.check_group_attributes(optimizer, self._options, self._reported_attributes)
            if optimizer is not self._optimizer:
                self._sync_optimizer_state_to_host()
                # Not None: a training model's.
                _optimizer_state.uninstall(self._training_optimizer)
                _optimizer_state.install(optimizer, self)
                self._optimizer_host_newer = len(optimizer.state) > 0
            self._binding = binding
            binding.write_hyperparameters(self._executable, _training.grad_scale(self._options))
        else:
            _training.optimizer_kind(optimizer)
        self._optimizer = optimizer

    @_one_thread_at_a_time
    def detachFromDevice(self) -> None:
        """Copies weights and optimizer state to the host and releases the device.

        Calling the model (or :meth:`popsim.Executor.attachToDevice`) attaches it again with
        them.

        Raises:
            InputError: when the model has not compiled or is not attached.
        """
        self._require_compiled("detachFromDevice")
        if not self._attached:
            raise InputError("The model is not attached to the device.")
        if self._training and not self._cost_only:
            self.copyWeightsToHost()
            self._optimizer_binding.copy_state_to_host(self._program)
            names = self._program.state_names()
            self._detached_state = self._program.read_variables(names)
        self._attached = False

    @_one_thread_at_a_time
    def attachToDevice(self) -> None:
        """Attaches a detached model, copying its weights and optimizer state back.

        The weights copied are the host model's current ones.

        Raises:
            InputError: when the model has not compiled or is attached already.
            OptionError: when the model was compiled with
                ``connectionType(ConnectionType.Never)`` (as
                :meth:`popsim.Options.useOfflineIpuTarget` sets), which cannot attach.
        """
        self._require_compiled("attachToDevice")
        if self._options.connection_type == ConnectionType.Never:
            raise OptionError(
                "This model was compiled with connectionType(ConnectionType.Never) (which "
                "useOfflineIpuTarget sets): it compiles for an offline target and cannot run "
                "or attach. Its memoryReport() is available; to run it, wrap the model again "
                "with options that leave connectionType at Always or OnDemand.")
        if self._attached:
            raise InputError("The model is already attached to the device.")
        self._upload_weights()
        if self._training and self._detached_state is not None:
            self._program.write_variables(self._detached_state)
            self._detached_state = None
        self._attached = True
        self._host_dirty = False

    def isAttachedToDevice(self) -> bool:
        """Tells whether the model holds the device.

        Returns:
            True while the compiled model is attached; False before it compiles, after
            :meth:`popsim.Executor.detachFromDevice`, with ``ConnectionType.OnDemand`` until
            its first call, and always with ``ConnectionType.Never``.
        """
        return self._attached

    def memoryReport(self) -> Dict[str, Any]:
        """Gives the memory of each simulated IPU, by category, from the compiled plan.

        Returns:
            A dict with the ``"chip"`` simulated and ``"ipus"``, one dict per IPU with its
            ``"capacity"``, ``"total"`` bytes, the bytes of each category under
            ``"categories"``, ``"streaming_memory"``, ``"largest_tensors"`` and more.

        Raises:
            InputError: when the model has not compiled.
        """
        self._require_compiled("memoryReport")
        return self._program.first.memory_report().to_dict()

    def cycleCount(self) -> int:
        """Gives the simulated IPU cycles of the last call (compute and host transfers).

        Returns:
            The number of cycles the last call took on the simulated clock.

        Raises:
            InputError: when the model has not compiled.
        """
        self._require_compiled("cycleCount")
        return self._program.first.last_run_cycles

    def executionTrace(self) -> ExecutionTrace:
        """Gives the last call as it ran on the simulated clock.

        Returns:
            An execution trace whose ``events`` list every task each IPU ran and whose ``str()``
            draws the pipeline, one row per IPU.

        Raises:
            InputError: when the model has not compiled.
        """
        self._require_compiled("executionTrace")
        return ExecutionTrace.of(self._program.first)

    def simulatedTime(self) -> float:
        """Gives the simulated duration of the last call on the IPUs.

        Returns:
            The last call's seconds on the simulated IPUs: its cycles at the chip's clock.

        Raises:
            InputError: when the model has not compiled.
        """
        self._require_compiled("simulatedTime")
        return self._program.first.last_run_cycles / self._program.first.clock_hz

    def getPerfCounters(self) -> Dict[str, List[List[float]]]:
        """Gives PopTorch's performance counters of the last call, on the simulated clock.

        Times are in seconds from the start of the call. popsim streams a micro-batch's inputs
        together, so every input has the same times; replicas run alike, so these are every
        replica's.

        Returns:
            A dict whose keys are the events ``"input"`` (the IPU asks the host for an input),
            ``"input_complete"`` (the input has arrived), ``"output"`` (an output starts to
            stream to the host) and ``"output_complete"`` (it has arrived). Each value is a list
            per input or output (by index) of the event's times, one per transfer of the call
            (per micro-batch for inputs; per returned output for outputs). Before the model's
            first call, each value is ``[[]]``.
        """
        counters = self._perf_counters()
        if counters is None:
            return {"input": [[]], "input_complete": [[]], "output": [[]], "output_complete": [[]]}
        return {"input": counters.input, "input_complete": counters.input_complete,
                "output": counters.output, "output_complete": counters.output_complete}

    def _perf_counters(self) -> Optional[_C.PerfCounters]:
        """The core's counters of the last call (csrc/profile/call_trace.cpp); None before
        the model compiles."""
        if self._executable is None or self._signature is None:
            return None
        trace = _C.execution_trace(self._program.first)
        return trace.perf_counters(len(self._compiled_signature.tensor_names))

    def getHostIpuLatency(self) -> Tuple[float, float, float]:
        """Gives the last call's host-to-IPU latency, as PopTorch's function of that name.

        Each transfer's latency runs from the first of its inputs requested to the last of them
        arrived, on the simulated clock.

        Returns:
            ``(min, max, mean)`` of those latencies in seconds over the last call's transfers;
            ``(0.0, 0.0, 0.0)`` before the model's first call.
        """
        counters = self._perf_counters()
        return counters.host_ipu_latency() if counters is not None else (0.0, 0.0, 0.0)

    def getComputeLatency(self) -> Tuple[float, float, float]:
        """Gives the last call's compute latency on the simulated clock.

        Each transfer's latency runs from the last of its inputs arrived to the last of its
        outputs ready to stream to the host, on the simulated clock.

        Returns:
            ``(min, max, mean)`` of those latencies in seconds over the last call's transfers;
            ``(0.0, 0.0, 0.0)`` before the model's first call.
        """
        counters = self._perf_counters()
        return counters.compute_latency() if counters is not None else (0.0, 0.0, 0.0)

    def getIpuHostLatency(self) -> Tuple[float, float, float]:
        """Gives the last call's IPU-to-host latency on the simulated clock.

        Each transfer's latency runs from the first of its outputs ready to stream to the last
        of them arrived on the host, on the simulated clock.

        Returns:
            ``(min, max, mean)`` of those latencies in seconds over the last call's transfers;
            ``(0.0, 0.0, 0.0)`` before the model's first call.
        """
        counters = self._perf_counters()
        return counters.ipu_host_latency() if counters is not None else (0.0, 0.0, 0.0)

    def getLatency(self) -> Tuple[float, float, float]:
        """Gives the last call's round-trip latency on the simulated clock.

        Each transfer's latency runs from the first of its inputs requested to the last of its
        outputs arrived on the host, on the simulated clock.

        Returns:
            ``(min, max, mean)`` of those latencies in seconds over the last call's transfers;
            ``(0.0, 0.0, 0.0)`` before the model's first call.
        """
        counters = self._perf_counters()
        return counters.round_trip_latency() if counters is not None else (0.0, 0.0, 0.0)

    def sizingReport(self) -> "SizingReport":
        """Sizes the job as the last call ran it on the simulated IPUs.

        :func:`popsim.sizeJob` makes the same report without computing anything
        (``Simulator.costOnly``).

        Returns:
            A :class:`popsim.SizingReport`: each IPU's memory by category against its capacity,
            the step's simulated cycles and time, throughput in items/s over all replicas and
            processes (items: the length of the call's batched inputs), each IPU's busy share
            and where its time goes, and advice. ``str()`` prints it.

        Raises:
            InputError: when the model has not compiled or has not been called since it
                compiled.
        """
        self._require_compiled("sizingReport")
        if self._last_call_items is None:
            raise InputError("sizingReport() needs a call: the simulated clock times the "
                             "last call. Call the model once (with Simulator.costOnly() it "
                             "computes nothing), or use popsim.sizeJob.")
        return SizingReport.from_dict(_C.sizing_report(
            self._program.first, self._stages, self._sizing_job()))

    def _sizing_job(self) -> Dict[str, Any]:
        """How the job runs a call, for the sizing report: what the program alone
        does not say."""
        replication = _replication.of(self._options, self._training)
        return {"model": type(self._user_model).__name__, "replicas": replication.job,
                "processes": replication.processes,
                "steps_per_call": self._options.device_iterations,
                "micro_batches_per_step": (self._options.Training.gradient_accumulation
                                           if self._training else 1),
                "items_per_call": (self._last_call_items or 0) * replication.processes}

    def compilationTime(self) -> float:
        """Gives how long the last compilation took.

        Returns:
            The seconds the last compilation took, tracing included.

        Raises:
            InputError: when the model has not compiled.
        """
        self._require_compiled("compilationTime")
        return self._compilation_seconds

    def _debug_ir(self, optimized: bool = False, locations: bool = True) -> str:
        """The popsim IR of the model as text: as imported from the trace, or
        the program that runs (optimised; for training with its backward pass
        and optimizer step)."""
        self._require_compiled("_debug_ir")
        if optimized:
            return self._program.first.graph_text(locations)
        return self._compiled_graph.to_text(locations)

    def _require_compiled(self, what: str) -> None:
        if self._executable is None:
            raise InputError(f"{what}() needs a compiled model: call the model or compile() first.")

    def _names_by_tensor(self) -> Dict[int, str]:
        names: Dict[int, str] = {}
        for name, tensor in _weights.named_tensors(self._model).items():
            names.setdefault(id(tensor), name)
        return names

    def _upload_weights(self) -> None:
        names = self._program.weight_names()  # (a cost-only device checks and drops them)
        self._program.write_variables(self._device_weights(names))

    def _device_weights(self, names: Sequence[str]) -> Dict[str, torch.Tensor]:
        """The host tensors of the named weights, in the dtypes the device holds them."""
        host = _weights.host_weights(self._model, names)
        for name in self._float32_buffers:
            if name in host:
                host[name] = host[name].float()
        return host

    def _compile(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
        profile_root = self._profile_directory()  # a bad POPSIM_PROFILE_DIR fails before compiling
        _hooks.run_pre_compile()
        with CompileProgress(self._options.show_compilation_progress_bar) as progress:
            stages = self._compile_phases(args, kwargs, progress)
            self._stages = stages
            self._start_profiling(profile_root, stages)
        _hooks.run_post_compile()
        if self._options.log_dir:
            self._write_log()

    def _compile_phases(self, args: Tuple[Any, ...], kwargs: Dict[str, Any],
                        progress: CompileProgress) -> List[Tuple[str, int, int]]:
        """Compiles; returns the (block, stage, ipu) assignment of the program."""
        start = time.perf_counter()
        progress.phase("trace")
        if not self._training:
            self._seen_training = self._sync_trainers_to_host()
        groupings = _replica_grouping.plan(self.per_replica_params,
                                           dict(self._user_model.named_parameters()),
                                           self._options, self._training)
        if self._training and (self._owned_flags is None
                               or len(self._owned_flags) != len(list(self._user_model.modules()))):
            self._owned_flags = _module_flags(self._user_model)  # as the model is now
        flags = (self._owned_flags if self._training and self._owned_flags is not None
                 else _module_flags(self._user_model))
        # The shallow copy has its own top-level flag: the model's.
        self._model.training = flags[0]
        with _replica_grouping.traced_with_first_group(self._user_model, groupings), \
                _flags_set(self._user_model, flags):
            imported = _compilation.import_call(self._model, self._options, self._training,
                                                args, kwargs, lambda: progress.phase("import"))
        graph, signature = imported.graph, imported.signature
        self._float32_buffers = imported.float32_buffers
        binding = None
        if self._training:
            if self._record is None:  # compiling again after destroy()
                self._record = _training_registry.register(self._user_model, self)
            # self._optimizer is not None: a training model's.
            binding = _training.OptimizerBinding(self._training_optimizer,
                                                 self._names_by_tensor())
            _training.check_group_attributes(self._training_optimizer,
                                             self._options, self._reported_attributes)
            _replica_grouping.check_no_clipping(groupings, binding.max_grad_norm)
        self._plan_anchors(binding)
        config = _compilation.training_config(
            self._options, binding, groupings, self._user_model.named_parameters(),
            [name for _, name in self._anchor_plan.gradients])
        options = _compilation.compile_options(self._options, graph, self._training, config)
        sharded_weights = _compilation.sharded_weights(self._options, binding,
                                                       self._user_model.named_parameters())
        progress.phase("compile")
        executable = _replication.device_program(
            self._build_executable(graph, options), self._options, self._training, options,
            [(g.size, g.stride, g.job) for g in groupings.values()])
        progress.phase("weights")
        self._graph = graph
        self._executable = executable
        self._resolve_variable_anchors()
        self._compile_options = options
        self._call_spec = _call_spec(args, kwargs)
        self._compiled_flags = flags
        self._signature = signature
        self._output_structure = imported.output_structure
        # Outputs the device holds widened (views of narrow integer inputs) go home narrow.
        self._narrow_outputs = [(i, dtype) for i, dtype in enumerate(imported.output_dtypes)
                                if dtype in _WIDENED_DTYPES]
        self._input_updates = graph.input_updates()
        self._binding = binding
        if (self._training and _replication.of(self._options).job > 1
                and self._options.broadcast_buffers and not self._cost_only):
            buffers = {name for prefix, module in self._model.named_modules()
                       for name in (f"{prefix}.{b}" if prefix else b
                                    for b, t in module._buffers.items() if t is not None)}
            self._broadcast_buffers = [n for n in executable.weight_names() if n in buffers]
        if self._training and self._options.Distributed.numProcesses > 1 and not self._cost_only:
            _process_group.broadcast_from_first_process(
                _weights.host_weights(self._model, executable.weight_names()))
        if not self._cost_only:
            executable.shard_variables(
                {name: list(shape) for name, shape in
                 {**(binding.sharded_states(self._options) if binding else {}),
                  **sharded_weights}.items()})
        if groupings and not self._cost_only:  # more than one group: several replicas
            executable.group_variables(
                {variable: list(grouping.job) for name, grouping in groupings.items()
                 for variable in [name] + (binding.parameter_states(name) if binding else [])})
        self._upload_weights()
        if binding is not None:
            if not self._cost_only:  # (a cost-only device holds no state)
                executable.write_variables(binding.initial_state(executable))
            binding.write_hyperparameters(executable, _training.grad_scale(self._options))
            _host_sync.install(self._user_model, self)
            _optimizer_state.install(self._training_optimizer, self)  # training
        if _replication.of(self._options, self._training).job > 1:
            executable.draw_apart(self._options.Distributed.processId)
        # OnDemand attaches (and Never would) only when the model first runs.
        self._attached = self._options.connection_type == ConnectionType.Always
        self._compilation_seconds = time.perf_counter() - start
        return [(s.block, s.stage, s.ipu) for s in options.compiler.stages]

    def _plan_anchors(self, binding: Optional[_training.OptimizerBinding]) -> None:
        """Checks Options.anchorTensor's anchors against the model; the
        gradients of trained parameters become extra outputs of the training
        program."""
        tensors = _weights.named_tensors(self._model)
        trained = binding.trained_names() if binding is not None else []
        steps = self._options.device_iterations
        self._anchor_plan = _anchors.plan(
            self._options.anchored_tensors, self._training,
            (self._output_mode(), self._options.output_return_period), steps,
            trained, list(tensors))
        self._anchor_shapes = {name: tensors[name].shape
                               for _, name in self._anchor_plan.gradients}

    def _resolve_variable_anchors(self) -> None:
        """Names each variable anchor as the program does (a tied weight has
        one name there); refuses tensors the program does not hold."""
        tensors, canonical = _weights.named_tensors(self._model), self._names_by_tensor()
        on_device = set(self._program.weight_names())
        resolved = []
        self._device_anchors = on_device | (
            {_anchors.LOSS_SCALE_STATE} & set(self._program.state_names()))
        for short, name in self._anchor_plan.variables:
            if name == _anchors.LOSS_SCALE_STATE:
                resolved.append((short, name))
                continue
            program_name = canonical[id(tensors[name])]
            if program_name not in on_device:
                raise OptionError(f"anchorTensor('{short}', ...): the program does not use "
                                  f"'{name}', so the device does not hold it; read it from the "
                                  "model instead.")
            resolved.append((short, program_name))
        self._anchor_plan = self._anchor_plan._replace(variables=resolved)

    def getAnchoredTensor(self, short_name: str) -> torch.Tensor:
        """Gives the value of an anchored tensor from the last call.

        Args:
            short_name: The name the tensor was anchored under with
                ``Options.anchorTensor(short_name, long_name)``.

        Returns:
            The tensor's value from the last call, in the output mode it was anchored with.

        Raises:
            OptionError: when the options anchor no tensor named ``short_name``, or the model
                has not run since it compiled.
        """
        if short_name not in self._anchor_memory:
            anchored = sorted(self._options.anchored_tensors)
            reason = (f"the options anchor {anchored}" if short_name not in anchored
                      else "the model has not run since it compiled")
            raise OptionError(f"No tensor with name {short_name} found: {reason}. Anchor it with "
                              "Options.anchorTensor(short_name, long_name) before compiling, "
                              "then call the model.")
        return self._anchor_memory[short_name]

    def getTensorNames(self) -> List[str]:
        """Lists the long names :meth:`popsim.Options.anchorTensor` accepts for this model.

        Returns:
            Every parameter and buffer the program uses (``"<name>"``), and for a training
            model also ``"UpdatedVar___<name>"`` for each of them, each trained parameter's
            ``"Gradient___<name>"`` and ``"finalLossScale"`` (the loss scaling factor after the
            call).

        Raises:
            InputError: when the model has not compiled.
        """
        if self._executable is None:
            raise InputError("Model must be compiled before calling getTensorNames: call the "
                             "model or compile() first.")
        names = list(self._program.weight_names())
        if not self._training:
            return names
        used = set(names)
        return (names + [_anchors.UPDATED + name for name in names]
                + [_anchors.GRADIENT + name
                   for name in self._optimizer_binding.trained_names() if name in used]
                + [_anchors.LOSS_SCALE])

    def _build_executable(self, graph: _C.Graph, options: _C.CompileOptions) -> _C.Executable:
        """The executable of `graph`: loadExecutable's program, else the cached
        one, else compiled (and cached when caching is on)."""
        if self._program_file is not None:
            path, stored = self._program_file
            reason = _executable_file.mismatch(stored.key,
                                               _executable_file.program_key(graph, options))
            if reason is not None:
                raise ExecutableFileError(
                    f"loadExecutable('{path}'): {reason}. Wrap the model (and options) as they "
                    "were when compileAndExport wrote the file, or compile and export it again.")
            return _C.load_program(stored.program, options)
        directory = _executable_file.cache_directory(self._options)
        if directory is None:
            return _C.compile(graph, options)
        key = _executable_file.program_key(graph, options)
        path = _executable_file.cache_path(directory, key)
        if os.path.exists(path):
            try:
                stored = _executable_file.read(path, with_metadata=False)
                reason = _executable_file.mismatch(stored.key, key)
                if reason is not None:
                    raise ExecutableFileError(f"'{path}': {reason}.")
                executable = _C.load_program(stored.program, options)
                LOGGER.info("Loaded the compiled program from the executable cache: %s", path)
                return executable
            except (ExecutableFileError, OSError) as error:
                warnings.warn(f"popsim's executable cache does not use a file: {error} "
                              "Compiling the model again and replacing the file.")
        executable = _C.compile(graph, options)
        try:
            _executable_file.write(path, key, executable.serialize_program())
        except OSError as error:
            warnings.warn(f"popsim's executable cache cannot write '{path}' ({error}): the model "
                          "runs, but the next process compiles it again.")
        return executable

    @_one_thread_at_a_time
    def save(self, filename: str, export_model: bool = True) -> None:
        """Writes the compiled program to a file, as PopTorch's ``save``.

        The file also records the shapes and dtypes of the call the model compiled for. The
        file is written atomically: a reader never sees half of it.

        Args:
            filename: The path of the file to write; missing directories are created.
            export_model: Whether to store the model too (with its current weights), with its
                options and optimizer, so that :func:`popsim.load` restores all of them. The
                model must be picklable then. Without it, call
                :meth:`popsim.Executor.loadExecutable` on the model wrapped again to load the
                program.

        Raises:
            InputError: when the model has not compiled.
            ExecutableFileError: when ``export_model`` is True and the model, its options or
                optimizer, or the call's arguments cannot be pickled.
        """
        self._require_compiled("save")
        metadata: Dict[str, Any] = {"call": self._call_spec, "training": self._training}
        if export_model:
            self._sync_host_if_needed()
            if self._training:
                self._sync_optimizer_state_to_host()
            metadata.update(model=self._user_model, options=self._options,
                            optimizer=self._optimizer if self._training else None)
        key = _executable_file.program_key(self._compiled_graph, self._compiled_options)
        _executable_file.write(os.fspath(filename), key, self._program.first.serialize_program(),
                               metadata)

    def compileAndExport(self, filename: str, *args: Any, export_model: bool = True,
                         **kwargs: Any) -> None:
        """Compiles for these inputs (unless compiled already) and saves the program to a file.

        :meth:`popsim.Executor.compile` then :meth:`popsim.Executor.save`.

        Args:
            filename: The path of the file to write.
            *args: The positional inputs of a call of the model.
            export_model: Whether to store the model, its options and optimizer too, for
                :func:`popsim.load` (see :meth:`popsim.Executor.save`).
            **kwargs: The keyword inputs of a call of the model.

        Raises:
            ExecutableFileError: when ``export_model`` is True and the model, its options or
                optimizer, or the call's arguments cannot be pickled.
        """
        self.compile(*args, **kwargs)
        self.save(filename, export_model)

    @_one_thread_at_a_time
    def loadExecutable(self, filename: str) -> None:
        """Loads the program :meth:`popsim.Executor.compileAndExport` (or ``save``) wrote.

        Instead of compiling, traces the model on inputs of the exported call's shapes and
        checks that the model and the options give the program the file holds. A model that has
        compiled already is destroyed first (see :meth:`popsim.Executor.destroy`).

        Args:
            filename: The path of the file to read.

        Raises:
            ExecutableFileError: when the file is not a complete popsim program file, holds a
                cached program without its call, holds the program of the other kind of model
                (training or inference), or when the model or options do not give the
                program it holds (the message names the difference).
        """
        path = os.fspath(filename)
        stored = _executable_file.read(path)
        if stored.metadata is None or "call" not in stored.metadata:
            raise ExecutableFileError(f"'{path}' holds a cached program without the call it was "
                                      "compiled for; loadExecutable reads compileAndExport's "
                                      "files.")
        if stored.metadata["training"] != self._training:
            kinds = {True: "trainingModel", False: "inferenceModel"}
            raise ExecutableFileError(
                f"'{path}' holds the program of a {kinds[stored.metadata['training']]}; this "
                f"model was wrapped with {kinds[self._training]}.")
        if self._executable is not None:
            self.destroy()
        args, kwargs = _call_from_spec(stored.metadata["call"])
        self._program_file = (path, stored)
        try:
            self._compile(args, kwargs)
        finally:
            self._program_file = None

    def _profile_directory(self) -> Optional[str]:
        """enableProfiling's directory, else POPSIM_PROFILE_DIR's, else
        POPLAR_ENGINE_OPTIONS' autoReport directory (as PopTorch tutorials ask
        for reports), else None."""
        if self._options.profile_dir is not None:
            return self._options.profile_dir
        value = os.environ.get(PROFILE_DIR_VARIABLE, "")
        if value.strip():
            return profile_directory(PROFILE_DIR_VARIABLE, value)
        engine = _engine_options.profile_directory()
        return profile_directory(_engine_options.VARIABLE, engine) if engine else None

    def _start_profiling(self, root: Optional[str], stages: List[Tuple[str, int, int]]) -> None:
        """Writes the memory profile of this compilation, whose blocks run as `stages`,
        into `root` (None: no profiling) and prepares the per-call trace."""
        if root is None:
            self._profile_writer = None
            return
        kind = "training" if self._training else "inference"
        if self._profile_writer is None or self._profile_writer.root != root:
            try:
                self._profile_writer = _C.ProfileWriter(root, kind, self._options.model_name)
            except OSError as error:
                source = ("enableProfiling" if self._options.profile_dir is not None
                          else PROFILE_DIR_VARIABLE)
                raise OptionError(f"{source}: cannot create the profile directory under "
                                  f"'{root}': {error}.") from error
        replicas = _replication.of(self._options, self._training).job
        self._profile_writer.after_compile(self._program.first,
                                           type(self._user_model).__name__,
                                           stages, self._compilation_seconds, replicas)

    def profileDirectory(self) -> Optional[str]:
        """Gives the directory this model writes its profile into.

        Returns:
            The profile directory, or None when the model is not profiled or has not compiled
            yet.
        """
        return self._profile_writer.directory if self._profile_writer is not None else None

    def _write_log(self) -> None:
        """Writes the IR and memory report of this compilation into logDir."""
        log_dir = self._options.log_dir
        assert log_dir is not None, "_write_log() without Options.logDir"
        os.makedirs(log_dir, exist_ok=True)
        stem = os.path.join(log_dir,
                            f"{type(self._user_model).__name__}_{next(_log_counter)}")
        with open(stem + ".ir.txt", "w", encoding="utf-8") as out:
            out.write("# Imported from the trace\n")
            out.write(self._compiled_graph.to_text(True))
            out.write("\n# Program (optimised)\n")
            out.write(self._program.first.graph_text(True))
        with open(stem + ".memory.json", "w", encoding="utf-8") as out:
            json.dump({"memory": self._program.first.memory_report().to_dict(),
                       "program": [step.to_dict() for step in self._program.first.program()]},
                      out, indent=2)

    def __repr__(self) -> str:
        state = "compiled" if self.isCompiled() else "not compiled"
        kind = "training" if self._training else "inference"
        return f"popsim {kind} model ({state}) of {type(self._user_model).__name__}"


class _TensorSpec(NamedTuple):
    """A call's tensor in an exported file: its shape and dtype."""
    shape: tuple
    dtype: torch.dtype


def _call_spec(args: Tuple[Any, ...], kwargs: Dict[str, Any]
               ) -> Tuple[_structure.Structure, List[Any]]:
    """The call as _structure.flatten sees it, with each tensor leaf replaced
    by its _TensorSpec: (structure, leaves)."""
    leaves, _, structure = _structure.flatten((args, kwargs), "")
    return structure, [_TensorSpec(tuple(leaf.shape), leaf.dtype)
                       if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]


def _call_from_spec(spec: Tuple[_structure.Structure, List[Any]]
                    ) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    """(args, kwargs) of _call_spec's call, with zero tensors of the specs."""
    structure, leaves = spec
    return _structure.unflatten([torch.zeros(leaf.shape, dtype=leaf.dtype)
                                 if isinstance(leaf, _TensorSpec) else leaf for leaf in leaves],
                                structure)


def inferenceModel(model: torch.nn.Module, options: Optional[Options] = None) -> Executor:
    """Wraps ``model`` to run inference on simulated IPUs.

    Like PopTorch, popsim makes a shallow copy: parameters are shared with
    ``model``. Inference models are compiled in eval mode (dropout is the
    identity, batch norm uses its running statistics) whatever ``model.training``
    is; the model's own flag is left unchanged. The model compiles at its first call (or
    :meth:`popsim.Executor.compile`).

    Args:
        model: The model to run, or a wrapped model, whose model is wrapped again.
        options: The options to compile and run with; None means ``popsim.Options()``. They
            are frozen: :meth:`popsim.Options.clone` gives a copy to change.

    Returns:
        The wrapped model, called as ``model`` is.

    Raises:
        TypeError: when ``model`` is not a ``torch.nn.Module``.
        OptionError: when ``options`` is not a :class:`popsim.Options` or does not fit
            inference (for example ``Training.gradientAccumulation`` other than 1).
    """
    return Executor(model, options, training=False)


def trainingModel(model: torch.nn.Module, options: Optional[Options] = None,
                  optimizer: Optional[torch.optim.Optimizer] = None) -> Executor:
    """Wraps ``model`` to train on simulated IPUs.

    The model's ``forward()`` returns the loss, or ``(output, loss)``, computed with a
    PyTorch loss function or marked with :func:`popsim.identity_loss`. Each call runs
    ``deviceIterations`` optimizer steps, each over ``gradientAccumulation``
    micro-batches, entirely on the simulated device. Each module runs as its train/eval flag
    says, as in eager PyTorch: a new module trains with dropout and batch statistics, and a
    batch norm set to ``eval()`` stays frozen.

    Args:
        model: The model to train, or a wrapped model, whose model is wrapped again.
        options: The options to compile and run with; None means ``popsim.Options()``. They
            are frozen: :meth:`popsim.Options.clone` gives a copy to change.
        optimizer: The optimizer: SGD, Adam, AdamW or RMSprop of ``popsim.optim`` or
            ``torch.optim``, or :class:`popsim.optim.LAMB`. None means
            :class:`popsim.optim.SGD` with ``lr=0.01``.

    Returns:
        The wrapped model, called as ``model`` is; each call trains it.

    Raises:
        TypeError: when ``model`` is not a ``torch.nn.Module``.
        OptionError: when ``options`` is not a :class:`popsim.Options` or the options do not
            fit together, or when popsim cannot train with ``optimizer``.
    """
    return Executor(model, options, training=True, optimizer=optimizer)
