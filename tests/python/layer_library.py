"""A stand-in for a layer library the user imports: source locations should
point at the user's line that calls it when the user excludes this file."""

import torch


def scaled_tanh(x):
    return torch.tanh(x) * 2.0
