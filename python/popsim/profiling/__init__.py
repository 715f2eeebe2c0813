"""Profiles of popsim models: read them back, summarise them, draw them.

Enable profiling with ``opts.enableProfiling(DIR)`` (or ``POPSIM_PROFILE_DIR=DIR``).
Each model then writes into ``DIR/training`` or ``DIR/inference`` (then
``training_1``, ...):

- ``trace.json``: the last call in Chrome Trace Event JSON (Perfetto, chrome://tracing);
- ``memory.json``: memory per IPU by category, written when the model compiles;
- ``report.html``: a self-contained page drawing both.

In Python::

    from popsim import profiling
    profile = profiling.load("DIR")        # or "DIR/training"
    print(profile.summary())
    profiling.plot_timeline(profile)       # matplotlib, for notebooks
    profiling.plot_memory(profile)

From a shell: ``python -m popsim.profiling DIR``.
"""

from popsim.profiling._plots import plot_memory, plot_timeline
from popsim.profiling._profile import Profile, ProfileNotFoundError, load, load_all

__all__ = ["load", "load_all", "plot_memory", "plot_timeline", "Profile", "ProfileNotFoundError"]
