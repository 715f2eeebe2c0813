"""Where a model runs, for code that asks as PopTorch code does:
``isRunningOnIpu()`` inside a forward, ``ipuHardwareIsAvailable()`` before
choosing a device."""

import contextlib
import threading
from typing import Iterator

from popsim.errors import OptionError

_STATE = threading.local()


def isRunningOnIpu() -> bool:
    """True while the calling thread runs a model's forward for popsim to
    compile it for the simulated IPUs (the branch taken then is the one the
    IPUs run), False when the model runs eagerly on the CPU, as PopTorch's
    ``isRunningOnIpu``."""
    return getattr(_STATE, "tracing", False)


@contextlib.contextmanager
def running_on_ipu() -> Iterator[None]:
    """Marks the calling thread as tracing for the IPUs (popsim's tracer)."""
    previous = isRunningOnIpu()
    _STATE.tracing = True
    try:
        yield
    finally:
        _STATE.tracing = previous


def ipuHardwareIsAvailable(num_ipus: int = 1) -> bool:
    """Whether ``num_ipus`` IPUs are there to run on, as PopTorch's
    ``ipuHardwareIsAvailable``: popsim's IPUs are simulated, so any positive
    number is (``Options.Simulator.numIpus`` sizes the machine), and code
    that picks the IPU path when IPUs are available picks it on popsim."""
    if isinstance(num_ipus, bool) or not isinstance(num_ipus, int) or num_ipus < 1:
        raise OptionError(f"ipuHardwareIsAvailable expects a positive number of IPUs, "
                          f"got {num_ipus!r}.")
    return True


def ipuHardwareVersion() -> int:
    """The IPU generation code hardware reports, as PopTorch's
    ``ipuHardwareVersion``: popsim simulates a Mk2 (GC200) unless a model's
    ``Options.Simulator.ipuVersion`` says otherwise, so it returns 2, the
    value ``Options.useOfflineIpuTarget`` takes for a Mk2."""
    return 2
