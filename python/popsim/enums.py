"""Enumerations of the PopTorch-shaped API."""

import enum


class OutputMode(enum.IntEnum):
    """Which device iterations' outputs a call returns to the host.

    - ``Final``: only the last iteration's outputs.
    - ``EveryN``: every N-th iteration (N is ``output_return_period``).
    - ``All``: every iteration, concatenated along dimension 0 (scalars are
      stacked).
    - ``Sum``: the elementwise sum over all iterations.
    - ``Default``: ``All`` for inference models, ``Final`` for training models.
    """

    Final = 0
    EveryN = 1
    All = 2
    Sum = 3
    Default = 4


class ReductionType(enum.IntEnum):
    """How the gradients of a step's micro-batches are combined."""

    Sum = 0
    Mean = 1
    NoReduction = 2
