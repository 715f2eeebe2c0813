"""popsim's TorchScript marker ops: one torch.library namespace, "popsim"
(PyTorch 1.13 allows a single DEF library per namespace)."""

import torch

LIBRARY = torch.library.Library("popsim", "DEF")
