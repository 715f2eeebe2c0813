"""``popsim.Options``: how a model is compiled and run, in PopTorch's shape.

Setters return the options object, so calls chain::

    opts = popsim.Options().deviceIterations(10).randomSeed(42)
    opts.Simulator.numIpus(4).ipuVersion("Mk2").memoryPerIpu("64MiB")

Values are checked when set. Once options are passed to a model they are
frozen (the model keeps its own copy); ``clone()`` gives a modifiable copy.
"""

import copy
from typing import Any, Dict, List, Literal, Optional, Tuple, Union


from popsim import _C
from popsim.api.call_options import _CallSetters
from popsim.api.enums import CommGroupType, ConnectionType, OutputMode, SyncPattern
from popsim.api import options_file as _options_file
from popsim.api.errors import OptionError
from popsim.api.option_fields import (_CoreField, _decode_anchors, _decode_cache,
                                      _decode_replica_grouping, _encode_anchors, _encode_cache,
                                      _encode_replica_grouping, _enum_codec)
from popsim.api.option_groups import (_DistributedOptions, _JitOptions, _PrecisionOptions,
                                      _TensorLocationOptions, _TrainingOptions)
from popsim.api.popart_options import _PopartOptions
from popsim.api.simulator_options import _SimulatorOptions
from popsim.api.run_options import _RunSetters
from popsim.api.strategies import _ExecutionStrategy
from popsim.api.values import json_object_in_environment

# PopTorch's poptorch.options.ConfigFileError: a line loadFromFile cannot apply.
ConfigFileError = _options_file.ConfigFileError


_GROUPS = ("Training", "Simulator", "TensorLocations", "_Popart", "Precision", "Jit",
           "Distributed")


class Options(_CallSetters, _RunSetters):
    """How popsim compiles and runs a model, in the shape of PopTorch's options.

    Setters check their value, set it and return the options, so calls chain::

        opts = popsim.Options().deviceIterations(10).randomSeed(42)
        opts.Simulator.numIpus(4).ipuVersion("Mk2").memoryPerIpu("64MiB")

    The options are grouped as in PopTorch: ``opts.Training``, ``opts.Precision``,
    ``opts.TensorLocations``, ``opts.Distributed``, ``opts.Jit`` and ``opts._Popart``, plus
    popsim's own ``opts.Simulator`` for the simulated machine. Each option reads as an
    attribute named in snake_case (``opts.device_iterations``); assigning one, as PopTorch
    code does (``opts.replication_factor = 2``), goes through its setter when the setter takes
    a single value, and is an error otherwise.

    Options passed to a model (or to a :class:`popsim.DataLoader`) are frozen, and the model
    compiles with its own copy: a setter then raises :class:`popsim.OptionError`, and
    :meth:`popsim.Options.clone` gives a copy that can change. When created, options apply
    the setters named in the environment variables POPTORCH_DEFAULT_OPTIONS and
    POPSIM_DEFAULT_OPTIONS, JSON objects of setters and values such as
    ``{"deviceIterations": 2, "Precision.enableStochasticRounding": true}``.
    """

    device_iterations: int
    replication_factor: int
    input_replica_grouping: Tuple[int, CommGroupType]
    output_mode: OutputMode
    output_return_period: int
    random_seed: Optional[int]
    log_dir: Optional[str]
    profile_dir: Optional[str]
    use_ipu_model: bool
    # The strategy object as given; the core holds what it says
    # (_ExecutionStrategy._spec), written when it is set and when the options freeze.
    execution_strategy: Optional[_ExecutionStrategy] = None
    available_memory_proportion: Dict[int, float]
    auto_round_num_ipus: bool
    show_compilation_progress_bar: bool
    connection_type: ConnectionType
    sync_pattern: SyncPattern
    broadcast_buffers: bool
    updatable_named_buffers: List[str]
    synthetic_data: bool
    module_namescope: bool
    # None: torch's and popsim's directories.
    source_location_excludes: Optional[List[str]]
    # None: POPSIM_CACHE_DIR or POPTORCH_CACHE_DIR, if set; False: no caching.
    executable_cache_dir: Union[None, Literal[False], str]
    ipu_id: Optional[int]
    # Short name -> (long name, OutputMode or None, period).
    anchored_tensors: Dict[str, Tuple[str, Optional[OutputMode], int]]
    # None: the profile subdirectory is named by the model's kind.
    model_name: Optional[str]
    relax_optimizer_attributes_checks: bool
    _group_name = "Options"
    _core_fields = {
        "device_iterations": _CoreField("device_iterations"),
        "replication_factor": _CoreField("replication_factor"),
        "input_replica_grouping": _CoreField("input_replica_grouping",
                                             _encode_replica_grouping, _decode_replica_grouping),
        "output_mode": _CoreField("output_mode", *_enum_codec(OutputMode, _C.SessionOutputMode)),
        "output_return_period": _CoreField("output_return_period"),
        "random_seed": _CoreField("random_seed"),
        "log_dir": _CoreField("log_directory"),
        "profile_dir": _CoreField("profile_directory"),
        "use_ipu_model": _CoreField("use_ipu_model"),
        "available_memory_proportion": _CoreField("available_memory_proportion"),
        "auto_round_num_ipus": _CoreField("auto_round_num_ipus"),
        "show_compilation_progress_bar": _CoreField("show_compilation_progress_bar"),
        "connection_type": _CoreField("connection_type",
                                      *_enum_codec(ConnectionType, _C.ConnectionType)),
        "sync_pattern": _CoreField("sync_pattern", *_enum_codec(SyncPattern, _C.SyncPattern)),
        "broadcast_buffers": _CoreField("broadcast_buffers"),
        "updatable_named_buffers": _CoreField("updatable_named_buffers"),
        "synthetic_data": _CoreField("synthetic_data"),
        "module_namescope": _CoreField("module_namescope"),
        "source_location_excludes": _CoreField("source_location_excludes"),
        "executable_cache_dir": _CoreField("executable_cache", _encode_cache, _decode_cache),
        "ipu_id": _CoreField("ipu_id"),
        "anchored_tensors": _CoreField("anchors", _encode_anchors, _decode_anchors),
        "model_name": _CoreField("model_name"),
        "relax_optimizer_attributes_checks": _CoreField("relax_optimizer_attributes_checks"),
    }

    # The job plan that made these options (JobPlan.apply), drawn as an HTML
    # section for report.html; not an option, and copied with them.
    _plan_section: Optional[str] = None

    # The option groups (each an object of its own, set once).
    Training: "_TrainingOptions"
    Simulator: "_SimulatorOptions"
    TensorLocations: "_TensorLocationOptions"
    _Popart: "_PopartOptions"
    Precision: "_PrecisionOptions"
    Jit: "_JitOptions"
    Distributed: "_DistributedOptions"

    def __init__(self) -> None:
        """Creates options with the defaults, adjusted by the environment.

        ``opts.Distributed`` reads the process ID and count from the launcher's environment
        (torchrun's or OpenMPI's variables). Then the setters named in POPTORCH_DEFAULT_OPTIONS,
        and after them those in POPSIM_DEFAULT_OPTIONS, run with their values, in order.

        Raises:
            OptionError: if one of those variables is not a JSON object, names no setter of the
                options or gives a value its setter refuses, or the launcher's process ID or count
                is not a valid integer.
        """
        core = _C.SessionOptions()  # every group writes its fields here
        super().__init__(core)
        object.__setattr__(self, "Training", _TrainingOptions(core))
        object.__setattr__(self, "Simulator", _SimulatorOptions(core))
        object.__setattr__(self, "TensorLocations", _TensorLocationOptions(core))
        object.__setattr__(self, "_Popart", _PopartOptions(core))
        object.__setattr__(self, "Precision", _PrecisionOptions(core))
        object.__setattr__(self, "Jit", _JitOptions(core))
        object.__setattr__(self, "Distributed", _DistributedOptions(core))
        self._apply_default_options()

    def _apply_default_options(self) -> None:
        """PopTorch's POPTORCH_DEFAULT_OPTIONS (or POPSIM_DEFAULT_OPTIONS): a
        JSON object of setters and their value, such as
        '{"deviceIterations": 2, "Precision.enableStochasticRounding": true}',
        applied to every Options when it is created."""
        for variable in ("POPTORCH_DEFAULT_OPTIONS", "POPSIM_DEFAULT_OPTIONS"):
            settings = json_object_in_environment(variable, "setters and values",
                                                  '{"deviceIterations": 2}')
            for name, value in (settings or {}).items():
                *groups, setter = str(name).split(".")
                target: Any = self
                try:
                    for group in groups:
                        target = getattr(target, group)
                    method = getattr(target, setter)
                except AttributeError as error:
                    raise OptionError(f"{variable}: {error}", option=variable) from None
                if not callable(method):
                    raise OptionError(f"{variable}: '{name}' is not a setter of popsim.Options.",
                                      option=variable)
                method(value)

    @property
    def prefetch_depth(self) -> int:
        """prefetchDepth's value: PopART's defaultPrefetchBufferingDepth, which
        opts._Popart.set("defaultPrefetchBufferingDepth", n) sets too."""
        return self._core.prefetch_depth

    @property
    def log_cycle_count(self) -> bool:
        """logCycleCount's value: PopART's instrumentWithHardwareCycleCounter."""
        return self._core.log_cycle_count

    @property
    def _session(self) -> _C.SessionOptions:
        """The session's options as the host runtime reads them (C++'s host::SessionOptions):
        what every setter wrote."""
        return self._core

    def _raise_invalid(self, training: bool) -> None:
        """Raises the error of a recorded PopART value (_Popart.set) that a model compiling
        now refuses, as PopART refuses it when its session is made."""
        self._Popart._raise_invalid(training)

    def loadFromFile(self, filepath: str) -> "Options":
        """Sets options from a file with one setter call per line.

        Each line is written as in Python without the ``options.`` prefix:
        ``deviceIterations(4)``, ``Training.gradientAccumulation(2)``,
        ``setExecutionStrategy(poptorch.ShardedExecution())``. Arguments are data, read
        without running the file as Python: literals (numbers, strings, tuples, lists, dicts,
        ``True``/``False``/``None``) and arithmetic on them, public attributes of ``popsim``,
        ``poptorch`` (popsim) and ``torch`` (``poptorch.OutputMode.EveryN``,
        ``torch.float16``), calls of popsim's classes (``poptorch.ShardedExecution()``) and of
        the builtins ``bool``, ``dict``, ``float``, ``int``, ``list``, ``str`` and ``tuple``.
        Blank lines and lines starting with ``#`` are skipped. Lines before a bad line have
        already taken effect.

        Args:
            filepath: The file's path.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if the file cannot be read, or the setter refuses a line's arguments.
            ConfigFileError: (an ``OptionError``, ``poptorch.options.ConfigFileError``) if a
                line is not Python, not a setter call, names no setter, or has arguments that
                cannot be evaluated; the message names the file and line.
        """
        _options_file.load(self, filepath)
        return self

    def clone(self) -> "Options":
        """Makes a deep copy that is not frozen, even when these options are.

        Returns:
            New options with the same values, groups included, that setters can change.
        """
        twin = copy.deepcopy(self)
        for group in (twin, *(getattr(twin, name) for name in _GROUPS)):
            object.__setattr__(group, "_frozen", False)
        return twin

    def _freeze(self) -> None:
        if not self._frozen and self.execution_strategy is not None:
            # What the strategy says now: its stages' IPUs may have changed since it was set
            # (strategy.phase(i).ipus(...)).
            self._core.execution_strategy = self.execution_strategy._spec()
        super()._freeze()
        for name in _GROUPS:
            getattr(self, name)._freeze()

    def toDict(self) -> Dict[str, Any]:
        """Every option and its value, by field name, with each group's options nested.

        Enum values appear by name; the execution strategy and tensor location settings as their
        repr. ``"_Popart"`` holds the PopART options recorded with ``_Popart.set``.

        Returns:
            A new dict from each option's field name (such as ``"device_iterations"``) to its
            value, plus one entry per group (``"Training"``, ``"Simulator"``, ...) holding that
            group's dict.
        """
        values = super().toDict()
        for name in _GROUPS:
            values[name] = getattr(self, name).toDict()
        return values
