"""The pipeline block a reference model's part runs in, when the model is split over IPUs."""

import contextlib
from typing import ContextManager, cast

from popsim.frontend.blocks import Block


def block_if_split(split: bool, name: str, ipu: int) -> ContextManager[object]:
    """popsim.Block(name, ipu_id=ipu) when the model is split over IPUs; else nothing, so that
    an unsplit model runs on one IPU."""
    if not split:
        return contextlib.nullcontext()
    return cast(ContextManager[object], Block(name, ipu_id=ipu))
