"""The "Graph compilation" progress bar (tqdm, on stderr).

Compiling has four phases that Python sees: tracing the model, importing the
trace into popsim's IR, the C++ compile (passes, memory plan and kernels, one
call) and copying the weights to the device. The bar counts those phases and,
while one runs, the elapsed time; it never invents progress inside a phase.

POPSIM_PROGRESS: unset shows the bar for compilations still running after
SHOW_AFTER seconds; "1" always; "0" never (the tests set it).
"""

import os
import threading
from types import TracebackType
from typing import Any, Optional, Type

from popsim.api.errors import OptionError

ENVIRONMENT_VARIABLE = "POPSIM_PROGRESS"
SHOW_AFTER = 1.0
_REFRESH_SECONDS = 0.5

PHASES = {
    "trace": "tracing the model",
    "import": "importing into popsim IR",
    "compile": "passes, memory plan and kernels",
    "weights": "copying weights to the device",
}


def delay() -> Optional[float]:
    """Seconds before the bar shows, or None for no bar."""
    value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if value == "":
        return SHOW_AFTER
    if value in ("0", "1"):
        return None if value == "0" else 0.0
    raise OptionError(f"{ENVIRONMENT_VARIABLE} must be 0 (no compilation progress bar), 1 (always "
                      f"show it) or unset (show it for compilations longer than {SHOW_AFTER:g} s), "
                      f"got {value!r}.", option=ENVIRONMENT_VARIABLE)


class CompileProgress:
    """Context manager: `progress.phase(name)` starts each phase of PHASES in turn."""

    def __init__(self, show: bool = True) -> None:
        self._show = show  # Options.showCompilationProgressBar
        self._bar: Optional[Any] = None  # a tqdm bar, when shown
        self._started = 0
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None

    def __enter__(self) -> "CompileProgress":
        wait = delay()
        if wait is not None and self._show:
            from tqdm import tqdm

            self._bar = tqdm(total=len(PHASES), desc="Graph compilation", unit="phase",
                             delay=wait, leave=True,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| {n}/{total} phases "
                                        "[{elapsed}]{postfix}")
            # The C++ compile releases the GIL: keep the elapsed time moving during it.
            self._ticker = threading.Thread(target=self._tick, args=(wait,), daemon=True)
            self._ticker.start()
        return self

    def _tick(self, wait: float) -> None:
        if self._stop.wait(wait):
            return
        while not self._stop.wait(_REFRESH_SECONDS):
            if self._bar is not None:
                self._bar.refresh()

    def phase(self, name: str) -> None:
        if self._bar is None:
            return
        # The label first, so that the update's refresh shows the phase now running.
        self._bar.set_postfix_str(PHASES[name], refresh=False)
        if self._started:
            self._bar.update(1)
        self._started += 1

    def __exit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        if self._bar is None:
            return
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if kind is None:
            self._bar.set_postfix_str("done", refresh=False)
            self._bar.update(len(PHASES) - self._bar.n)
        self._bar.close()
