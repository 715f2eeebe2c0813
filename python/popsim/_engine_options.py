"""POPLAR_ENGINE_OPTIONS, the way PopTorch's tutorials ask for a profile:
'{"autoReport.all": "true", "autoReport.directory": "./profile"}'. popsim
writes its own profile (popsim.profiling) to that directory; the other
engine options tune Poplar, which popsim does not run, and are named in one
warning per process."""

import warnings
from typing import Any, Dict, Optional, Set

from popsim._values import json_object_in_environment
from popsim.errors import OptionError

VARIABLE = "POPLAR_ENGINE_OPTIONS"
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
    ignored = sorted(key for key in options if not key.startswith("autoReport."))
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
