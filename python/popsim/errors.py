"""``popsim.errors`` is ``popsim.api.errors`` (kept for code that imports it, as PopTorch code does)."""

import sys

from popsim.api import errors as _module

sys.modules[__name__] = _module
