"""popsim's Python log (logger "popsim"), shown as the C++ core's is:
POPSIM_LOG_LEVEL=info (or debug, trace) prints its messages on stderr as
"[popsim info] ..."; otherwise they reach only handlers the application
adds. setLogLevel changes both logs at run time, with PopTorch's level
names."""

import logging
import os
import sys
from typing import Optional, Union

from popsim import _C
from popsim.api.errors import OptionError

LOGGER = logging.getLogger("popsim")

_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO}


class _Format(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"[popsim {record.levelname.lower()}] {record.getMessage()}"


class _Stderr(logging.Handler):
    """Writes to the sys.stderr of the moment (which tools such as pytest
    replace), not the one of popsim's import."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must not raise
            self.handleError(record)


_HANDLER = _Stderr()
_HANDLER.setFormatter(_Format())


def _show(level: int) -> None:
    if _HANDLER not in LOGGER.handlers:
        LOGGER.addHandler(_HANDLER)
    LOGGER.setLevel(level)


def _show_as_configured() -> None:
    level = _LEVELS.get(os.environ.get("POPSIM_LOG_LEVEL", "").strip())
    if level is not None:
        _show(level)


# PopTorch's names (poptorch.setLogLevel), with the core's level and Python's.
_POPTORCH_LEVELS = {
    "TRACE": ("trace", logging.DEBUG),
    "DEBUG": ("debug", logging.DEBUG),
    "INFO": ("info", logging.INFO),
    "WARN": ("warn", logging.WARNING),
    "ERR": ("error", logging.ERROR),
    "OFF": ("off", logging.CRITICAL + 1),
}


# PopTorch's integer levels are the names in order, 0 (TRACE) to 4 (ERR); OFF has none.
_INTEGER_LEVELS = tuple(name for name in _POPTORCH_LEVELS if name != "OFF")


def setLogLevel(level: Union[str, int]) -> None:
    """Sets how much popsim prints on stderr, as PopTorch's ``setLogLevel``.

    Applies to the C++ core's messages and to the ``popsim`` Python logger
    (``popsim.logger``), whose messages then go to stderr as ``[popsim <level>] ...``. At
    start-up, the ``POPSIM_LOG_LEVEL`` environment variable (``info``, ``debug`` or ``trace``)
    sets the level the same way.

    Args:
        level: ``"TRACE"``, ``"DEBUG"``, ``"INFO"``, ``"WARN"`` (the default), ``"ERR"`` or
            ``"OFF"``, in any letter case; or, as PopTorch takes them, an integer from 0
            (TRACE) to 4 (ERR).

    Raises:
        OptionError: when ``level`` is none of those (a ``ValueError``, as PopTorch's).
    """
    if isinstance(level, int) and not isinstance(level, bool):
        if not 0 <= level < len(_INTEGER_LEVELS):
            raise OptionError(
                f"Invalid log level integer {level}: setLogLevel takes 0 (TRACE) to 4 (ERR), or "
                f"the name of a level ({', '.join(_POPTORCH_LEVELS)}).", option="setLogLevel")
        key: Optional[str] = _INTEGER_LEVELS[level]
    else:
        key = str(level).upper() if isinstance(level, str) else None
    if key not in _POPTORCH_LEVELS:
        names = sorted(_POPTORCH_LEVELS)
        raise OptionError(f"Unknown log level: {level}. Valid values are "
                          f"{', '.join(names[:-1])} and {names[-1]}.", option="setLogLevel")
    core, python = _POPTORCH_LEVELS[key]
    _C.set_log_level(core)
    _show(python)


_show_as_configured()
