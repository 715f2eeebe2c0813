"""``popsim.Options``: how a model is compiled and run, in PopTorch's shape.

Setters return the options object, so calls chain::

    opts = popsim.Options().deviceIterations(10).randomSeed(42)
    opts.Simulator.numIpus(4).ipuVersion("Mk2").memoryPerIpu("64MiB")

Values are checked when set. Once options are passed to a model they are
frozen (the model keeps its own copy); ``clone()`` gives a modifiable copy.
"""

import builtins
import contextlib
import copy
import difflib
import inspect
import os
import re
import sys
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Tuple, Union

import torch

from popsim import _C
from popsim.api import engine_options as _engine_options
from popsim.api.log import LOGGER
from popsim.api.enums import (
    CommGroupType,
    ConnectionType,
    HalfFloatCastingBehavior,
    MeanReductionStrategy,
    OutputMode,
    ReductionType,
    SyncPattern,
)
from popsim.api.values import is_integer, is_real, is_string_list, json_object_in_environment
from popsim.api.errors import OptionError
from popsim.api.strategies import _ExecutionStrategy
from popsim.api.tensor_locations import TensorLocationSettings

_FROZEN_MESSAGE = (
    "Can't modify frozen Options: they were passed to a model, which compiles with them as "
    "they were. Call opts.clone() to get a copy you can modify."
)


def positive_int(what: str, value: Any, owner: Optional[str] = None) -> int:
    """`value` as an int, if it is a positive integer. The error names `what`: a setter,
    or with `owner` (such as 'popsim.DataLoader'), one of its arguments."""
    if not is_integer(value) or value < 1:
        got = f"got {value!r} ({type(value).__name__})."
        if owner is not None:
            raise OptionError(f"{owner}: {what} must be a positive integer, {got}")
        raise OptionError(f"{what} expects a positive integer, {got}")
    return int(value)


def _parse_memory(value: Any) -> int:
    """Bytes from an int or a string such as '64MiB', '512 KB' or '1.5GiB'."""
    if is_integer(value):
        if value < 1:
            raise OptionError(f"Simulator.memoryPerIpu expects a positive size, got {value}.")
        return int(value)
    if isinstance(value, str):
        size = _C.parse_memory_size(value)  # the core's grammar, which the C++ API shares
        if size is not None:
            return size
    raise OptionError(
        f"Simulator.memoryPerIpu expects a size in bytes (an int) or a string such as '64MiB' "
        f"or '512KB', got {value!r}."
    )


def profile_directory(source: str, directory: Union[str, os.PathLike]) -> str:
    """`directory` as a path string, if it can be a profile directory; `source` names
    the option or environment variable in the error."""
    if isinstance(directory, os.PathLike):
        directory = os.fspath(directory)
    if not isinstance(directory, str) or not directory.strip():
        raise OptionError(
            f"{source} expects a directory path (a non-empty str or os.PathLike), got "
            f"{directory!r} ({type(directory).__name__}).")
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise OptionError(
            f"{source} expects a directory, but '{directory}' is a file. Pass a new or "
            "existing directory; popsim creates it when a model compiles.")
    return directory


class _CoreField:
    """An option field whose value lives in the session's options in the core
    (``_C.SessionOptions``, which the host runtime reads): `path` is the
    field's attribute path there; `encode` and `decode` convert between the
    option's Python value and the core's."""

    def __init__(self, path: str, encode: Optional[Callable[[Any], Any]] = None,
                 decode: Optional[Callable[[Any], Any]] = None) -> None:
        *self._parents, self._leaf = path.split(".")
        self._encode = encode
        self._decode = decode

    def _owner(self, group: "_OptionGroup") -> Any:
        target = group._core
        for name in self._parents:
            target = getattr(target, name)
        return target

    def __get__(self, group: Optional["_OptionGroup"], owner: type) -> Any:
        if group is None:
            return self
        value = getattr(self._owner(group), self._leaf)
        return self._decode(value) if self._decode is not None else value

    def __set__(self, group: "_OptionGroup", value: Any) -> None:
        setattr(self._owner(group), self._leaf,
                self._encode(value) if self._encode is not None else value)


class _OptionGroup:
    """Shared behaviour of the option groups: typed fields, declared on the
    class, that only the group's setters change (inside ``_setting()``, which
    checks that the options are not frozen); freezing; and helpful errors for
    unknown or read-only names.

    The fields popsim acts on live in the session's core options
    (``_core``, a ``_C.SessionOptions`` all groups of one Options share),
    as ``_core_fields`` maps them; the others (the execution strategy
    object, recorded PopTorch values) are declared with their defaults
    (each instance gets its own copy of them)."""

    _group_name = "Options"
    _core_fields: Dict[str, _CoreField] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, field in cls.__dict__.get("_core_fields", {}).items():
            setattr(cls, name, field)

    def __init__(self, core: _C.SessionOptions) -> None:
        object.__setattr__(self, "_frozen", False)
        object.__setattr__(self, "_setters_running", 0)
        object.__setattr__(self, "_core", core)
        for name in self._fields():
            if name in self._all_core_fields():
                continue
            # Deep: defaults may be mutable, and each Options owns its own.
            object.__setattr__(self, name, copy.deepcopy(getattr(type(self), name)))

    @classmethod
    def _all_core_fields(cls) -> Dict[str, _CoreField]:
        fields: Dict[str, _CoreField] = {}
        for klass in reversed(cls.__mro__):
            fields.update(klass.__dict__.get("_core_fields", {}))
        return fields

    @classmethod
    def _fields(cls) -> List[str]:
        """The group's option fields: its public annotated attributes, in order."""
        names: List[str] = []
        for klass in reversed(cls.__mro__):
            for name in getattr(klass, "__annotations__", {}):
                # Fields are snake_case; Options' groups (Training, ...) are not fields.
                if name[0].islower() and name not in names:
                    names.append(name)
        return names

    @contextlib.contextmanager
    def _setting(self) -> Iterator[None]:
        """Lets a setter assign the group's fields (refused once frozen)."""
        if self._frozen:
            raise OptionError(_FROZEN_MESSAGE)
        object.__setattr__(self, "_setters_running", self._setters_running + 1)
        try:
            yield
        finally:
            object.__setattr__(self, "_setters_running", self._setters_running - 1)

    def _freeze(self) -> None:
        object.__setattr__(self, "_frozen", True)

    def __getattr__(self, name: str) -> Any:
        # Only for names the object does not have: say which it has.
        known = [n for n in dir(type(self)) if not n.startswith("_")]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise AttributeError(f"{self._group_name} has no option '{name}'.{hint}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._fields():
            if self.__dict__.get("_setters_running", 0) > 0:
                object.__setattr__(self, name, value)
                return
            # opts.replication_factor = 2, as PopTorch code writes it: through
            # the option's setter, with its checks, when it takes one value.
            setter = getattr(type(self), _setter_name(name), None)
            if callable(setter) and len(inspect.signature(setter).parameters) == 2:
                setter(self, value)
                return
            raise AttributeError(
                f"{self._group_name}.{name} is read-only: set it with the setter method, "
                f"e.g. {self._group_name}.{_setter_name(name)}(...)."
            )
        raise AttributeError(f"{self._group_name} has no option '{name}'.")

    def toDict(self) -> Dict[str, Any]:
        """The group's options and their values, by field name.

        Enum values appear by name; execution strategies and tensor location settings as their
        repr.

        Returns:
            A new dict from each option's field name (such as ``"gradient_accumulation"``) to its
            value.
        """
        return {name: _printable(getattr(self, name)) for name in self._fields()}

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.toDict().items())
        return f"{self._group_name}({fields})"


def _printable(value: Any) -> Any:
    """An option's value as toDict() shows it: enums by name, strategies and
    tensor location settings as their repr."""
    if isinstance(value, (OutputMode, ReductionType, ConnectionType, SyncPattern,
                          HalfFloatCastingBehavior, MeanReductionStrategy)):
        return value.name
    if isinstance(value, (_ExecutionStrategy, TensorLocationSettings)):
        return repr(value)
    return value


# Fields whose setter is not their name in camelCase (test_options checks every field).
_SETTERS = {
    "model_name": "modelName",
    "automatic_loss_scaling": "setAutomaticLossScaling",
    "relax_optimizer_attributes_checks": "relaxOptimizerAttributesChecks",
    "input_replica_grouping": "inputReplicaGrouping",
    "profile_dir": "enableProfiling",
    "executable_cache_dir": "enableExecutableCaching",
    "ipu_id": "useIpuId",
    "anchored_tensors": "anchorTensor",
    "num_distributed_processes": "configureProcessId",
    "distributed_process_id": "configureProcessId",
    "execution_strategy": "setExecutionStrategy",
    "available_memory_proportion": "setAvailableMemoryProportion",
    "output_return_period": "outputMode",
    "recomputation_enabled": "recomputation",
    "optimizer_location": "setOptimizerLocation",
    "weight_location": "setWeightLocation",
    "accumulator_location": "setAccumulatorLocation",
    "mean_reduction_strategy": "setMeanAccumulationAndReplicationReductionStrategy",
    "activation_location": "setActivationLocation",
    "num_io_tiles": "numIOTiles",
    "auto_round_num_ipus": "autoRoundNumIPUs",
    "partials_type": "setPartialsType",
    "floating_point_exceptions": "enableFloatingPointExceptions",
    "stochastic_rounding": "enableStochasticRounding",
    "synthetic_data": "enableSyntheticData",
    "module_namescope": "disableModuleNamescope",
}


# Frames in these directories are library code, not the user's line.
DEFAULT_SOURCE_LOCATION_EXCLUDES = (
    os.path.dirname(torch.__file__) + os.sep,
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # the popsim package
)


def source_location_excludes(options: "Options") -> List[str]:
    """The strings whose frames an op's source line skips (sourceLocationExcludes)."""
    excludes = options.source_location_excludes
    return list(DEFAULT_SOURCE_LOCATION_EXCLUDES if excludes is None else excludes)


def _setter_name(field: str) -> str:
    if field in _SETTERS:
        return _SETTERS[field]
    head, *rest = field.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _enum_codec(python_enum: Any, core_enum: Any) -> Tuple[Callable[[Any], Any],
                                                             Callable[[Any], Any]]:
    """(encode, decode) of an enum whose core twin has the same values."""
    return (lambda value: core_enum(int(value))), (lambda value: python_enum(int(value)))


def _encode_location(settings: TensorLocationSettings) -> _C.TensorLocationSettings:
    core = _C.TensorLocationSettings()
    for name in ("on_chip", "min_elements_for_off_chip", "replicated_tensor_sharding",
                 "min_elements_for_sharding", "io_tiles_to_load", "io_tiles_to_store"):
        setattr(core, name, getattr(settings, name))
    return core


def _decode_location(core: _C.TensorLocationSettings) -> TensorLocationSettings:
    settings = TensorLocationSettings()
    for name in ("on_chip", "min_elements_for_off_chip", "replicated_tensor_sharding",
                 "min_elements_for_sharding", "io_tiles_to_load", "io_tiles_to_store"):
        setattr(settings, name, getattr(core, name))
    return settings


_LOCATION_CODEC = (_encode_location, _decode_location)


def _encode_replica_grouping(value: Tuple[int, CommGroupType]) -> _C.InputReplicaGrouping:
    grouping = _C.InputReplicaGrouping()
    grouping.size, grouping.type = value[0], _C.CommGroupType(int(value[1]))
    return grouping


def _decode_replica_grouping(core: _C.InputReplicaGrouping) -> Tuple[int, CommGroupType]:
    return core.size, CommGroupType(int(core.type))


def _encode_cache(value: Union[None, Literal[False], str]) -> _C.ExecutableCache:
    cache = _C.ExecutableCache()
    if value is None:
        cache.source = _C.ExecutableCacheSource.Environment
    elif value is False:
        cache.source = _C.ExecutableCacheSource.Off
    else:
        cache.source, cache.directory = _C.ExecutableCacheSource.Directory, value
    return cache


def _decode_cache(cache: _C.ExecutableCache) -> Union[None, Literal[False], str]:
    if cache.source == _C.ExecutableCacheSource.Directory:
        return cache.directory
    return False if cache.source == _C.ExecutableCacheSource.Off else None


def _encode_anchors(anchors: Dict[str, Tuple[str, Optional[OutputMode], int]]
                    ) -> List[_C.Anchor]:
    return [_C.Anchor(short, long_name, None if mode is None else _C.SessionOutputMode(int(mode)),
                      period) for short, (long_name, mode, period) in anchors.items()]


def _decode_anchors(anchors: List[_C.Anchor]) -> Dict[str, Tuple[str, Optional[OutputMode], int]]:
    return {anchor.short_name: (anchor.long_name,
                                None if anchor.mode is None else OutputMode(int(anchor.mode)),
                                anchor.period) for anchor in anchors}


class _TrainingOptions(_OptionGroup):
    """Options of training models (``opts.Training``)."""

    gradient_accumulation: int
    accumulation_and_replication_reduction_type: ReductionType
    mean_reduction_strategy: MeanReductionStrategy
    recomputation_enabled: bool
    automatic_loss_scaling: bool
    _group_name = "Options.Training"
    _core_fields = {
        "gradient_accumulation": _CoreField("training.gradient_accumulation"),
        "accumulation_and_replication_reduction_type": _CoreField(
            "training.reduction", *_enum_codec(ReductionType, _C.ReductionType)),
        "mean_reduction_strategy": _CoreField(
            "training.mean_strategy",
            *_enum_codec(MeanReductionStrategy, _C.MeanReductionStrategy)),
        "recomputation_enabled": _CoreField("training.recomputation"),
        "automatic_loss_scaling": _CoreField("training.automatic_loss_scaling"),
    }

    def gradientAccumulation(self, gradient_accumulation: int) -> "_TrainingOptions":
        """Sets how many micro-batches' gradients are accumulated before each weight update.

        Args:
            gradient_accumulation: The number of micro-batches per optimizer step (default 1:
                an update after every micro-batch).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``gradient_accumulation`` is not a positive integer, or the options are
                frozen.
        """
        with self._setting():
            self.gradient_accumulation = positive_int("Training.gradientAccumulation", gradient_accumulation)
        return self

    def accumulationAndReplicationReductionType(self, reduction_type: ReductionType
                                                ) -> "_TrainingOptions":
        """Sets whether a step uses the mean or the sum of its micro-batches' gradients.

        The same reduction combines the gradients of the replicas
        (:meth:`popsim.Options.replicationFactor`).

        Args:
            reduction_type: ``ReductionType.Mean`` (the default) or ``ReductionType.Sum``.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``reduction_type`` is neither ``ReductionType.Mean`` nor
                ``ReductionType.Sum`` (``NoReduction`` is refused), or the options are frozen.
        """
        if reduction_type not in (ReductionType.Mean, ReductionType.Sum):
            raise OptionError(
                "Training.accumulationAndReplicationReductionType expects "
                f"popsim.ReductionType.Mean or popsim.ReductionType.Sum, got {reduction_type!r}.")
        with self._setting():
            self.accumulation_and_replication_reduction_type = reduction_type
        return self

    def setMeanAccumulationAndReplicationReductionStrategy(
            self, mean_reduction_strategy: MeanReductionStrategy) -> "_TrainingOptions":
        """Sets when a mean reduction divides the gradients.

        With the ``Mean`` reduction type, the accumulators hold either the running mean of a
        step's gradients (``MeanReductionStrategy.Running``) or their sum, divided when the step
        reads it (``MeanReductionStrategy.Post``, the default, as PopTorch's for float32
        accumulators). ``PostAndLoss`` is deprecated, as in PopTorch: it logs a warning and
        computes what ``Post`` computes, the same up to rounding.

        Args:
            mean_reduction_strategy: A :class:`popsim.MeanReductionStrategy`.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``mean_reduction_strategy`` is not a
                :class:`popsim.MeanReductionStrategy`, or the options are frozen.
        """
        if not isinstance(mean_reduction_strategy, MeanReductionStrategy):
            raise OptionError(
                "Training.setMeanAccumulationAndReplicationReductionStrategy expects a "
                f"popsim.MeanReductionStrategy (Running, Post), got {mean_reduction_strategy!r}.")
        if mean_reduction_strategy == MeanReductionStrategy.PostAndLoss:
            LOGGER.warning("MeanReductionStrategy.PostAndLoss is deprecated (as in PopTorch); "
                           "popsim computes what Post computes, the same up to rounding.")
        with self._setting():
            self.mean_reduction_strategy = mean_reduction_strategy
        return self

    def recomputation(self, enabled: bool) -> "_TrainingOptions":
        """Turns recomputation of forward activations in pipelined training on or off.

        With recomputation, each stage's backward pass recomputes the forward activations it
        needs from the stage's inputs, so only the inputs are stashed between a micro-batch's
        forward and backward passes: less memory (the stash shrinks to the stage inputs), more
        compute (each stage's forward ops run twice), identical results. Values marked with
        :func:`popsim.recomputationCheckpoint` are kept rather than recomputed, and a stage whose
        forward and backward passes are one task (the last stage, or a model on one IPU)
        recomputes between its checkpoints if it has any.

        Args:
            enabled: True to recompute; False (the default) to stash every activation the
                backward pass needs.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        if not isinstance(enabled, bool):
            raise OptionError(f"Training.recomputation expects a bool, got {enabled!r}.")
        with self._setting():
            self.recomputation_enabled = enabled
        return self

    def setAutomaticLossScaling(self, enabled: bool) -> "_TrainingOptions":
        """Turns automatic loss scaling on or off, as PopART does it.

        The optimizer's ``loss_scaling`` is where the factor starts. After every optimizer step,
        if more than a proportion of the step's float16 gradients (default 1e-7) lies above a bin
        edge (default 1/8 of float16's largest value, 8188), the factor halves; otherwise it
        doubles (never above 2^15 for a float16 loss). The gradients are divided by the factor in
        float32 before the update. The factor is device state, so the ``loss_scaling`` attribute
        on the host does not change (anchor ``"finalLossScale"`` to read it, see
        :meth:`popsim.Options.anchorTensor`).
        ``_Popart.set("automaticLossScalingSettings.binEdgeLocation", x)`` and
        ``("...thresholdUpperCountProportion", p)`` change the edge and the proportion. The model
        needs float16 gradients to count.

        Args:
            enabled: True to scale automatically; False (the default) to keep the optimizer's
                factor.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.automatic_loss_scaling = _bool("Training.setAutomaticLossScaling", enabled)
        return self


class _SimulatorOptions(_OptionGroup):
    """The simulated machine (``opts.Simulator``): popsim's own settings."""

    num_ipus: Optional[int]
    ipu_version: str
    memory_per_ipu: Optional[int]
    threads_per_ipu: Optional[int]
    cost_only: bool
    allow_over_capacity: bool
    _group_name = "Options.Simulator"
    _core_fields = {
        "num_ipus": _CoreField("simulator.num_ipus"),
        "ipu_version": _CoreField("simulator.chip", lambda name: getattr(_C.ChipVersion, name),
                                  lambda chip: chip.name),
        "memory_per_ipu": _CoreField("simulator.memory_per_ipu"),
        "threads_per_ipu": _CoreField("simulator.threads_per_ipu"),
        "cost_only": _CoreField("simulator.cost_only"),
        "allow_over_capacity": _CoreField("simulator.allow_over_capacity"),
    }

    def numIpus(self, count: int) -> "_SimulatorOptions":
        """Sets how many IPUs the simulated system has.

        Unset, the system has as many IPUs as the model uses (see also
        :meth:`popsim.Options.autoRoundNumIPUs`). With replication the count covers the IPUs of
        all replicas.

        Args:
            count: The number of simulated IPUs.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``count`` is not a positive integer, or the options are frozen.
        """
        with self._setting():
            self.num_ipus = positive_int("Simulator.numIpus", count)
        return self

    def ipuVersion(self, version: str) -> "_SimulatorOptions":
        """Sets the IPU generation to simulate.

        Args:
            version: ``"Mk1"`` (also ``"GC2"``), ``"Mk2"`` (also ``"GC200"``, the default) or
                ``"Bow"``, in any letter case.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``version`` names none of these generations, or the options are frozen.
        """
        name = _C.parse_chip_version(version) if isinstance(version, str) else None
        if name is None:
            raise OptionError(
                f"Simulator.ipuVersion expects 'Mk1', 'Mk2' or 'Bow', got {version!r}.")
        with self._setting():
            self.ipu_version = name
        return self

    def memoryPerIpu(self, size: Union[int, str]) -> "_SimulatorOptions":
        """Sets the memory of each simulated IPU.

        Unset, each IPU has its chip's SRAM. Lower it to size a model for part of an IPU:
        compiling a model that needs more raises :class:`popsim.OutOfMemoryError` (unless
        ``allowOverCapacity`` is on).

        Args:
            size: Bytes, as a positive int, or a string such as ``"64MiB"``, ``"512 KB"`` or
                ``"1.5GiB"`` (units B, KB/MB/GB in powers of 1000, KiB/MiB/GiB in powers of 1024,
                in any letter case).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``size`` is not a positive size in one of these forms, or the options
                are frozen.
        """
        with self._setting():
            self.memory_per_ipu = _parse_memory(size)
        return self

    def threadsPerIpu(self, threads: int) -> "_SimulatorOptions":
        """Sets how many host threads each simulated IPU computes with.

        Each IPU runs on its own host thread, so pipelined stages overlap. Results are identical
        for any value with one IPU, and across strategies for the same value (oneDNN splits some
        reductions by thread).

        Args:
            threads: Threads per IPU. Unset: for one IPU, PyTorch's thread count; for several, an
                equal share of the host's threads, at least one.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``threads`` is not a positive integer, or the options are frozen.
        """
        with self._setting():
            self.threads_per_ipu = positive_int("Simulator.threadsPerIpu", threads)
        return self

    def costOnly(self, enabled: bool = True) -> "_SimulatorOptions":
        """Sizes the job without computing it.

        Compiling, the memory plan, the simulated clock, ``memoryReport()``,
        ``executionTrace()``, ``sizingReport()`` and profiles are those of a run that computes,
        but no kernel runs and the device holds no values, so a call takes milliseconds whatever
        the job.

        A call returns tensors of the right shapes and dtypes on torch's meta device: they hold
        no values, and reading one (``.item()``, printing its values, copying it to the CPU)
        raises. The model's weights stay as they are on the host, inputs the model writes in
        place are left alone, and reading device state (anchored tensors, optimizer state) gives
        meta tensors too.

        Args:
            enabled: True (the default of this call) to size only; False to compute, as without
                this option.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.cost_only = _bool("Simulator.costOnly", enabled)
        return self

    def allowOverCapacity(self, enabled: bool = True) -> "_SimulatorOptions":
        """Lets a cost-only program that does not fit its IPUs' memory compile anyway.

        With ``costOnly``, such a program compiles instead of raising
        :class:`popsim.OutOfMemoryError`, so ``memoryReport()`` and ``sizingReport()`` can say
        by how much it is over and what to change (:func:`popsim.sizeJob` sets it). It applies to
        cost-only runs only: a run that computes must fit.

        Args:
            enabled: True (the default of this call) to allow it; False to raise as usual.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.allow_over_capacity = _bool("Simulator.allowOverCapacity", enabled)
        return self


class _PrecisionOptions(_OptionGroup):
    """Numerical precision (``opts.Precision``). float16 values are stored as
    float16 and every float16 op's result is rounded to float16, as on an IPU;
    these options decide how float16 and float32 operands mix, how results
    round, and whether overflow is an error."""

    partials_type: torch.dtype
    running_statistics_always_float: bool
    half_float_casting: HalfFloatCastingBehavior
    floating_point_exceptions: bool
    stochastic_rounding: bool
    _group_name = "Options.Precision"
    _core_fields = {
        "partials_type": _CoreField("precision.half_partials",
                                    lambda dtype: dtype == torch.float16,
                                    lambda half: torch.float16 if half else torch.float32),
        "running_statistics_always_float": _CoreField(
            "precision.running_statistics_always_float"),
        "half_float_casting": _CoreField(
            "precision.half_float_casting",
            *_enum_codec(HalfFloatCastingBehavior, _C.HalfFloatCasting)),
        "floating_point_exceptions": _CoreField("precision.floating_point_exceptions"),
        "stochastic_rounding": _CoreField("precision.stochastic_rounding"),
    }

    def setPartialsType(self, dtype: torch.dtype) -> "_PrecisionOptions":
        """Sets the type float16 matmuls and convolutions sum their products in.

        This applies to the forward and backward passes. ``torch.float`` (the default) sums in
        float32 and rounds the result once. ``torch.half`` sums in float16 partials, as an IPU
        does, which halves the partials in their temporary memory: each run of 16 consecutive
        products (in the reduction's order; a convolution's window includes the padding) is
        summed, rounded to float16 and added to a float16 total, rounded again; a bias is added
        after. These ops then run popsim's own vectorised loops, slower than oneDNN's. float32
        ops always accumulate in float32.

        Args:
            dtype: ``torch.float`` (``torch.float32``) or ``torch.half`` (``torch.float16``).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``dtype`` is neither ``torch.float`` nor ``torch.half``, or the options
                are frozen.
        """
        if dtype not in (torch.float32, torch.float16):
            raise OptionError(f"Precision.setPartialsType expects torch.float or torch.half, "
                              f"got {dtype!r}.")
        with self._setting():
            self.partials_type = dtype
        return self

    def runningStatisticsAlwaysFloat(self, value: bool) -> "_PrecisionOptions":
        """Sets whether float16 batch norms keep their running statistics in float32.

        Args:
            value: True (the default): the running mean and variance of float16 batch norms are
                held and updated in float32 on the device, as PopTorch keeps them (the host's
                buffers keep their dtype). False: in the layer's dtype.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``value`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.running_statistics_always_float = _bool("Precision.runningStatisticsAlwaysFloat", value)
        return self

    def halfFloatCasting(self, half_float_casting: HalfFloatCastingBehavior) -> "_PrecisionOptions":
        """Sets how an op mixing float16 and float32 operands computes.

        ``HalfUpcastToFloat`` follows PyTorch's promotion: a float32 operand with dimensions makes
        the op compute in float32, matrix products and convolutions included (where eager
        PyTorch refuses mixed operands), so a float16 model needs float16 inputs to compute in
        float16. ``FloatDowncastToHalf`` casts the float32 operands to float16, so a float16
        model takes float32 inputs. ``Default`` (the default) is ``HalfUpcastToFloat``, as
        PopTorch 3's default (dispatcher) frontend, or ``FloatDowncastToHalf`` after
        ``Jit.traceModel(True)``, as PopTorch's legacy tracing frontend. In-place ops keep their
        target's dtype either way.

        Args:
            half_float_casting: A :class:`popsim.HalfFloatCastingBehavior`.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``half_float_casting`` is not a
                :class:`popsim.HalfFloatCastingBehavior`, or the options are frozen.
        """
        if not isinstance(half_float_casting, HalfFloatCastingBehavior):
            raise OptionError(f"Precision.halfFloatCasting expects a "
                              f"popsim.HalfFloatCastingBehavior, got {half_float_casting!r}.")
        with self._setting():
            self.half_float_casting = half_float_casting
        return self

    def enableFloatingPointExceptions(self, enabled: bool) -> "_PrecisionOptions":
        """Sets whether overflow and invalid operations stop the run, as an IPU traps them.

        When on, an op whose result overflows to an infinity (or divides by zero) from finite
        operands, or computes NaN from operands without NaN (inf - inf, 0 x inf, the root of a
        negative number), stops the run with a :class:`popsim.ExecutionError` naming the op and
        its source line.

        Args:
            enabled: True to trap; False (the default) to let infinities and NaN propagate, as
                in PyTorch.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.floating_point_exceptions = _bool("Precision.enableFloatingPointExceptions", enabled)
        return self

    def enableStochasticRounding(self, enabled: bool) -> "_PrecisionOptions":
        """Sets whether float16 results round stochastically.

        When on, float16 results (of every op, and of weight updates) round to one of the two
        nearest float16 values at random, the farther one with the probability of its nearness,
        so that rounding is unbiased on average. The random numbers come from the model's seed
        (:meth:`popsim.Options.randomSeed`), so a run is reproducible. float32 results always
        round to nearest.

        Args:
            enabled: True to round stochastically; False (the default) to round to nearest,
                ties to even.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.stochastic_rounding = _bool("Precision.enableStochasticRounding", enabled)
        return self


class _JitOptions(_OptionGroup):
    """PopTorch's JIT options (``opts.Jit``)."""

    trace_model: bool
    _group_name = "Options.Jit"
    _core_fields = {"trace_model": _CoreField("trace_model")}

    def traceModel(self, trace_model: bool) -> "_JitOptions":
        """Sets which of PopTorch's frontends a model is compiled as.

        popsim builds its graph the same way under both; the one difference it models is
        ``Precision.halfFloatCasting``'s ``Default``, under which ops mixing float16 and float32
        operands compute in float16 with the tracing frontend.

        Args:
            trace_model: False (the default, as in PopTorch 3): the dispatcher frontend. True:
                the legacy tracing frontend, deprecated since PopTorch 3.0.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``trace_model`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.trace_model = _bool("Jit.traceModel", trace_model)
        return self


class _TensorLocationOptions(_OptionGroup):
    """Where kinds of tensors live (``opts.TensorLocations``), each set with a
    popsim.TensorLocationSettings. Off chip (``useOnChipStorage(False)``), tensors
    live in Streaming Memory: each op streams in the off-chip tensors it reads just
    before it runs and streams out those it writes just after. Results are the same;
    memoryReport() moves the tensors off chip (what an op holds on chip while it works
    counts as "streamed in") and the simulated clock charges the transfers
    ("streaming" events)."""

    optimizer_location: TensorLocationSettings
    weight_location: TensorLocationSettings
    accumulator_location: TensorLocationSettings
    activation_location: TensorLocationSettings
    num_io_tiles: int
    _group_name = "Options.TensorLocations"
    _core_fields = {
        "optimizer_location": _CoreField("tensor_locations.optimizer", *_LOCATION_CODEC),
        "weight_location": _CoreField("tensor_locations.weights", *_LOCATION_CODEC),
        "accumulator_location": _CoreField("tensor_locations.accumulators", *_LOCATION_CODEC),
        "activation_location": _CoreField("tensor_locations.activations", *_LOCATION_CODEC),
        "num_io_tiles": _CoreField("tensor_locations.num_io_tiles"),
    }

    def numIOTiles(self, num_tiles: int) -> "_TensorLocationOptions":
        """Sets aside tiles of every IPU for host I/O.

        Inputs and outputs marked with :func:`popsim.set_overlap_for_input` /
        :func:`popsim.set_overlap_for_output` stream through these IO tiles beside the compute,
        which runs on the remaining tiles (fewer tiles: more cycles per op, less memory). Their
        buffers must fit in the IO tiles' memory ("IO tiles" in ``memoryReport()``). Off-chip
        tensors whose :class:`popsim.TensorLocationSettings` use IO tiles need them too.
        Unset, no tiles are set aside.

        Args:
            num_tiles: The IO tiles per IPU: an even number from 32 to 192.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``num_tiles`` is not an even integer from 32 to 192, or the options are
                frozen.
        """
        if not is_integer(num_tiles) or not 32 <= num_tiles <= 192 or num_tiles % 2 != 0:
            raise OptionError(f"numIOTiles must be an even number between 32 and 192. "
                              f"TensorLocations.numIOTiles got {num_tiles!r}.")
        with self._setting():
            self.num_io_tiles = num_tiles
        return self

    def setOptimizerLocation(self, location: TensorLocationSettings
                             ) -> "_TensorLocationOptions":
        """Sets where the optimizer state lives.

        Off chip, each op of the weight update streams its parameter's state in and back out.
        With replicated tensor sharding (and replicas), each replica stores a shard of the state.

        Args:
            location: Where these tensors live. The group keeps a copy, so later changes to
                ``location`` do not apply.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``location`` is not a :class:`popsim.TensorLocationSettings`, or the
                options are frozen.
        """
        with self._setting():
            self.optimizer_location = self._checked("setOptimizerLocation", location)
        return self

    def setWeightLocation(self, location: TensorLocationSettings
                          ) -> "_TensorLocationOptions":
        """Sets where weights and buffers live.

        Off chip, every op that uses them streams them in, and the weight update's ops stream
        them back out. With replicated tensor sharding (and replicas), each replica stores
        1/replicas of every weight of at least ``minElementsForReplicatedTensorSharding``
        elements (in training, of every trained weight, with its optimizer state); each task
        that reads such a weight first gathers it from every replica's shard (a
        "replica_all_gather" in the trace), and the update runs on the shard.

        Args:
            location: Where these tensors live. The group keeps a copy, so later changes to
                ``location`` do not apply.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``location`` is not a :class:`popsim.TensorLocationSettings`, or the
                options are frozen.
        """
        with self._setting():
            self.weight_location = self._checked("setWeightLocation", location)
        return self

    def setAccumulatorLocation(self, location: TensorLocationSettings
                               ) -> "_TensorLocationOptions":
        """Sets where gradient accumulators live (training with ``gradientAccumulation`` > 1).

        Off chip, each micro-batch's accumulation streams them in and out to add its gradients,
        and the update reads and clears them. popsim does not shard accumulators: compiling with
        ``useReplicatedTensorSharding(True)`` here raises :class:`popsim.OptionError`.

        Args:
            location: Where these tensors live. The group keeps a copy, so later changes to
                ``location`` do not apply.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``location`` is not a :class:`popsim.TensorLocationSettings`, or the
                options are frozen.
        """
        with self._setting():
            self.accumulator_location = self._checked("setAccumulatorLocation", location)
        return self

    def setActivationLocation(self, location: TensorLocationSettings
                              ) -> "_TensorLocationOptions":
        """Sets where the activations a pipeline stashes live.

        These are the activations kept between a micro-batch's forward and backward passes. Off
        chip, the forward task streams them out and the backward task streams them back in
        ("stash" moves to Streaming Memory). popsim does not shard activations: compiling with
        ``useReplicatedTensorSharding(True)`` here raises :class:`popsim.OptionError`.

        Args:
            location: Where these tensors live. The group keeps a copy, so later changes to
                ``location`` do not apply.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``location`` is not a :class:`popsim.TensorLocationSettings`, or the
                options are frozen.
        """
        with self._setting():
            self.activation_location = self._checked("setActivationLocation", location)
        return self

    @staticmethod
    def _checked(setter: str, settings: TensorLocationSettings) -> TensorLocationSettings:
        if not isinstance(settings, TensorLocationSettings):
            raise OptionError(f"TensorLocations.{setter} expects a "
                              f"popsim.TensorLocationSettings, got {settings!r}.")
        return copy.copy(settings)  # later changes to the caller's settings do not leak in


class _DistributedOptions(_OptionGroup):
    """Which process of a multi-process job this is (``opts.Distributed``),
    as PopTorch's: ``processId`` and ``numProcesses``. They are read from the
    launcher's environment when the options are created: torchrun's ``RANK``
    and ``WORLD_SIZE``, else OpenMPI's ``OMPI_COMM_WORLD_RANK`` and
    ``OMPI_COMM_WORLD_SIZE`` (PopTorch's default, for mpirun and PopRun), else
    process 0 of 1. popsim.DataLoader gives each process its own part of
    every epoch (``auto_distributed_partitioning``), inference models run in
    every process on their own data, and training models sum their
    gradients across the processes with torch.distributed (Gloo)."""

    num_distributed_processes: int
    distributed_process_id: int
    _group_name = "Options.Distributed"
    _core_fields = {
        "num_distributed_processes": _CoreField("distributed.num_processes"),
        "distributed_process_id": _CoreField("distributed.process_id"),
    }
    _ENVIRONMENTS = (("WORLD_SIZE", "RANK"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"))

    def __init__(self, core: _C.SessionOptions) -> None:
        """Reads the process ID and count from the launcher's environment, if it set them.

        ``popsim.Options`` creates the group.

        Args:
            core: The session's options in the core, which the group's setters write.
        """
        super().__init__(core)
        for size, rank in self._ENVIRONMENTS:
            if size in os.environ:
                self.setEnvVarNames(size, rank)
                break

    def disable(self) -> "_DistributedOptions":
        """Ignores the launcher's environment: this is process 0 of 1.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if the options are frozen (they were passed to a model).
        """
        return self.configureProcessId(0, 1)

    def setEnvVarNames(self, var_num_processes: str, var_process_id: str
                       ) -> "_DistributedOptions":
        """Reads the process count and this process's ID from the named environment variables.

        A variable that is not set reads as 1 process or ID 0.

        Args:
            var_num_processes: The variable holding the number of processes (torchrun's
                ``WORLD_SIZE``, for example).
            var_process_id: The variable holding this process's ID, from 0 (torchrun's ``RANK``,
                for example).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if a variable's value is not an integer, the values are not a valid
                process ID and count, or the options are frozen.
        """
        values = []
        for variable, default in ((var_process_id, "0"), (var_num_processes, "1")):
            text = os.environ.get(variable, default)
            try:
                values.append(int(text))
            except ValueError:
                raise OptionError(f"Distributed.setEnvVarNames: the environment variable "
                                  f"{variable} is {text!r}, not an integer.") from None
        return self.configureProcessId(*values)

    def configureProcessId(self, process_id: int, num_processes: int) -> "_DistributedOptions":
        """Sets this process's ID and the number of processes.

        Args:
            process_id: This process's ID, from 0 to ``num_processes - 1``.
            num_processes: The number of processes the job runs in.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``num_processes`` is not a positive integer, ``process_id`` is not an
                integer from 0 to ``num_processes - 1``, or the options are frozen.
        """
        num_processes = positive_int("Distributed.configureProcessId(num_processes)",
                                     num_processes)
        if not is_integer(process_id) or not 0 <= process_id < num_processes:
            raise OptionError(f"Distributed.configureProcessId expects a process ID from 0 to "
                              f"{num_processes - 1} for {num_processes} process(es), got "
                              f"{process_id!r}.")
        with self._setting():
            self.distributed_process_id = int(process_id)
        with self._setting():
            self.num_distributed_processes = num_processes
        return self

    @property
    def processId(self) -> int:
        """The ID of this process, from 0."""
        return self.distributed_process_id

    @property
    def numProcesses(self) -> int:
        """The number of processes the job runs in."""
        return self.num_distributed_processes


_GROUPS = ("Training", "Simulator", "TensorLocations", "_Popart", "Precision", "Jit",
           "Distributed")


class _PopartOptions(_OptionGroup):
    """PopART's session options (``opts._Popart``), for advanced PopTorch users.

    ``set(name, value)`` records any of them, and ``toDict()`` shows them. popsim acts on the
    ones it has a meaning for, which PopTorch's own setters write here:
    ``instrumentWithHardwareCycleCounter`` (``Options.logCycleCount``),
    ``defaultPrefetchBufferingDepth`` (``Options.prefetchDepth``) and the
    ``automaticLossScalingSettings`` fields ``binEdgeLocation`` and
    ``thresholdUpperCountProportion`` (``Training.setAutomaticLossScaling``; its
    ``updatePeriod`` must stay 1), and of ``engineOptions`` (``setEngineOptions``) the stream
    callbacks' threads. ``enableStableNorm`` changes nothing, since popsim's norms
    always compute their statistics in the stable two-pass way. The others configure
    PopART's and Poplar's compilers, which popsim does not have.
    """

    _group_name = "Options._Popart"

    def __init__(self, core: _C.SessionOptions) -> None:
        """Creates the group with no PopART option recorded; ``popsim.Options`` creates it.

        Args:
            core: The session's options in the core, where the options popsim acts on are
                written.
        """
        super().__init__(core)
        # PopART's options are named by strings, any of them: a dict of them.
        object.__setattr__(self, "_session", {})
        # The ones popsim acts on are parsed into the core's typed fields when
        # set. PopART records any value and refuses a bad one when a session
        # is made: such a value's error, by option, and whether only training
        # models refuse it (the model raises it when it compiles).
        object.__setattr__(self, "_invalid", {})

    def set(self, name: str, value: Any) -> "_PopartOptions":
        """Records a PopART session option.

        popsim acts on ``instrumentWithHardwareCycleCounter``, ``defaultPrefetchBufferingDepth``,
        ``automaticLossScalingSettings.*`` and ``engineOptions``' stream-callback threads (see
        the group's summary) and records the others.
        ``get``, ``toDict()`` and the attribute ``opts._Popart.<name>`` read them back.

        Args:
            name: The PopART option's name, such as ``"defaultPrefetchBufferingDepth"``; a field of
                a structured option is named with a dot
                (``"automaticLossScalingSettings.binEdgeLocation"``).
            value: Its value. ``defaultPrefetchBufferingDepth`` takes a non-negative integer, as
                :meth:`popsim.Options.prefetchDepth` does; the others are checked, if at all, when
                a model compiles with them.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``name`` is not a non-empty string, the prefetch depth is not a
                non-negative integer, or the options are frozen.
        """
        if not isinstance(name, str) or not name:
            raise OptionError(f"Options._Popart.set expects an option name, got {name!r}.")
        if name == PREFETCH_DEPTH_OPTION:  # Options.prefetchDepth's value
            value = _prefetch_depth(f"_Popart.set('{name}', ...)", value)
        with self._setting():
            self._session[name] = value
            self._invalid.pop(name, None)
            try:
                self._parse(name, value)
            except OptionError as error:
                self._invalid[name] = (error, name.startswith(_LOSS_SCALING_SETTINGS))
        return self

    def _parse(self, name: str, value: Any) -> None:
        """Writes what a PopART option popsim acts on means into the core's typed fields;
        an OptionError for a value the model would refuse."""
        core = self._core
        if name == PREFETCH_DEPTH_OPTION:
            core.prefetch_depth = value
        elif name == "instrumentWithHardwareCycleCounter":
            core.log_cycle_count = bool(value)
        elif name == "engineOptions":
            core.stream_callbacks = _engine_options.session_threads(value)
        elif name.startswith(_LOSS_SCALING_SETTINGS):
            setting = name[len(_LOSS_SCALING_SETTINGS):]
            if setting == "updatePeriod":
                if not is_real(value) or value != int(value):
                    raise OptionError(
                        f"_Popart {name}={value!r}: popsim updates the automatic loss scaling "
                        "after every optimizer step (period 1) only.")
                core.training.loss_scaling_update_period = int(value)
            elif setting in _LOSS_SCALING_RANGES:
                valid = _LOSS_SCALING_RANGES[setting]
                if not is_real(value) or not valid(value):
                    raise OptionError(
                        f"_Popart {name}={value!r} is out of range (binEdgeLocation in [0, 1], "
                        "thresholdUpperCountProportion in [0, 1)).")
                setattr(core.training, _LOSS_SCALING_FIELDS[setting], float(value))

    def _raise_invalid(self, training: bool) -> None:
        """Raises the error of the first recorded value a model compiling now refuses."""
        for error, training_only in self._invalid.values():
            if training or not training_only:
                raise error

    def get(self, name: str, default: Any = None) -> Any:
        """Reads a recorded PopART option.

        Args:
            name: The option's name, as given to ``set``.
            default: What to return when the option was never set.

        Returns:
            The value ``name`` was set to, or ``default``.
        """
        return self._session.get(name, default)

    def __getattr__(self, name: str) -> Any:
        # opts._Popart.<name> reads a recorded option, as on PopTorch's options.
        session = self.__dict__.get("_session", {})
        if name in session:
            return session[name]
        return super().__getattr__(name)

    def toDict(self) -> Dict[str, Any]:
        """The recorded PopART options.

        Returns:
            A new dict from each option's name to its value, in the order they were first set.
        """
        return dict(self._session)

    def setEngineOptions(self, options: Dict[str, Any]) -> "_PopartOptions":
        """Records Poplar engine options, under ``"engineOptions"``.

        popsim acts on the stream callbacks' threads, ``streamCallbacks.multiThreadMode`` and
        ``streamCallbacks.numWorkerThreads``: they set how many of a process's replicas take
        turns on each host thread for their transfers, which the simulated clock costs (one
        thread for all of them by default, as in Poplar). The others tune Poplar, which popsim
        does not run, and change nothing. POPLAR_ENGINE_OPTIONS overrides these options, as it
        does in Poplar, and asks for profiles.

        Args:
            options: The engine options, by name. The group keeps a copy of the dict.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``options`` is not a dict, or the options are frozen.
        """
        if not isinstance(options, dict):
            raise OptionError(f"setEngineOptions expects a dict, got {options!r}.")
        return self.set("engineOptions", dict(options))

    def setPatterns(self, patterns: Dict[str, bool], level: int = 2) -> "_PopartOptions":
        """Records PopART graph patterns, under ``"patterns"`` and ``"patternsLevel"``.

        popsim has no PopART graph passes, so they change nothing.

        Args:
            patterns: Each pattern's name and whether it is on. The group keeps a copy of the
                dict.
            level: PopART's pattern level (recorded as given).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``patterns`` is not a dict, or the options are frozen.
        """
        if not isinstance(patterns, dict):
            raise OptionError(f"setPatterns expects a dict of pattern names, got {patterns!r}.")
        self.set("patterns", dict(patterns))
        return self.set("patternsLevel", level)


# PopART's input prefetch depth, which Options.prefetchDepth sets (PopTorch's
# guide sets it through opts._Popart).
PREFETCH_DEPTH_OPTION = "defaultPrefetchBufferingDepth"
# PopART's automatic loss scaling settings, by the core's fields, with their ranges.
_LOSS_SCALING_SETTINGS = "automaticLossScalingSettings."
_LOSS_SCALING_FIELDS = {"binEdgeLocation": "loss_scaling_bin_edge",
                        "thresholdUpperCountProportion": "loss_scaling_threshold"}
_LOSS_SCALING_RANGES: Dict[str, Callable[[float], bool]] = {
    "binEdgeLocation": lambda value: 0 <= value <= 1,
    "thresholdUpperCountProportion": lambda value: 0 <= value < 1}


def _prefetch_depth(owner: str, depth: int) -> int:
    if not is_integer(depth) or depth < 0:
        raise OptionError(f"{owner} expects a non-negative integer (0 turns prefetching off), "
                          f"got {depth!r}.")
    return int(depth)


def _bool(owner: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise OptionError(f"{owner} expects True or False, got {value!r}.")
    return value


_SETTER_LINE = re.compile(r"^(?:(Training|Simulator|TensorLocations|Precision|Distributed|Jit|"
                          r"_Popart)\.)?([A-Za-z][A-Za-z0-9_]*)\((.*)\)$")


def _load_options_file(options: "Options", filepath: str) -> None:
    """Options.loadFromFile: each line calls one setter, its arguments
    evaluated as Python with popsim and torch in scope."""
    popsim = sys.modules["popsim"]  # the public package, which has loaded these options

    try:
        with open(filepath) as source:
            lines = source.read().splitlines()
    except OSError as error:
        raise OptionError(f"loadFromFile('{filepath}'): cannot read it: {error}.") from error
    allowed = {name: getattr(builtins, name)
               for name in ("bool", "dict", "float", "int", "list", "str", "tuple")}
    scope = {"popsim": popsim, "poptorch": popsim, "torch": torch, "__builtins__": allowed}
    for number, text in enumerate(lines, start=1):
        line = text.strip()
        if not line or line.startswith("#"):
            continue
        where = f"loadFromFile('{filepath}'), line {number} ({line!r})"
        match = _SETTER_LINE.match(line)
        if match is None:
            raise OptionError(f"{where}: each line must call one option setter, such as "
                              "deviceIterations(4) or Training.gradientAccumulation(2).")
        group, setter = match.group(1), match.group(2)
        target = getattr(options, group) if group else options
        method = getattr(type(target), setter, None)
        if setter.startswith("_") or not callable(method):
            owner = f"Options.{group}" if group else "Options"
            raise OptionError(f"{where}: {owner} has no setter '{setter}'.")
        try:
            arguments = eval(f"_collect({match.group(3)})",  # noqa: S307 - a config file
                             dict(scope, _collect=lambda *a, **k: (a, k)))
        except Exception as error:  # noqa: BLE001 - any error in the user's arguments
            raise OptionError(f"{where}: cannot evaluate its arguments: {error}.") from error
        try:
            getattr(target, setter)(*arguments[0], **arguments[1])
        except OptionError as error:
            raise OptionError(f"{where}: {error}") from error
        except TypeError as error:  # wrong arguments for the setter
            raise OptionError(f"{where}: {error}.") from error


class Options(_OptionGroup):
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
                    raise OptionError(f"{variable}: {error}") from None
                if not callable(method):
                    raise OptionError(f"{variable}: '{name}' is not a setter of popsim.Options.")
                method(value)

    def deviceIterations(self, device_iterations: int) -> "Options":
        """Sets how many iterations of the model run per call.

        Each call takes ``device_iterations`` micro-batches stacked along dimension 0 and runs
        them on the device without returning to Python.

        Args:
            device_iterations: Iterations per call (default 1).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``device_iterations`` is not a positive integer, or the options are
                frozen.
        """
        with self._setting():
            self.device_iterations = positive_int("deviceIterations", device_iterations)
        return self

    def replicationFactor(self, replication_factor: int) -> "Options":
        """Sets how many copies of the model run in data parallel.

        Each replica runs on IPUs of its own and takes a share of every call's batch; in
        training the replicas combine their gradients before each optimizer step (the mean or
        the sum, as ``Training.accumulationAndReplicationReductionType`` says). A call's combined
        batch holds micro-batch x ``deviceIterations`` x ``gradientAccumulation`` x replicas
        samples; ``Simulator.numIpus`` counts the IPUs of all replicas.

        Args:
            replication_factor: The number of replicas (default 1).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``replication_factor`` is not a positive integer, or the options are
                frozen.
        """
        with self._setting():
            self.replication_factor = positive_int("replicationFactor", replication_factor)
        return self

    def inputReplicaGrouping(self, input_group_size: int,
                             input_group_type: CommGroupType) -> "Options":
        """Sets which replicas take the same input data.

        Each group of replicas receives one micro-batch per step, so a call's combined batch
        holds ``replicationFactor / input_group_size`` micro-batches per step.

        Args:
            input_group_size: Replicas per group. It must divide ``replicationFactor`` when the
                model compiles.
            input_group_type: How replicas form the groups: ``CommGroupType.Consecutive``
                (neighbours) or ``Orthogonal`` (strided); ``All`` is one group of every replica,
                and ``Ungrouped`` (the default) gives each replica its own data.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``input_group_size`` is not a positive integer, ``input_group_type``
                is not a :class:`popsim.CommGroupType`, or the options are frozen.
        """
        size = positive_int("inputReplicaGrouping(input_group_size)", input_group_size)
        if not isinstance(input_group_type, CommGroupType):
            raise OptionError(f"inputReplicaGrouping expects a popsim.CommGroupType, got "
                              f"{input_group_type!r}.")
        with self._setting():
            self.input_replica_grouping = (size, input_group_type)
        return self

    def prefetchDepth(self, depth: int) -> "Options":
        """Sets how many input micro-batches each IPU's host link may prepare ahead.

        The host's part of a transfer (its fixed latency) is prepared ahead of the task that
        reads the inputs; their bytes still cross on the compute tiles when the task starts,
        unless they go through IO tiles (``TensorLocations.numIOTiles``). Each micro-batch of
        depth costs an extra buffer of the inputs in the IPU's memory ("prefetch buffers" in
        ``memoryReport()``). Results are the same for any depth; only the simulated time and
        memory change. This is PopART's ``defaultPrefetchBufferingDepth``, which
        ``opts._Popart.set`` sets too; the ``prefetch_depth`` property reads it.

        Args:
            depth: Micro-batches prepared ahead (default 1). With 0, a micro-batch's inputs
                stream in only when its task starts, on the IPU's critical path.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``depth`` is not a non-negative integer, or the options are frozen.
        """
        self._Popart.set(PREFETCH_DEPTH_OPTION, _prefetch_depth("prefetchDepth", depth))
        return self

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

    def setAvailableMemoryProportion(self, available_memory_proportion: Dict[str, float]) -> "Options":
        """Sets the share of each IPU's memory a matmul or convolution may use for temporaries.

        An op that needs more runs in serial passes: less memory ("temporaries" in
        ``memoryReport()``), more cycles. Each call replaces the proportions of the previous one;
        IPUs it does not name keep the default, 0.6.

        Args:
            available_memory_proportion: Each IPU's proportion, in (0, 1], keyed by IPU as
                ``"IPU<n>"``: ``{"IPU0": 0.6, "IPU1": 0.3}``.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``available_memory_proportion`` is not a dict, a key does not name an
                IPU as ``"IPU<n>"``, a proportion is not a number in (0, 1], or the options are
                frozen.
        """
        if not isinstance(available_memory_proportion, dict):
            raise OptionError("setAvailableMemoryProportion expects a dict such as "
                              f"{{'IPU0': 0.6}}, got {available_memory_proportion!r}.")
        parsed: Dict[int, float] = {}
        for key, proportion in available_memory_proportion.items():
            match = re.fullmatch(r"IPU(\d+)", key) if isinstance(key, str) else None
            if match is None:
                raise OptionError(
                    f"setAvailableMemoryProportion: key {key!r} should name an IPU as 'IPU<n>', "
                    "such as 'IPU0'.")
            if not is_real(proportion) or not 0.0 < proportion <= 1.0:
                raise OptionError(
                    f"setAvailableMemoryProportion: the proportion for {key} must be a number "
                    f"in (0, 1], got {proportion!r}.")
            parsed[int(match.group(1))] = float(proportion)
        with self._setting():
            self.available_memory_proportion = parsed
        return self

    def outputMode(self, output_mode: OutputMode,
                   output_return_period: Optional[int] = None) -> "Options":
        """Sets which iterations' outputs a call returns (see :class:`popsim.OutputMode`).

        Args:
            output_mode: A :class:`popsim.OutputMode`; ``OutputMode.Default`` (the default)
                returns every iteration's outputs for inference models and the last one's for
                training models.
            output_return_period: With ``OutputMode.EveryN``, N: every N-th iteration's outputs
                are returned. Other modes ignore it, as in PopTorch (an INFO log message says
                so).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``output_mode`` is not a :class:`popsim.OutputMode`, the period of
                ``OutputMode.EveryN`` is not a positive integer, or the options are frozen.
        """
        if not isinstance(output_mode, OutputMode):
            raise OptionError(f"outputMode expects a popsim.OutputMode, got {output_mode!r}.")
        period = 1
        if output_mode == OutputMode.EveryN:
            period = positive_int("outputMode(OutputMode.EveryN, output_return_period)",
                                   output_return_period)
        elif output_return_period is not None:  # as PopTorch: only EveryN has a period
            LOGGER.info("outputMode(%s, %r): output_return_period is ignored; only "
                         "OutputMode.EveryN uses it.", output_mode, output_return_period)
        with self._setting():
            self.output_mode = output_mode
        with self._setting():
            self.output_return_period = period
        return self

    def randomSeed(self, random_seed: int) -> "Options":
        """Seeds popsim's random numbers, and PyTorch's.

        The seed drives the model's random ops, stochastic rounding, synthetic data and the
        shuffling of :class:`popsim.DataLoader`; the call also runs ``torch.manual_seed``. Unset,
        a model's seed comes from torch's initial seed. A DataLoader that shuffles with
        ``auto_distributed_partitioning`` in a multi-process job needs it set, the same in every
        process.

        Args:
            random_seed: The seed.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``random_seed`` is not a non-negative integer, or the options are
                frozen.
        """
        if not is_integer(random_seed) or random_seed < 0:
            raise OptionError(f"randomSeed expects a non-negative integer, got {random_seed!r}.")
        with self._setting():
            self.random_seed = int(random_seed)
        torch.manual_seed(int(random_seed))
        return self

    def logDir(self, log_dir: Union[str, os.PathLike]) -> "Options":
        """Sets a directory where each compilation writes its IR and memory report.

        After each compilation popsim writes, in that directory (created when needed),
        ``<model class>_<n>.ir.txt`` (the traced graph and the optimised program) and
        ``<model class>_<n>.memory.json`` (the memory report and the program's steps).

        Args:
            log_dir: The directory's path (a non-empty string or ``os.PathLike``).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``log_dir`` is not a non-empty path, or the options are frozen.
        """
        if not isinstance(log_dir, (str, os.PathLike)) or not os.fspath(log_dir):
            raise OptionError(f"logDir expects a directory's path (a non-empty str or "
                              f"os.PathLike), got {log_dir!r}.")
        with self._setting():
            self.log_dir = str(os.fspath(log_dir))
        return self

    def enableProfiling(self, directory: Union[str, os.PathLike]) -> "Options":
        """Sets the directory where each model writes its profile.

        A profile is the execution trace of the model's last call (Chrome Trace Event JSON),
        its memory report and ``report.html``, in a subdirectory per model (``training``,
        ``inference``, ``training_1``, ...; see :meth:`popsim.Options.modelName`). See
        :mod:`popsim.profiling`. The environment variable POPSIM_PROFILE_DIR does the same for
        models whose options leave this unset. The directory is created when a model compiles.

        Args:
            directory: The directory, new or existing, as a non-empty ``str`` or
                ``os.PathLike``.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``directory`` is not a non-empty path, names an existing file,
                or the options are frozen.
        """
        with self._setting():
            self.profile_dir = profile_directory("enableProfiling", directory)
        return self

    def setExecutionStrategy(self, strategy: _ExecutionStrategy) -> "Options":
        """Sets how the model's blocks become pipeline stages on IPUs.

        A model with blocks and no strategy runs
        ``PipelinedExecution(AutoStage.SameAsIpu)``.

        Args:
            strategy: A :class:`popsim.PipelinedExecution`, :class:`popsim.ShardedExecution`,
                :class:`popsim.SerialPhasedExecution` or :class:`popsim.ParallelPhasedExecution`.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``strategy`` is not one of these execution strategies, or the options
                are frozen.
        """
        if not isinstance(strategy, _ExecutionStrategy):
            raise OptionError(
                "setExecutionStrategy expects popsim.PipelinedExecution(...), "
                "popsim.ShardedExecution(...) or a phased execution, got "
                f"{strategy!r}.")
        with self._setting():
            self.execution_strategy = strategy
        self._core.execution_strategy = strategy._spec()
        return self

    def useIpuModel(self, use_model: bool) -> "Options":
        """Accepted for PopTorch compatibility: popsim always runs on simulated IPUs.

        The value is recorded (``use_ipu_model``) and changes nothing.

        Args:
            use_model: Whether PopTorch would run on its IPU Model rather than hardware.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``use_model`` is not a bool, or the options are frozen.
        """
        if not isinstance(use_model, bool):
            raise OptionError(f"useIpuModel expects a bool, got {use_model!r}.")
        with self._setting():
            self.use_ipu_model = use_model
        return self

    def autoRoundNumIPUs(self, auto_round_num_ipus: bool = True) -> "Options":
        """Rounds the simulated system's IPU count up to a power of two.

        This is how IPUs are allocated on real hardware; the extra IPUs stay idle
        (``memoryReport()`` lists them). ``Simulator.numIpus``, when set, wins. Without it popsim
        simulates exactly the IPUs the model uses, as PopTorch's IPU Model does (on hardware
        PopTorch refuses a count that is not a power of two).

        Args:
            auto_round_num_ipus: True (the default of this call) to round up; False (the
                options' default) to use the model's count.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``auto_round_num_ipus`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.auto_round_num_ipus = _bool("autoRoundNumIPUs", auto_round_num_ipus)
        return self

    def logCycleCount(self, log_cycle_count: bool) -> "Options":
        """Sets whether each call logs its simulated cycle count.

        The log line is "Total number of IPU cycles: N", on the logger "popsim" at level INFO
        (``POPSIM_LOG_LEVEL=info`` shows it on stderr). ``cycleCount()`` returns the count with
        or without this option. As in PopTorch, the value is PopART's
        ``instrumentWithHardwareCycleCounter``, in ``opts._Popart``.

        Args:
            log_cycle_count: True to log the count; False (the default) not to.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``log_cycle_count`` is not a bool, or the options are frozen.
        """
        self._Popart.set("instrumentWithHardwareCycleCounter", _bool("logCycleCount", log_cycle_count))
        return self

    def showCompilationProgressBar(self, show: bool = True) -> "Options":
        """Shows or hides the "Graph compilation" progress bar for this model.

        The bar appears for compilations longer than a second; the environment variable
        ``POPSIM_PROGRESS=0`` hides it everywhere.

        Args:
            show: True (the default) to show it; False to hide it.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``show`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.show_compilation_progress_bar = _bool("showCompilationProgressBar", show)
        return self

    def sourceLocationExcludes(self, excludes: List[str]) -> "Options":
        """Sets which stack frames are skipped when finding an op's source line.

        An op's source line (in error messages, the profile and the IR dumps) is the first
        frame of its stack whose file path contains none of ``excludes``. Add to the list with
        :meth:`popsim.Options.appendToLocationExcludes`.

        Args:
            excludes: Substrings of file paths. They replace the default, torch's and popsim's
                directories.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``excludes`` is not a list of strings, or the options are frozen.
        """
        if not is_string_list(excludes):
            raise OptionError(f"sourceLocationExcludes expects a list of str, got {excludes!r}.")
        with self._setting():
            self.source_location_excludes = list(excludes)
        return self

    def appendToLocationExcludes(self, *excludes: str) -> "Options":
        """Also skips the stack frames whose file path contains one of ``excludes``.

        This applies when finding an op's source line (see
        :meth:`popsim.Options.sourceLocationExcludes`), for example to skip a layer library's
        directory. The strings are added to the current list (the default: torch's and popsim's
        directories).

        Args:
            *excludes: Substrings of file paths.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if an argument is not a string, or the options are frozen.
        """
        if not all(isinstance(e, str) for e in excludes):
            raise OptionError(
                f"appendToLocationExcludes expects str arguments, got {excludes!r}.")
        with self._setting():
            self.source_location_excludes = source_location_excludes(self) + list(excludes)
        return self

    def disableModuleNamescope(self) -> "Options":
        """Stops naming ops after the modules that run them.

        By default, as in PopTorch, an op run inside submodule ``encoder.layers.0`` of the model
        is named ``encoder/layers/0/<op>`` (with :class:`popsim.NameScope`'s names joined in), in
        the program, the execution trace and error messages.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if the options are frozen (they were passed to a model).
        """
        with self._setting():
            self.module_namescope = False
        return self

    def connectionType(self, connection_type: ConnectionType) -> "Options":
        """Sets when the model attaches to its IPUs.

        Args:
            connection_type: ``ConnectionType.Always`` (the default: when it compiles),
                ``OnDemand`` (when it first runs) or ``Never`` (it only compiles: running or
                attaching it raises :class:`popsim.OptionError`).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``connection_type`` is not a :class:`popsim.ConnectionType`,
                or the options are frozen.
        """
        if not isinstance(connection_type, ConnectionType):
            raise OptionError(f"connectionType expects a popsim.ConnectionType, got "
                              f"{connection_type!r}.")
        with self._setting():
            self.connection_type = connection_type
        return self

    def enableExecutableCaching(self, path: Optional[Union[str, os.PathLike]]) -> "Options":
        """Keeps compiled programs in a directory, as PopTorch keeps its executables.

        A model compiled again with the same traced program, options and popsim build, in this
        process or another, loads its program from there instead of running the compiler
        passes. Files are versioned and checksummed; a damaged or stale one is compiled again,
        with a warning, and replaced. popsim never deletes cache files. Without this option, the
        environment variable POPSIM_CACHE_DIR (or POPTORCH_CACHE_DIR) names the directory.

        Args:
            path: The cache directory (created when needed), or None to turn caching off,
                ignoring those environment variables too.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``path`` is neither None nor a non-empty ``str`` or ``os.PathLike``,
                or the options are frozen.
        """
        if path is not None and (not isinstance(path, (str, os.PathLike)) or not os.fspath(path)):
            raise OptionError(f"enableExecutableCaching expects a directory path or None, got "
                              f"{path!r}.")
        with self._setting():
            self.executable_cache_dir = False if path is None else os.fspath(path)
        return self

    def useOfflineIpuTarget(self, ipu_version: int = 2) -> "Options":
        """Compiles for an IPU generation without running.

        This sets ``connectionType(ConnectionType.Never)`` and ``Simulator.ipuVersion``. The
        compiled model's ``memoryReport()`` is available; calling the model raises an error.

        Args:
            ipu_version: 1 (Mk1), 2 (Mk2, the default) or 21 (Bow).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``ipu_version`` is not 1, 2 or 21, or the options are frozen.
        """
        versions = {1: "Mk1", 2: "Mk2", 21: "Bow"}
        if ipu_version not in versions:
            raise OptionError(f"useOfflineIpuTarget expects IPU version 1 (Mk1), 2 (Mk2) or "
                              f"21 (Bow), got {ipu_version!r}.")
        self.Simulator.ipuVersion(versions[ipu_version])
        return self.connectionType(ConnectionType.Never)

    def anchorTensor(self, short_name: str, long_name: str,
                     output_mode: Optional[OutputMode] = None,
                     output_return_period: Optional[int] = 1) -> "Options":
        """Anchors a tensor the model does not output, so that each call returns it too.

        This works as PopTorch's anchors: after each call, ``getAnchoredTensor(short_name)``
        gives the tensor. ``getTensorNames()`` lists the long names a compiled model can anchor:

        - ``"Gradient___<parameter>"`` (training models): a trained parameter's gradient of each
          micro-batch, returned as the model's outputs are (the last micro-batch's, or with
          ``OutputMode.All`` every micro-batch's, stacked along a new dimension 0);
        - ``"UpdatedVar___<name>"`` or ``"<name>"``: the value of a parameter or buffer after the
          call;
        - ``"finalLossScale"`` (training models): the loss scaling factor after the call.

        The names are checked when the model compiles, which raises :class:`popsim.OptionError`
        for a name the model does not have.

        Args:
            short_name: The name to read the tensor by, with ``getAnchoredTensor``.
            long_name: Which tensor, by one of the names above.
            output_mode: None (the default) for the model's output mode. popsim returns anchors
                in that mode only: a different mode (or period) is an error when the model
                compiles.
            output_return_period: With ``OutputMode.EveryN``, N; ignored otherwise.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``short_name`` or ``long_name`` is not a non-empty string,
                ``output_mode`` is neither None nor a :class:`popsim.OutputMode`, the period of
                ``OutputMode.EveryN`` is not a positive integer, or the options are frozen.
        """
        for name, value in (("short_name", short_name), ("long_name", long_name)):
            if not isinstance(value, str) or not value:
                raise OptionError(f"anchorTensor expects a non-empty string as {name}, got "
                                  f"{value!r}.")
        if output_mode is not None and not isinstance(output_mode, OutputMode):
            raise OptionError(f"anchorTensor expects a popsim.OutputMode or None as output_mode, "
                              f"got {output_mode!r}.")
        period = 1
        if output_mode == OutputMode.EveryN:
            period = positive_int("anchorTensor(..., OutputMode.EveryN, output_return_period)",
                                  output_return_period)
        anchors = dict(self.anchored_tensors)
        anchors[short_name] = (long_name, output_mode, period)
        with self._setting():
            self.anchored_tensors = anchors
        return self

    def modelName(self, name: str) -> "Options":
        """Sets the model's name in its profile.

        The name is the subdirectory of the profile directory the model writes into (see
        :meth:`popsim.Options.enableProfiling`); a second model of the same name gets
        ``<name>_1``, and so on.

        Args:
            name: A non-empty name without a path separator. Unset, ``"training"`` or
                ``"inference"``, after the model's kind.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``name`` is not a non-empty string, contains a path separator or is
                ``"."`` or ``".."``, or the options are frozen.
        """
        if not isinstance(name, str) or not name or os.sep in name or name in (".", ".."):
            raise OptionError(f"modelName expects a non-empty name without '{os.sep}' (it "
                              f"names a directory), got {name!r}.")
        with self._setting():
            self.model_name = name
        return self

    def relaxOptimizerAttributesChecks(self, relax: bool = True) -> "Options":
        """Sets how popsim reports optimizer attributes it does not use.

        The check covers parameter-group attributes beyond torch's own for the optimizer and
        the LR schedulers' ``"initial_lr"``, when the model compiles and in ``setOptimizer``.

        Args:
            relax: True (the default of this call): log them at DEBUG level. False (the
                options' default): warn once per attribute.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``relax`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.relax_optimizer_attributes_checks = _bool("relaxOptimizerAttributesChecks", relax)
        return self

    def loadFromFile(self, filepath: str) -> "Options":
        """Sets options from a file with one setter call per line.

        Each line is written as in Python without the ``options.`` prefix:
        ``deviceIterations(4)``, ``Training.gradientAccumulation(2)``,
        ``setExecutionStrategy(poptorch.ShardedExecution())``. Arguments may use the names
        ``popsim``, ``poptorch`` (popsim) and ``torch``, and the builtins ``bool``, ``dict``,
        ``float``, ``int``, ``list``, ``str`` and ``tuple``. Blank lines and lines starting with
        ``#`` are skipped. Lines before a bad line have already taken effect.

        Args:
            filepath: The file's path.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if the file cannot be read, or a line is not a setter call, names no
                setter, has arguments that cannot be evaluated or that the setter refuses; the
                message names the file and line.
        """
        _load_options_file(self, filepath)
        return self

    def useIpuId(self, ipu_id: int) -> "Options":
        """Records the ID of the IPU device to attach to, for PopTorch code.

        The ID (as gc-info lists devices) is exported with the model. Each popsim model
        simulates a system of its own, so there is no device to pick: the ID changes nothing and
        needs no recompilation.

        Args:
            ipu_id: The device ID.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``ipu_id`` is not a non-negative integer, or the options are frozen.
        """
        if not is_integer(ipu_id) or ipu_id < 0:
            raise OptionError(f"useIpuId expects a non-negative device ID, got {ipu_id!r}.")
        with self._setting():
            self.ipu_id = int(ipu_id)
        return self

    def syncPattern(self, sync_pattern: SyncPattern) -> "Options":
        """Records how real IPUs synchronise with the host, for PopTorch code.

        popsim's IPUs synchronise on every exchange (``SyncPattern.Full``) whatever the value.

        Args:
            sync_pattern: A :class:`popsim.SyncPattern` (default ``SyncPattern.Full``).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``sync_pattern`` is not a :class:`popsim.SyncPattern`, or the options
                are frozen.
        """
        if not isinstance(sync_pattern, SyncPattern):
            raise OptionError(f"syncPattern expects a popsim.SyncPattern, got {sync_pattern!r}.")
        with self._setting():
            self.sync_pattern = sync_pattern
        return self

    def broadcastBuffers(self, broadcast: bool = True) -> "Options":
        """Sets whether a replicated training model keeps its buffers the same on every replica.

        Buffers are such as batch norm's running statistics.

        Args:
            broadcast: True (the default): after each call, replica 0's buffers are copied to
                the others. False: each replica keeps its own, updated from its own data, and the
                host model gets replica 0's.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``broadcast`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.broadcast_buffers = _bool("broadcastBuffers", broadcast)
        return self

    def enableSyntheticData(self, enabled: bool) -> "Options":
        """Benchmarks without host I/O, as PopTorch's option of the same name.

        Each call's inputs are replaced on the device by data drawn there (random normal floats,
        zero integers and booleans; the same every call, from :meth:`popsim.Options.randomSeed`),
        nothing is copied back (the outputs return as zeros), and the simulated clock charges no
        host transfers. The call's inputs still give the shapes and dtypes. PopART's
        ``syntheticDataMode`` in ``opts._Popart`` records the setting too.

        Args:
            enabled: True to use synthetic data; False (the default) to transfer the inputs.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        enabled = _bool("enableSyntheticData", enabled)
        self._Popart.set("syntheticDataMode", 2 if enabled else 0)  # PopART's RandomNormal
        with self._setting():
            self.synthetic_data = enabled
        return self

    def enableStableNorm(self, enabled: bool) -> "Options":
        """Records PopART's ``enableStableNorm`` in ``opts._Popart``, as PopTorch does.

        It changes nothing: popsim's norms always compute their statistics in the stable
        two-pass way.

        Args:
            enabled: The value to record.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        self._Popart.set("enableStableNorm", _bool("enableStableNorm", enabled))
        return self

    def updatableNamedBuffers(self, buffers: List[str]) -> "Options":
        """Names the buffers ``copyNamedBuffersToDevice()`` copies from the host to the device.

        That copy leaves out the weights ``copyWeightsToDevice()`` would copy too.

        Args:
            buffers: Buffer names, as in ``model.named_buffers()``.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``buffers`` is not a list of strings, or the options are frozen.
        """
        if not is_string_list(buffers):
            raise OptionError(f"updatableNamedBuffers expects a list of buffer names, got "
                              f"{buffers!r}.")
        with self._setting():
            self.updatable_named_buffers = list(buffers)
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
