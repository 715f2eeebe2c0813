"""`import popdist` for PopTorch code run with popsim: popsim.popdist's API
(this directory's parent is put on PYTHONPATH by `python -m popsim.popdist`)."""

from popsim.popdist import *  # noqa: F401,F403
from popsim.popdist import poptorch  # noqa: F401
