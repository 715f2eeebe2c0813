"""`import popdist.poptorch` for PopTorch code run with popsim."""

from popsim.popdist.poptorch import *  # noqa: F401,F403
from popsim.popdist.poptorch import Options  # noqa: F401
