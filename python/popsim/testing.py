"""Comparing a wrapped model's results with eager PyTorch's (PopTorch's ``poptorch.testing``).

A model's outputs may be a tensor or nested tuples and lists of them; a test
of a port wants one call that says whether the whole structure and every
tensor in it match.
"""

from typing import Any

import torch

from popsim.api.errors import ArgumentError

__all__ = ["allclose"]


def allclose(expected: Any, actual: Any, rtol: float = 1e-05, atol: float = 1e-08) -> bool:
    """Whether ``actual`` has the structure of ``expected`` and each tensor is close to its
    counterpart (``torch.allclose`` with ``rtol`` and ``atol``).

    Tuples match only tuples and lists only lists, of the same length; a tensor
    matches a tensor of a broadcastable shape, as ``torch.allclose`` compares them.

    Args:
        expected: The reference: a tensor, or tuples and lists of them (eager PyTorch's result).
        actual: What to compare with it (the wrapped model's result).
        rtol: The relative tolerance of each comparison.
        atol: The absolute tolerance of each comparison.

    Returns:
        True when the structures are the same and every pair of tensors is close.

    Raises:
        popsim.ArgumentError: when ``expected`` holds something other than tensors,
            tuples and lists, which has no closeness to compare.

    >>> import popsim.testing
    >>> popsim.testing.allclose((torch.ones(2), [torch.zeros(1)]),
    ...                         (torch.ones(2) + 1e-9, [torch.zeros(1)]))
    True
    >>> popsim.testing.allclose((torch.ones(2),), [torch.ones(2)])
    False
    """
    if isinstance(expected, torch.Tensor):
        return isinstance(actual, torch.Tensor) and torch.allclose(actual, expected, rtol=rtol,
                                                                   atol=atol)
    if not isinstance(expected, (tuple, list)):
        raise ArgumentError(f"popsim.testing.allclose compares tensors and tuples and lists of "
                            f"them; expected holds {type(expected).__name__} {expected!r}.")
    kind = tuple if isinstance(expected, tuple) else list
    if not isinstance(actual, kind) or len(actual) != len(expected):
        return False
    return all(allclose(e, a, rtol, atol) for e, a in zip(expected, actual))
