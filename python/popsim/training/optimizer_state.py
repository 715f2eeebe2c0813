"""The optimizer's state while a training model runs.

The device holds the optimizer state that counts (momentum buffers, Adam's
moments and step counts). As PopTorch does, the optimizer's state_dict()
first copies that state home, and its load_state_dict() marks the loaded
state (and hyper-parameters) to be written to the device before the next
call, so checkpoints round-trip as in eager PyTorch. As in PopTorch, the
state dict also holds "ipu_state" (the device's optimizer state tensors) and
"ipu_param" (each parameter's hyper-parameters as PopART's compound scalars),
by PopTorch's names (poptorch_state_names.py), None before the model
compiles; a loaded "ipu_state" is written to the device after the torch state
it mirrors, and a loaded "ipu_param" changes what it gives otherwise than the
param_groups.

As _host_sync.py does for models, the optimizer gets a subclass of its own
class (_class_swap.py) whose two methods call back into the training model
(through a weak reference); pickling and deepcopy see the original class,
and uninstall() (on destroy() or setOptimizer() with another optimizer)
restores it.
"""

import weakref
from typing import Any, Callable, Dict, Mapping, Optional, Protocol, Tuple, Type

import torch

from popsim.training.class_swap import ClassSwap


class DeviceOptimizerState(Protocol):
    """Where an optimizer's state counts while its model trains (a weight flow)."""

    def optimizer_state_to_host(self) -> None: ...

    def device_optimizer_state(
            self) -> Optional[Tuple[Dict[str, torch.Tensor], Dict[str, torch.Tensor]]]: ...

    def optimizer_state_loaded(self, ipu_state: Optional[Mapping[str, torch.Tensor]] = None,
                               ipu_param: Optional[Mapping[str, torch.Tensor]] = None
                               ) -> None: ...


def _owner(optimizer: torch.optim.Optimizer) -> Optional[DeviceOptimizerState]:
    reference: Optional["weakref.ReferenceType[DeviceOptimizerState]"] = _SWAP.hook(optimizer)
    return reference() if reference is not None else None


def _synced_methods(synced: Type[Any]) -> Dict[str, Callable[..., Any]]:
    def state_dict(self: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        owner = _owner(self)
        if owner is not None:
            owner.optimizer_state_to_host()
        state = super(synced, self).state_dict(*args, **kwargs)
        device = owner.device_optimizer_state() if owner is not None else None
        state["ipu_state"], state["ipu_param"] = device if device is not None else (None, None)
        return state

    def load_state_dict(self: torch.optim.Optimizer, state_dict: Dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        ipu_state = state_dict.pop("ipu_state", None)
        ipu_param = state_dict.pop("ipu_param", None)
        result = super(synced, self).load_state_dict(state_dict)
        owner = _owner(self)
        if owner is not None:
            owner.optimizer_state_loaded(ipu_state, ipu_param)
        return result

    return {"state_dict": state_dict, "load_state_dict": load_state_dict}


_SWAP = ClassSwap("_popsim_optimizer_owner", _synced_methods)


def install(optimizer: torch.optim.Optimizer, owner: DeviceOptimizerState) -> None:
    """Routes optimizer.state_dict() / load_state_dict() through `owner`."""
    _SWAP.install(optimizer, weakref.ref(owner))


def uninstall(optimizer: torch.optim.Optimizer) -> None:
    _SWAP.uninstall(optimizer)
