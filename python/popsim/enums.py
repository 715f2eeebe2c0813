"""``popsim.enums`` is ``popsim.api.enums`` (kept for code that imports it, as PopTorch code does)."""

import sys

from popsim.api import enums as _module

sys.modules[__name__] = _module
