import os
import sys

import pytest
import torch

# The tutorials' models are imported by the tests.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tutorials"))


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    torch.manual_seed(0)


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, msg=None):
    """popsim results against eager PyTorch: fp32 tolerance of 1e-5 relative. `msg` is
    torch.testing.assert_close's (a string, or a function of its message)."""
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, msg=msg)


ALIGNMENT = 64  # popsim's memory plan places every tensor on a 64-byte boundary


def aligned(nbytes):
    """The bytes a tensor of `nbytes` takes in popsim's memory plan."""
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


# No compilation progress bars in test output, and no profiles unless a test asks.
os.environ.setdefault("POPSIM_PROGRESS", "0")
os.environ.pop("POPSIM_PROFILE_DIR", None)
