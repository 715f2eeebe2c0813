"""``popsim.options`` is ``popsim.api.options`` (kept for code that imports it, as PopTorch code does)."""

import sys

from popsim.api import options as _module

sys.modules[__name__] = _module
