"""Poplar's engine options, from POPLAR_ENGINE_OPTIONS and
``opts._Popart.setEngineOptions`` (the variable wins, as it does in Poplar).

The variable is the way PopTorch's tutorials ask for a profile:
'{"autoReport.all": "true", "autoReport.directory": "./profile"}'. popsim
writes its own profile (popsim.profiling) to that directory. The stream
callbacks' threads (``streamCallbacks.multiThreadMode`` and
``streamCallbacks.numWorkerThreads``) decide how many replicas take turns on
each host thread of the process, which the simulated clock costs (the host
layer shares the replicas out, csrc/host/host_threads.h). The other
engine options tune Poplar, which popsim does not run, and are named in one
warning per process."""

import warnings
from typing import Any, Dict, Optional, Set

from popsim import _C
from popsim.api.values import json_object_in_environment
from popsim.api.errors import OptionError

VARIABLE = "POPLAR_ENGINE_OPTIONS"
_MODE = "streamCallbacks.multiThreadMode"
_WORKERS = "streamCallbacks.numWorkerThreads"
_MODES = ("singleThread", "collaborative", "dedicated")
_warned: Set[str] = set()


def _true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _parsed() -> Dict[str, Any]:
    return json_object_in_environment(
        VARIABLE, "engine options",
        '{"autoReport.all": "true", "autoReport.directory": "./profile"}') or {}


def profile_directory() -> Optional[str]:
    """The directory POPLAR_ENGINE_OPTIONS asks reports for (autoReport.all,
    or any autoReport.output* option, true; autoReport.directory, or the
    current directory), or None."""
    options = _parsed()
    ignored = sorted(key for key in options
                     if not key.startswith("autoReport.") and key not in (_MODE, _WORKERS))
    fresh = [key for key in ignored if key not in _warned]
    if fresh:
        _warned.update(fresh)
        warnings.warn(f"{VARIABLE}: popsim does not model the Poplar engine options "
                      f"{', '.join(fresh)}; they are ignored (autoReport's profile is written).",
                      stacklevel=4)
    reports = _true(options.get("autoReport.all")) or any(
        _true(value) for key, value in options.items() if key.startswith("autoReport.output"))
    if not reports:
        return None
    directory = options.get("autoReport.directory", ".")
    if not isinstance(directory, str) or not directory.strip():
        raise OptionError(f"{VARIABLE}: autoReport.directory must be a directory path, got "
                          f"{directory!r}.", option=VARIABLE)
    return directory


_MODE_VALUES = {"singleThread": _C.StreamCallbackMode.SingleThread,
                "collaborative": _C.StreamCallbackMode.Collaborative,
                "dedicated": _C.StreamCallbackMode.Dedicated}


def _stream_callback_threads(options: Dict[str, Any], source: str) -> _C.StreamCallbackThreads:
    """The stream callbacks' mode and worker count that `options` (from `source`) set,
    each unset when `options` does not set it; OptionError names `source` for a value
    Poplar does not accept."""
    threads = _C.StreamCallbackThreads()
    mode = options.get(_MODE)
    if mode is not None:
        if mode not in _MODES:
            raise OptionError(f"{source}: {_MODE} must be one of {', '.join(_MODES)}, got "
                              f"{mode!r}.", option=source)
        threads.mode = _MODE_VALUES[mode]
    workers = options.get(_WORKERS)
    if isinstance(workers, str) and workers.strip() != "auto":
        try:
            workers = int(workers.strip())
        except ValueError:
            pass
    if workers == "auto":
        threads.auto_workers = True
    elif workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
            raise OptionError(f"{source}: {_WORKERS} must be a non-negative integer or \"auto\", "
                              f"got {options.get(_WORKERS)!r}.", option=source)
        threads.workers = workers
    return threads


def session_threads(engine_options: Any) -> _C.StreamCallbackThreads:
    """The stream callbacks' threads of ``opts._Popart.setEngineOptions``'s options.

    Raises:
        OptionError: when `engine_options` is not a dict, or the mode or the thread count is
            not one Poplar accepts.
    """
    if not isinstance(engine_options, dict):
        raise OptionError("Options._Popart's engineOptions must be a dict of Poplar engine "
                          f"options, got {engine_options!r}. Use "
                          "opts._Popart.setEngineOptions({...}).",
                          option="_Popart.setEngineOptions")
    return _stream_callback_threads(engine_options, "opts._Popart.setEngineOptions")


def environment_threads() -> _C.StreamCallbackThreads:
    """The stream callbacks' threads POPLAR_ENGINE_OPTIONS sets, which override the
    session's option by option (host/host_threads.h shares the replicas out over them).

    Raises:
        OptionError: when the variable is not a JSON object, or its mode or thread count is
            not one Poplar accepts.
    """
    return _stream_callback_threads(_parsed(), VARIABLE)
