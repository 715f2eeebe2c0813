"""Lets `import popdist` find popsim's PopDist API (popsim/_shims/popdist) in an
environment where popsim is installed and no real PopDist is.

popsim-popdist.pth runs this at interpreter start-up. The finder goes at the end
of sys.meta_path, after Python's own path finder, so a real popdist anywhere on
sys.path (or PYTHONPATH) is found first and never shadowed. It imports nothing
heavy: popsim, and torch with it, load only when a program imports popdist.
"""

from __future__ import annotations  # no typing import at start-up (it costs ~15 ms)

import importlib.machinery
import os
import sys


class PopdistFallbackFinder:
    """Finds the top-level `popdist` in popsim's shims when nothing else did;
    `popdist.poptorch` then comes from the shim package's own path."""

    @staticmethod
    def find_spec(name: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name != "popdist" or path is not None:
            return None
        popsim = importlib.machinery.PathFinder.find_spec("popsim")
        if popsim is None or not popsim.submodule_search_locations:
            return None
        shims = [os.path.join(location, "_shims")
                 for location in popsim.submodule_search_locations]
        return importlib.machinery.PathFinder.find_spec("popdist", shims)


def install() -> None:
    """Appends the finder once (start-up may run this module's .pth more than once)."""
    if not any(isinstance(finder, PopdistFallbackFinder) for finder in sys.meta_path):
        sys.meta_path.append(PopdistFallbackFinder())


install()
