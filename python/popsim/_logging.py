"""popsim's Python log (logger "popsim"), shown as the C++ core's is:
POPSIM_LOG_LEVEL=info (or debug, trace) prints its messages on stderr as
"[popsim info] ..."; otherwise they reach only handlers the application
adds."""

import logging
import os

LOGGER = logging.getLogger("popsim")

_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO}


class _Format(logging.Formatter):
    def format(self, record):
        return f"[popsim {record.levelname.lower()}] {record.getMessage()}"


def _show_as_configured():
    level = _LEVELS.get(os.environ.get("POPSIM_LOG_LEVEL", "").strip())
    if level is None:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(_Format())
    LOGGER.addHandler(handler)
    LOGGER.setLevel(level)


_show_as_configured()
