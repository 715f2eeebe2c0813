"""``popsim.strategies`` is ``popsim.api.strategies`` (kept for code that imports it, as PopTorch code does)."""

import sys

from popsim.api import strategies as _module

sys.modules[__name__] = _module
