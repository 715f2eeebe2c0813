"""Poplar's engine options, from POPLAR_ENGINE_OPTIONS and
``opts._Popart.setEngineOptions`` (the variable wins, as it does in Poplar).

The variable is the way PopTorch's tutorials ask for a profile:
'{"autoReport.all": "true", "autoReport.directory": "./profile"}'. popsim
writes its own profile (popsim.profiling) to that directory. The stream
callbacks' threads (``streamCallbacks.multiThreadMode`` and
``streamCallbacks.numWorkerThreads``) decide how many replicas take turns on
each host thread of the process, which the simulated clock costs. The other
engine options tune Poplar, which popsim does not run, and are named in one
warning per process."""

import warnings
from typing import Any, Dict, Optional, Set, Tuple

from popsim._values import json_object_in_environment
from popsim.errors import OptionError

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
                          f"{directory!r}.")
    return directory


def _stream_callback_threads(options: Dict[str, Any], source: str) -> Tuple[Optional[str], Any]:
    """The stream callbacks' mode and worker count that `options` (from `source`) set,
    each None when unset."""
    mode = options.get(_MODE)
    if mode is not None and mode not in _MODES:
        raise OptionError(f"{source}: {_MODE} must be one of {', '.join(_MODES)}, got "
                          f"{mode!r}.")
    workers = options.get(_WORKERS)
    if isinstance(workers, str) and workers.strip() != "auto":
        try:
            workers = int(workers.strip())
        except ValueError:
            pass
    if workers is not None and workers != "auto" and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 0):
        raise OptionError(f"{source}: {_WORKERS} must be a non-negative integer or \"auto\", "
                          f"got {options.get(_WORKERS)!r}.")
    return mode, workers


def replicas_per_host_thread(session_options: Any, replicas: int) -> int:
    """How many of a process's `replicas` take turns on each of its host threads.

    Poplar runs stream callbacks, the host's side of every transfer, on the
    process's main thread by default (``streamCallbacks.multiThreadMode``
    singleThread, ``numWorkerThreads`` 0). Otherwise ``numWorkerThreads``
    worker threads run them, with the main thread too in the collaborative
    mode; "auto" gives one per CPU core, which popsim takes to be one per
    replica. `session_options` are ``opts._Popart.setEngineOptions``'s (None
    when unset); POPLAR_ENGINE_OPTIONS overrides them option by option.

    Raises:
        OptionError: when `session_options` is not a dict, or the mode or the
            thread count is not one Poplar accepts (naming where it was set).
    """
    if session_options is None:
        session_options = {}
    if not isinstance(session_options, dict):
        raise OptionError("Options._Popart's engineOptions must be a dict of Poplar engine "
                          f"options, got {session_options!r}. Use "
                          "opts._Popart.setEngineOptions({...}).")
    mode, workers = _stream_callback_threads(session_options, "opts._Popart.setEngineOptions")
    environment = _stream_callback_threads(_parsed(), VARIABLE)
    mode = environment[0] if environment[0] is not None else mode or "singleThread"
    workers = environment[1] if environment[1] is not None else workers or 0
    if mode == "singleThread":
        return replicas
    threads = replicas if workers == "auto" else max(1, workers + (mode == "collaborative"))
    return -(-replicas // threads)  # the replicas per thread, rounded up
