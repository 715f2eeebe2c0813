"""The wrapper that runs a PyTorch model on simulated IPUs: a façade, with
PopTorch's API, over the stages that do the work in processing order.

``popsim.inferenceModel(model, options)`` and ``popsim.trainingModel(model,
options, optimizer)`` return an :class:`Executor`. The first call (or
``compile()``) compiles the model (compile/compiled_model.py: trace, import,
compile options, the host's device program); its weights then flow between
the host model and the device as training/weight_flow.py says, each call
runs through device/calls.py, and reports/ reads what the simulated IPUs
did.
"""

import copy
import functools
import os
import threading
import time
import weakref
from typing import (Any, Callable, Concatenate, Dict, Mapping, Optional, ParamSpec, Set, Tuple,
                    TypeVar, Union)

import torch
from torch.nn.modules.module import _IncompatibleKeys

from popsim import _C
from popsim.api import hooks as _hooks
from popsim.api.enums import CommGroupType, ConnectionType, VariableRetrievalMode
from popsim.api.errors import (ArgumentError, Error, ExecutableFileError, InputError,
                               OfflineTargetError, OptionError)
from popsim.api.log import LOGGER
from popsim.api.options import Options
from popsim.compile import call_spec as _call_spec
from popsim.compile import executable_file as _executable_file
from popsim.compile.compiled_model import CompiledModel, compile_model, module_flags
from popsim.compile.progress import CompileProgress
from popsim.device import replication as _replication
from popsim.device.calls import Calls
from popsim.frontend import structure as _structure
from popsim.frontend.blocks import module_repr
from popsim.frontend import tracing as _tracing
from popsim.reports import profile_recorder as _profile_recorder
from popsim.reports.executor_reports import ExecutorReports
from popsim.training import optimizer_binding as _binding
from popsim.training import replica_grouping as _replica_grouping
from popsim.training.weight_flow import WeightFlow

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


def _backward_refused(*args: Any, **kwargs: Any) -> None:
    raise Error("backward() cannot be called explicitly on outputs of a PopTorch model. If "
                "you're using a trainingModel, the backwards pass is performed automatically "
                "when invoking the model. If you're using an inferenceModel, you should use a "
                "trainingModel instead. (popsim's outputs are host copies of the device's "
                "values: each call of a training model has run its backward pass and "
                "optimizer step already.)")


def _refuse_backward(outputs: Any) -> None:
    """Makes backward() on an output say why it cannot work, as PopTorch does, instead of
    autograd's "does not require grad"."""
    for output in outputs:
        if isinstance(output, torch.Tensor):
            output.backward = _backward_refused  # type: ignore[assignment]


class Executor(ExecutorReports):
    """A model compiled for simulated IPUs, used like the model itself.

    PopTorch calls this class ``PoplarExecutor``; popsim provides that name too.

    Example:
        >>> executor = popsim.inferenceModel(torch.nn.Linear(256, 256))
        >>> executor.compile(torch.randn(8, 256))  # or at the first call
        >>> report = executor.memoryReport()  # each IPU's memory plan, by category
        >>> [ipu["ipu"] for ipu in report["ipus"]]
        [0]
        >>> _ = executor(torch.randn(8, 256))
        >>> executor.cycleCount() > 0, executor.sizingReport().fits
        (True, True)
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
            ArgumentError: when ``model`` is neither a ``torch.nn.Module`` nor an executor.
            OptionError: when ``options`` is not a :class:`popsim.Options`, when an inference
                model's options accumulate gradients (``Training.gradientAccumulation`` other
                than 1), or when a training model's optimizer is not one popsim trains with
                (SGD, Adam, AdamW, RMSprop or LAMB).
        """
        if isinstance(model, Executor):
            model = model.model
        if not isinstance(model, torch.nn.Module):
            raise ArgumentError(
                f"popsim wraps torch.nn.Module instances, got {type(model).__name__}.")
        if options is None:
            options = Options()
        if not isinstance(options, Options):
            raise OptionError(f"options must be a popsim.Options, got {type(options).__name__}.",
                              option="options")
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
        if training:
            if optimizer is None:
                from popsim.training.optim import SGD

                optimizer = SGD(model.parameters(), lr=0.01)
            _binding.optimizer_kind(optimizer)  # fails early for unsupported optimizers
        # Where the weights and optimizer state count (registers a training model). It names
        # the executor in errors through a weak reference: an executor dropped without
        # destroy() is collected at once, and its __del__ brings the weights home.
        this = weakref.ref(self)

        def destroy() -> None:  # model.destroy() on a trained host model
            executor = this()
            if executor is not None:
                executor.destroy()

        def summary() -> str:
            executor = this()
            return executor._summary() if executor is not None else "a destroyed popsim model"

        self._flow = WeightFlow(model, self._model, self._options, training, optimizer, self._lock,
                                summary, destroy)
        # Replica-grouped parameters (PopTorch's attribute): name -> (CommGroupType,
        # shards, VariableRetrievalMode), set with ipu_model.<param>.replicaGrouping.
        self.per_replica_params: Dict[str, tuple] = {}
        self._profile = _profile_recorder.ProfileRecorder(self._options, training)
        self._warned_float64 = False  # float64 inputs converted: said once per model
        # Optimizer attributes popsim does not use, said once.
        self._reported_attributes: Set[str] = set()
        # The model's own train/eval flags (kept through destroy()): the modules' when it
        # first compiles, or as Executor.train / eval set them.
        self._owned_flags: Optional[Tuple[bool, ...]] = None
        # requires_grad of the optimizer's parameters when the model compiled.
        self._trained_flags: Tuple[bool, ...] = ()
        # (path, ProgramFile) while loadExecutable compiles.
        self._exported: Optional[Tuple[str, _executable_file.ProgramFile]] = None
        self._reset()


    def _reset(self) -> None:
        self._compiled: Optional[CompiledModel] = None
        self._calls: Optional[Calls] = None
        self._compilation_seconds = 0.0
        self._last_call_items: Optional[int] = None  # the last call's batch, this process's

    @property
    def _compiled_model(self) -> CompiledModel:
        assert self._compiled is not None, "the model has compiled"
        return self._compiled

    # The compiled program on its device, and what tests and the planner read of it.
    @property
    def _executable(self) -> Optional[_C.DeviceProgram]:
        return self._compiled.program if self._compiled is not None else None

    @property
    def _compile_options(self) -> _C.CompileOptions:
        return self._compiled_model.compile_options

    @property
    def _optimizer(self) -> Optional[torch.optim.Optimizer]:
        return self._flow.optimizer

    @property
    def _detached_state(self) -> Optional[Dict[str, torch.Tensor]]:
        return self._flow.detached_state

    def _check_options(self) -> None:
        opts = self._options
        if not self._training and opts.Training.gradient_accumulation != 1:
            raise OptionError(
                "Inference models do not accumulate gradients: set "
                f"opts.Training.gradientAccumulation(1) (it is "
                f"{opts.Training.gradient_accumulation}). To run several micro-batches per "
                "call, use opts.deviceIterations(n).", option="Training.gradientAccumulation")

    @property
    def model(self) -> torch.nn.Module:
        """The user's model (its parameters are the ones popsim uses)."""
        return self._user_model


    def __getattr__(self, name: str) -> Any:
        # Only names the executor itself lacks get here: as PopTorch's
        # executor, it stands for the user's model (ipu_model.linear.weight,
        # ipu_model.state_dict(), ipu_model.parameters(), its buffers), whose
        # reads copy trained weights home first (training/host_sync.py).
        model = self.__dict__.get("_user_model")
        if model is None or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        value = getattr(model, name)
        if isinstance(value, torch.nn.Parameter):
            # ipu_model.weight.replicaGrouping(...), as PopTorch's parameters offer it
            # (for this executor: the latest access through an executor decides).
            handle = _replica_grouping.GroupingHandle(self._set_replica_grouping, name)
            setattr(value, "replicaGrouping", handle)
            setattr(value, "perReplica", handle)
        return value

    def _set_replica_grouping(self, name: str,
                              setting: Tuple[CommGroupType, int, VariableRetrievalMode]) -> None:
        if self._compiled is not None:
            raise OptionError(f"replicaGrouping of '{name}': the model has compiled already; "
                              "set groupings before it first runs or compiles (or destroy() "
                              "it first).", option="replicaGrouping")
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
        if self._compiled is not None:
            self._flow.host_used()
        return self._user_model.__reduce_ex__(protocol)

    @property
    def options(self) -> Options:
        """The (frozen) options this model runs with."""
        return self._options

    def train(self, mode: bool = True) -> "Executor":
        """Sets the train/eval flags of the wrapped model's modules, as ``Module.train(mode)``.

        The model takes the flags it is given this way as its own: it compiles again at its next
        call when they changed since it compiled (dropout and batch statistics follow the
        flags, as in eager PyTorch). Flags set on the user's modules directly after the model
        compiled (``model.eval()`` to validate with another model, say) leave it as it
        compiled, as PopTorch's executors own their mode.

        Args:
            mode: True for train mode, False for eval mode.

        Returns:
            This executor, so calls chain.
        """
        self._user_model.train(mode)
        self._owned_flags = module_flags(self._user_model)
        return self

    def eval(self) -> "Executor":
        """Sets the wrapped model's modules to eval mode, as ``train(False)`` does.

        Returns:
            This executor, so calls chain.
        """
        return self.train(False)


    @_one_thread_at_a_time
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._options.connection_type == ConnectionType.Never:
            # Refused before it compiles, as PopTorch asserts: an offline target is for
            # compile() and the memory report, and calling it is a mistake to say at once.
            raise OfflineTargetError(
                "Trying to run a model on an offline device (ConnectionType.Never): use "
                "model.compile(inputs) instead of model(inputs). The options set "
                "connectionType(ConnectionType.Never) (useOfflineIpuTarget sets it), which "
                "compiles for an offline target and never runs; compile() gives the memory "
                "report. To run the model, wrap it again with options that leave "
                "connectionType at Always or OnDemand.", option="connectionType")
        if self._compiled is not None and self._owned_flags != self._compiled.flags:
            LOGGER.info("The model's train/eval flags changed since it compiled "
                        "(Executor.train / eval): compiling again")
            self.destroy()
        elif self._compiled is not None and self._trained_flags != self._requires_grad_flags():
            LOGGER.info("A parameter the optimizer holds was frozen or unfrozen "
                        "(requires_grad) since the model compiled: compiling again")
            self.destroy()
        if self._compiled is None:
            self._compile(args, kwargs)
        if not self._flow.attached:
            self.attachToDevice()
        start = time.perf_counter()
        self._flow.before_call()
        compiled = self._compiled_model
        assert self._calls is not None, "a compiled model has its calls"
        tensors = compiled.signature.tensors(args, kwargs)
        self._last_call_items = next((t.shape[0] for t in tensors if t.dim() > 0), 0)
        loss_scaling = float(getattr(self._flow.optimizer, "loss_scaling", 1.0) or 1.0)
        outputs, converted = self._calls.run(tensors, loss_scaling, not self._warned_float64)
        self._warned_float64 = self._warned_float64 or converted
        self._flow.after_call()
        if compiled.anchors.plan.optimizer_state:
            self._calls.anchor_optimizer_state(self._flow.device_optimizer_state)
        _refuse_backward(outputs)
        result = _structure.unflatten(outputs, compiled.output_structure)
        self._profile.called(compiled.program, time.perf_counter() - start, self._sizing_job())
        return result

    @_one_thread_at_a_time
    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compiles the model for these inputs without running it.

        The inputs are traced as a call with them would be (their shapes and dtypes matter,
        not their values). A model that has compiled already is left as it is.

        Args:
            *args: The positional inputs of a call of the model.
            **kwargs: The keyword inputs of a call of the model.
        """
        if self._compiled is None:
            self._compile(args, kwargs)

    def isCompiled(self) -> bool:
        """Tells whether the model has compiled (and has not been destroyed since).

        Returns:
            True once the model has a compiled program, False before its first call or
            :meth:`popsim.Executor.compile` and after :meth:`popsim.Executor.destroy`.
        """
        return self._compiled is not None

    @_one_thread_at_a_time
    def destroy(self) -> None:
        """Copies weights (and optimizer state) home and frees the compiled program;
        the next call compiles again.

        A training model's host model offers the same call as ``model.destroy()`` while it is
        trained (unless it has a ``destroy`` of its own), as PopTorch's wrapped models do. Once
        destroyed, the model can be wrapped again, by ``trainingModel`` of the model or of this
        executor.
        """
        self._flow.release()
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
            NotCompiledError: when the model has not compiled (an InputError).
        """
        self._require_compiled("copyWeightsToDevice")
        self._flow.write_host_weights()

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
        if self._compiled is not None and self._flow.attached:
            self._flow.write_host_weights()
        return result

    @_one_thread_at_a_time
    def copyNamedBuffersToDevice(self) -> None:
        """Copies the host values of the buffers named by ``Options.updatableNamedBuffers``.

        Only those buffers go to the device; parameters and other buffers stay as they are
        there.

        Raises:
            NotCompiledError: when the model has not compiled (an InputError).
            OptionError: when the options name no updatable buffers, when they name a buffer
                the model does not have, or one the compiled program does not read.
        """
        self._require_compiled("copyNamedBuffersToDevice")
        names = self._options.updatable_named_buffers
        if not names:
            raise OptionError(
                "copyNamedBuffersToDevice() copies the buffers named by "
                "Options.updatableNamedBuffers([...]), and this model's options name none.",
                option="updatableNamedBuffers")
        self._flow.write_named_buffers(names)

    @_one_thread_at_a_time
    def copyWeightsToHost(self) -> None:
        """Copies the device's weights (parameters and buffers) into the host model.

        With ``Simulator.costOnly`` nothing was computed, and the host model is left as it is.

        Raises:
            NotCompiledError: when the model has not compiled (an InputError).
        """
        self._require_compiled("copyWeightsToHost")
        self._flow.copy_weights_home_explicitly()

    @_one_thread_at_a_time
    def copyWeightsToHostIfNeeded(self) -> bool:
        """Copies the device's weights into the host model if they are newer (a training call
        ran since they were last copied), as using the host model does.

        Returns:
            Whether weights were copied (False before the model compiles, and when the host
            model holds them already).
        """
        return self._compiled is not None and self._flow.host_used()

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
        self._flow.set_optimizer(optimizer, self._reported_attributes)

    @_one_thread_at_a_time
    def detachFromDevice(self) -> None:
        """Copies weights and optimizer state to the host and releases the device.

        Calling the model (or :meth:`popsim.Executor.attachToDevice`) attaches it again with
        them.

        Raises:
            InputError: when the model has not compiled or is not attached.
        """
        self._require_compiled("detachFromDevice")
        self._flow.detach()

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
        self._flow.attach()

    def isAttachedToDevice(self) -> bool:
        """Tells whether the model holds the device.

        Returns:
            True while the compiled model is attached; False before it compiles, after
            :meth:`popsim.Executor.detachFromDevice`, with ``ConnectionType.OnDemand`` until
            its first call, and always with ``ConnectionType.Never``.
        """
        return self._flow.attached


    def _debug_ir(self, optimized: bool = False, locations: bool = True) -> str:
        """The popsim IR of the model as text: as imported from the trace, or
        the program that runs (optimised; for training with its backward pass
        and optimizer step)."""
        self._require_compiled("_debug_ir")
        if optimized:
            return self._program.first.graph_text(locations)
        return self._compiled_model.graph.to_text(locations)

    def _requires_grad_flags(self) -> Tuple[bool, ...]:
        """requires_grad of each parameter the optimizer holds (none for inference), which
        decides what the compiled program trains: a change compiles the model again."""
        optimizer = self._flow.optimizer if self._training else None
        if optimizer is None:
            return ()
        return tuple(parameter.requires_grad for group in optimizer.param_groups
                     for parameter in group["params"])

    def _compile(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
        root = self._profile.root()  # a bad POPSIM_PROFILE_DIR fails before compiling
        _hooks.run_pre_compile()
        with CompileProgress(self._options.show_compilation_progress_bar) as progress:
            self._flow.ensure_registered()
            self._flow.seen_trainers()
            if self._owned_flags is None or len(self._owned_flags) != len(
                    list(self._user_model.modules())):
                self._owned_flags = module_flags(self._user_model)  # as the model is now
            flags = self._owned_flags
            compiled = compile_model(
                self._user_model, self._model, self._options, self._training,
                self._flow.optimizer, self.per_replica_params, flags,
                self._flow.names_by_tensor(), self._reported_attributes, args, kwargs,
                progress, self._exported)
            self._flow.bind(compiled.program, compiled.binding,
                            _replication.of(self._options, self._training).job,
                            compiled.replica_groups)
            self._compiled = compiled
            self._trained_flags = self._requires_grad_flags()
            self._calls = Calls(compiled, self._options)
            self._compilation_seconds = time.perf_counter() - compiled.started
            self._profile.compiled(root, compiled.program, type(self._user_model).__name__,
                                   compiled.stages, self._compilation_seconds,
                                   _replication.of(self._options, self._training).job)
        _hooks.run_post_compile()
        if self._options.log_dir and _profile_recorder.profiling_allowed():
            _profile_recorder.write_log(self._options.log_dir, type(self._user_model).__name__,
                                        compiled.graph, compiled.program)

    @_one_thread_at_a_time
    def save(self, filename: str, export_model: bool = True) -> None:
        """Writes the compiled program to a file, as PopTorch's ``save``.

        The file also records, as data, the structure, shapes and dtypes of the call the
        model compiled for (tensors, tuples, lists, dicts and plain values such as numbers and
        strings). It is written atomically (a reader never sees half of it), readable by its
        owner only.

        Args:
            filename: The path of the file to write (missing directories are created), or an
                existing directory, which gets one file named by the program's hash,
                ``<hash>.popsim``, as PopTorch's ``save`` writes into a directory.
            export_model: Whether to store the model too (with its current weights), with its
                options and optimizer, so that :func:`popsim.load` restores all of them. The
                model must be picklable then, and loading it unpickles it (see
                :func:`popsim.load`). Without it, call :meth:`popsim.Executor.loadExecutable`
                on the model wrapped again to load the program; that runs no code from the
                file.

        Raises:
            NotCompiledError: when the model has not compiled (an InputError).
            ExecutableFileError: when ``export_model`` is True and the model, its options or
                optimizer cannot be pickled, or when an argument of the call is of a type a
                file cannot describe as data (the message names it).
        """
        self._require_compiled("save")
        compiled = self._compiled_model
        model = None
        if export_model:
            self._flow.host_used()
            if self._training:
                self._flow.optimizer_state_to_host()
            model = {"model": self._user_model, "options": self._options,
                     "optimizer": self._flow.optimizer if self._training else None}
        key = _executable_file.program_key(compiled.graph, compiled.compile_options)
        _executable_file.write(os.fspath(filename), key, compiled.program.first.serialize_program(),
                               training=self._training, call=compiled.call_spec, model=model)

    def compileAndExport(self, filename: str, *args: Any, export_model: bool = True,
                         **kwargs: Any) -> None:
        """Compiles for these inputs (unless compiled already) and saves the program to a file.

        :meth:`popsim.Executor.compile` then :meth:`popsim.Executor.save`.

        Args:
            filename: The path of the file to write, or an existing directory to write one
                file into (see :meth:`popsim.Executor.save`).
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
        checks that the model and the options give the program the file holds. Nothing in the
        file is unpickled: the call is JSON and the program popsim's own validated format, so a
        file from elsewhere cannot run code. A model that has compiled already is destroyed
        first (see :meth:`popsim.Executor.destroy`).

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
        if stored.call is None:
            raise ExecutableFileError(f"'{path}' holds a cached program without the call it was "
                                      "compiled for; loadExecutable reads compileAndExport's "
                                      "files.")
        if stored.training != self._training:
            kinds = {True: "trainingModel", False: "inferenceModel"}
            raise ExecutableFileError(
                f"'{path}' holds the program of a {kinds[bool(stored.training)]}; this "
                f"model was wrapped with {kinds[self._training]}.")
        if self._compiled is not None:
            self.destroy()
        args, kwargs = _call_spec.call_from_spec(stored.call)
        self._exported = (path, stored)
        try:
            self._compile(args, kwargs)
        finally:
            self._exported = None


    def __repr__(self) -> str:
        # As PopTorch's: the wrapped model, its BeginBlock annotations shown.
        return module_repr(self._user_model)

    def _summary(self) -> str:
        """What errors call it: "popsim training model (not compiled) of Net"."""
        state = "compiled" if self.isCompiled() else "not compiled"
        kind = "training" if self._training else "inference"
        return f"popsim {kind} model ({state}) of {type(self._user_model).__name__}"


def inferenceModel(model: torch.nn.Module, options: Optional[Options] = None) -> Executor:
    """Wraps ``model`` to run inference on simulated IPUs.

    Like PopTorch, popsim makes a shallow copy: parameters are shared with
    ``model``. Each module runs as its train/eval flag says when the model compiles, as in
    eager PyTorch and PopTorch: call ``model.eval()`` first for inference's behaviour
    (dropout the identity, batch norm on its running statistics). The model compiles at its
    first call (or :meth:`popsim.Executor.compile`).

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()).eval()
        >>> executor = popsim.inferenceModel(model)
        >>> executor(torch.randn(2, 4)).shape
        torch.Size([2, 8])
        >>> executor.simulatedTime() > 0  # seconds of the call on the simulated clock
        True

    Args:
        model: The model to run, or a wrapped model, whose model is wrapped again.
        options: The options to compile and run with; None means ``popsim.Options()``. They
            are frozen: :meth:`popsim.Options.clone` gives a copy to change.

    Returns:
        The wrapped model, called as ``model`` is.

    Raises:
        ArgumentError: when ``model`` is not a ``torch.nn.Module``.
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

    Example:
        >>> class Regression(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.linear = torch.nn.Linear(4, 2)
        ...     def forward(self, x, target):
        ...         out = self.linear(x)
        ...         return out, torch.nn.functional.mse_loss(out, target)
        >>> model = Regression()
        >>> optimizer = popsim.optim.SGD(model.parameters(), lr=0.1)
        >>> trainer = popsim.trainingModel(model, popsim.Options(), optimizer)
        >>> out, loss = trainer(torch.randn(8, 4), torch.randn(8, 2))  # one optimizer step
        >>> out.shape, loss.shape
        (torch.Size([8, 2]), torch.Size([]))
        >>> trainer.copyWeightsToHost()  # model.linear now holds the trained weights

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
        ArgumentError: when ``model`` is not a ``torch.nn.Module``.
        OptionError: when ``options`` is not a :class:`popsim.Options` or the options do not
            fit together, or when popsim cannot train with ``optimizer``.
    """
    return Executor(model, options, training=True, optimizer=optimizer)
