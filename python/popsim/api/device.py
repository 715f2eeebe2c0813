"""Where a model runs, for code that asks as PopTorch code does:
``isRunningOnIpu()`` inside a forward, ``ipuHardwareIsAvailable()`` before
choosing a device."""

import contextlib
import threading
from typing import Iterator

from popsim.api.errors import OptionError

_STATE = threading.local()


def isRunningOnIpu() -> bool:
    """Tells whether the calling thread is tracing a model for the simulated IPUs.

    As PopTorch's ``isRunningOnIpu``: call it inside a model's ``forward`` to choose an IPU
    path. While popsim runs the forward to compile it, the branch taken is the one the IPUs
    run.

    Returns:
        True while the calling thread runs a model's forward for popsim to compile it, False
        when the model runs eagerly on the CPU.
    """
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
    """Tells whether ``num_ipus`` IPUs are there to run on, as PopTorch's function of that name.

    popsim's IPUs are simulated, so any positive number is available
    (``Options.Simulator.numIpus`` sizes the machine), and code that picks the IPU path when
    IPUs are available picks it on popsim.

    Args:
        num_ipus: How many IPUs the caller needs; a positive ``int``.

    Returns:
        Always True.

    Raises:
        OptionError: when ``num_ipus`` is not a positive ``int`` (a ``bool`` is refused).
    """
    if isinstance(num_ipus, bool) or not isinstance(num_ipus, int) or num_ipus < 1:
        raise OptionError(f"ipuHardwareIsAvailable expects a positive number of IPUs, "
                          f"got {num_ipus!r}.", option="ipuHardwareIsAvailable")
    return True


def ipuHardwareVersion() -> int:
    """Gives the generation of the IPU hardware, as PopTorch's ``ipuHardwareVersion``.

    popsim simulates a Mk2 (GC200) unless a model's ``Options.Simulator.ipuVersion`` says
    otherwise; this function does not look at any model's options.

    Returns:
        Always 2, the value :meth:`popsim.Options.useOfflineIpuTarget` takes for a Mk2.
    """
    return 2
