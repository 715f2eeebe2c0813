"""Lazy copies of trained weights back into the user's model.

While a training model runs, the device holds the weights that count. The
host model catches up only when it is used: reading a parameter or buffer,
calling parameters(), named_parameters(), buffers(), state_dict(),
load_state_dict(), or calling the host model triggers one copy from the
device (if there were steps since the last one).

This works by giving the model and each of its submodules a subclass of its
own class that checks first (_class_swap.py). Pickling and deepcopy see the
original class. A module that several training models train (they share
it) checks with each of them and those they share tensors with; at most one
has weights newer than the host's (registry.py).

destroy() (or the end of the training wrapper) restores the original
classes of the modules no other training model trains. Until then,
`model.destroy()` on the host model is the training model's destroy(), and
`model.copyWeightsToHostIfNeeded()` its copy home, as PopTorch's wrapped
models have them, unless the model has an attribute of that name of its own.
"""

import weakref
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple, Type

import torch

from popsim.training.class_swap import ClassSwap


class DeviceWeights(Protocol):
    """Whose weights a model copies home before it is used (a weight flow)."""

    def host_used(self) -> bool: ...


class _Hook:
    """What a trained module calls back: the weight copies of the training models that
    train it, and destroy() of the one that wraps it."""

    def __init__(self) -> None:
        # (the weight flow, its training model's destroy(), whether it wraps this module)
        self.owners: List[Tuple["weakref.ref[DeviceWeights]", Callable[[], None], bool]] = []

    def sync(self) -> bool:
        """Copies newer device weights home; returns whether any were."""
        copied = False
        for reference, _, _ in self.owners:
            weights = reference()
            if weights is not None:
                copied = weights.host_used() or copied
        return copied

    def destroy(self) -> Optional[Callable[[], None]]:
        """The destroy() `module.destroy` means: the training model that wraps the module,
        or the only one that trains it."""
        wrapping = [destroy for _, destroy, wraps in self.owners if wraps]
        if wrapping:
            return wrapping[0]
        return self.owners[0][1] if len(self.owners) == 1 else None


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
            destroy = hook.destroy() if hook is not None and name == "destroy" else None
            if destroy is not None:
                return destroy
            if hook is not None and name == "copyWeightsToHostIfNeeded":  # PopTorch's too
                return hook.sync
            raise

    def synced_method(name: str) -> Callable[..., Any]:
        def method(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            _sync(self)
            return getattr(super(synced, self), name)(*args, **kwargs)

        method.__name__ = name
        return method

    methods: Dict[str, Callable[..., Any]] = {"__getattr__": synced_getattr}
    # (load_state_dict too: what it loads must not be overwritten by a later copy home.)
    for name in ("__call__", "parameters", "named_parameters", "buffers", "named_buffers",
                 "state_dict", "load_state_dict"):
        methods[name] = synced_method(name)
    return methods


# Pickling a module copies the trained weights home first.
_SWAP = ClassSwap("_popsim_sync", _synced_methods, before_pickle=_sync)


def install(model: torch.nn.Module, owner: DeviceWeights, destroy: Callable[[], None]) -> None:
    """Makes `model` copy `owner`'s device weights home before it is used, and gives it
    `destroy` (the training model's) as `model.destroy()`."""
    for module in model.modules():
        hook: Optional[_Hook] = _SWAP.hook(module)
        if hook is None:
            hook = _Hook()
            _SWAP.install(module, hook)
        if not any(reference() is owner for reference, _, _ in hook.owners):
            hook.owners.append((weakref.ref(owner), destroy, module is model))


def uninstall(model: torch.nn.Module, owner: DeviceWeights) -> None:
    """Forgets `owner` in `model`'s modules; those no other owner trains get their classes
    back."""
    for module in model.modules():
        hook: Optional[_Hook] = _SWAP.hook(module)
        if hook is None:
            continue
        hook.owners = [entry for entry in hook.owners
                       if entry[0]() is not owner and entry[0]() is not None]
        if not hook.owners:
            _SWAP.uninstall(module)
