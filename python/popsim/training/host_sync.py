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
classes. Until then, `model.destroy()` on the host model is the training
model's destroy(), as PopTorch's wrapped models have it, unless the model has
an attribute of that name of its own.
"""

import weakref
from typing import Any, Callable, Dict, Optional, Protocol, Type

import torch

from popsim.training.class_swap import ClassSwap


class DeviceWeights(Protocol):
    """Whose weights a model copies home before it is used (a weight flow)."""

    def copy_weights_home_if_newer(self) -> None: ...


class _Hook:
    """What a trained module calls back: its training model's weight copy and destroy()."""

    def __init__(self, sync: Callable[[], None], destroy: Callable[[], None]) -> None:
        self.sync = sync
        self.destroy = destroy


def _sync(module: torch.nn.Module) -> None:
    hook: Optional[_Hook] = _SWAP.hook(module)
    if hook is not None:
        hook.sync()


def _synced_methods(synced: Type[Any]) -> Dict[str, Callable[..., Any]]:
    def synced_getattr(self: torch.nn.Module, name: str) -> Any:
        if name in self.__dict__.get("_parameters", ()) or name in self.__dict__.get("_buffers", ()):
            _sync(self)
        try:
            return super(synced, self).__getattr__(name)
        except AttributeError:
            # Reached only when the module has no attribute, submodule or parameter of the
            # name, so the model's own `destroy` always wins.
            hook: Optional[_Hook] = _SWAP.hook(self)
            if name == "destroy" and hook is not None:
                return hook.destroy
            raise

    def synced_method(name: str) -> Callable[..., Any]:
        def method(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            _sync(self)
            return getattr(super(synced, self), name)(*args, **kwargs)

        method.__name__ = name
        return method

    methods: Dict[str, Callable[..., Any]] = {"__getattr__": synced_getattr}
    for name in ("__call__", "parameters", "named_parameters", "buffers", "named_buffers",
                 "state_dict"):
        methods[name] = synced_method(name)
    return methods


# Pickling a module copies the trained weights home first.
_SWAP = ClassSwap("_popsim_sync", _synced_methods, before_pickle=_sync)


def install(model: torch.nn.Module, owner: DeviceWeights, destroy: Callable[[], None]) -> None:
    """Makes `model` copy `owner`'s device weights home before it is used, and gives it
    `destroy` (the training model's) as `model.destroy()`."""
    reference = weakref.ref(owner)

    def sync() -> None:
        weights = reference()
        if weights is not None:
            weights.copy_weights_home_if_newer()

    hook = _Hook(sync, destroy)
    for module in model.modules():
        _SWAP.install(module, hook)


def uninstall(model: torch.nn.Module) -> None:
    for module in model.modules():
        _SWAP.uninstall(module)
