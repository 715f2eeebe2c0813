"""Finding a model's parameters and buffers by the paths the IR names them with."""

from typing import Dict, Sequence

import torch

from popsim.api.errors import InputError


def named_tensors(model: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """Every parameter and buffer of `model` under every path it is reachable by
    (shared modules and tied weights appear under each of their names)."""
    named: Dict[str, torch.Tensor] = {}
    for prefix, module in model.named_modules(remove_duplicate=False):
        for group in (module._parameters, module._buffers):
            for name, tensor in group.items():
                if tensor is not None:
                    named[f"{prefix}.{name}" if prefix else name] = tensor
    return named


def host_weights(model: torch.nn.Module, names: Sequence[str]) -> Dict[str, torch.Tensor]:
    """The host tensors for the weights a compiled program uses."""
    available = named_tensors(model)
    missing = [name for name in names if name not in available]
    if missing:
        raise InputError(f"The model has no parameters or buffers named {missing}; "
                         "did the model change after compilation?")
    return {name: available[name] for name in names}
