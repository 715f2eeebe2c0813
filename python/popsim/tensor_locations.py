"""``popsim.tensor_locations`` is ``popsim.api.tensor_locations`` (kept for code that imports it, as PopTorch code does)."""

import sys

from popsim.api import tensor_locations as _module

sys.modules[__name__] = _module
