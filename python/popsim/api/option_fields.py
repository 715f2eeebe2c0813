"""The machinery of popsim.Options' groups: typed fields that setters write,
through the core's session options (_CoreField), freezing, the errors for
unknown and read-only names, how a field prints, which setter sets it, the
codecs between Python's option values and the core's, and the checks the
setters share."""

import contextlib
import copy
import difflib
import inspect
import os
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Tuple, Union

import torch

from popsim import _C
from popsim.api.enums import (CommGroupType, ConnectionType, HalfFloatCastingBehavior,
                              MeanReductionStrategy, OutputMode, ReductionType, SyncPattern)
from popsim.api.errors import OptionError
from popsim.api.strategies import _ExecutionStrategy
from popsim.api.tensor_locations import TensorLocationSettings
from popsim.api.values import is_integer


_FROZEN_MESSAGE = (
    "Can't modify frozen Options: they were passed to a model, which compiles with them as "
    "they were. Call opts.clone() to get a copy you can modify."
)


def positive_int(what: str, value: Any, owner: Optional[str] = None) -> int:
    """`value` as an int, if it is a positive integer. The error names `what`: a setter
    (its option is the setter without the argument, "outputMode" for
    "outputMode(OutputMode.EveryN, output_return_period)"), or with `owner` (such as
    'popsim.DataLoader'), one of its arguments."""
    if not is_integer(value) or value < 1:
        got = f"got {value!r} ({type(value).__name__})."
        if owner is not None:
            raise OptionError(f"{owner}: {what} must be a positive integer, {got}",
                              option=f"{owner}.{what}")
        raise OptionError(f"{what} expects a positive integer, {got}", option=what.split("(")[0])
    return int(value)


def _parse_memory(value: Any) -> int:
    """Bytes from an int or a string such as '64MiB', '512 KB' or '1.5GiB'."""
    if is_integer(value):
        if value < 1:
            raise OptionError(f"Simulator.memoryPerIpu expects a positive size, got {value}.",
                              option="Simulator.memoryPerIpu")
        return int(value)
    if isinstance(value, str):
        size = _C.parse_memory_size(value)  # the core's grammar, which the C++ API shares
        if size is not None:
            return size
    raise OptionError(
        f"Simulator.memoryPerIpu expects a size in bytes (an int) or a string such as '64MiB' "
        f"or '512KB', got {value!r}.",
        option="Simulator.memoryPerIpu")


def profile_directory(source: str, directory: Union[str, os.PathLike]) -> str:
    """`directory` as a path string, if it can be a profile directory; `source` names
    the option or environment variable in the error."""
    if isinstance(directory, os.PathLike):
        directory = os.fspath(directory)
    if not isinstance(directory, str) or not directory.strip():
        raise OptionError(
            f"{source} expects a directory path (a non-empty str or os.PathLike), got "
            f"{directory!r} ({type(directory).__name__}).", option=source)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise OptionError(
            f"{source} expects a directory, but '{directory}' is a file. Pass a new or "
            "existing directory; popsim creates it when a model compiles.", option=source)
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
        """Creates the group over the session's options; ``popsim.Options`` creates it.

        Args:
            core: The session's options in the core, which the group's setters write.
        """
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
            raise OptionError(_FROZEN_MESSAGE, option="Options")  # every setter of frozen options
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
    "convolution_dithering": "setConvolutionDithering",
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


def source_location_excludes(configured: Optional[List[str]]) -> List[str]:
    """The strings whose frames an op's source line skips: sourceLocationExcludes'
    (`configured`), or unset, torch's and popsim's directories."""
    return list(DEFAULT_SOURCE_LOCATION_EXCLUDES if configured is None else configured)


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


def _prefetch_depth(owner: str, depth: int) -> int:
    if not is_integer(depth) or depth < 0:
        raise OptionError(f"{owner} expects a non-negative integer (the buffering depth; 2 or more "
                          f"prepares inputs ahead), got {depth!r}.", option=owner)
    return int(depth)


def _bool(owner: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise OptionError(f"{owner} expects True or False, got {value!r}.", option=owner)
    return value
