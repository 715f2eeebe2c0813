"""``popsim.optim`` is ``popsim.training.optim`` (kept for code that imports it, as PopTorch code does)."""

import sys

from popsim.training import optim as _module

sys.modules[__name__] = _module
