"""Lazy copies of trained weights back into the user's model.

While a training model runs, the device holds the weights that count. The
host model catches up only when it is used: reading a parameter or buffer,
calling parameters(), named_parameters(), buffers(), state_dict(), or
calling the host model triggers one copy from the device (if there were
steps since the last one).

This works by giving the model and each of its submodules a subclass of its
own class that checks first (_class_swap.py). Pickling and deepcopy see the
original class.
destroy() (or the end of the training wrapper) restores the original
classes.
"""

import weakref
from typing import Any, Callable, Dict, Optional, Protocol, Type

import torch

from popsim.training.class_swap import ClassSwap


class DeviceWeights(Protocol):
    """Whose weights a model copies home before it is used (a weight flow)."""

    def copy_weights_home_if_newer(self) -> None: ...


def _sync(module: torch.nn.Module) -> None:
    sync: Optional[Callable[[], None]] = _SWAP.hook(module)
    if sync is not None:
        sync()


def _synced_methods(synced: Type[Any]) -> Dict[str, Callable[..., Any]]:
    def __getattr__(self: torch.nn.Module, name: str) -> Any:
        if name in self.__dict__.get("_parameters", ()) or name in self.__dict__.get("_buffers", ()):
            _sync(self)
        return super(synced, self).__getattr__(name)

    def synced_method(name: str) -> Callable[..., Any]:
        def method(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            _sync(self)
            return getattr(super(synced, self), name)(*args, **kwargs)

        method.__name__ = name
        return method

    methods: Dict[str, Callable[..., Any]] = {"__getattr__": __getattr__}
    for name in ("__call__", "parameters", "named_parameters", "buffers", "named_buffers",
                 "state_dict"):
        methods[name] = synced_method(name)
    return methods


# Pickling a module copies the trained weights home first.
_SWAP = ClassSwap("_popsim_sync", _synced_methods, before_pickle=_sync)


def install(model: torch.nn.Module, owner: DeviceWeights) -> None:
    """Makes `model` copy `owner`'s device weights home before it is used."""
    reference = weakref.ref(owner)

    def sync() -> None:
        weights = reference()
        if weights is not None:
            weights.copy_weights_home_if_newer()

    for module in model.modules():
        _SWAP.install(module, sync)


def uninstall(model: torch.nn.Module) -> None:
    for module in model.modules():
        _SWAP.uninstall(module)
