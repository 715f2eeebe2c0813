"""The optimizer's state while a training model runs.

The device holds the optimizer state that counts (momentum buffers, Adam's
moments and step counts). As PopTorch does, the optimizer's state_dict()
first copies that state home, and its load_state_dict() marks the loaded
state (and hyper-parameters) to be written to the device before the next
call, so checkpoints round-trip as in eager PyTorch.

As _host_sync.py does for models, the optimizer gets a subclass of its own
class (_class_swap.py) whose two methods call back into the training model
(through a weak reference); pickling and deepcopy see the original class,
and uninstall() (on destroy() or setOptimizer() with another optimizer)
restores it.
"""

import weakref

from popsim._class_swap import ClassSwap


def _owner(optimizer):
    reference = _SWAP.hook(optimizer)
    return reference() if reference is not None else None


def _synced_methods(synced):
    def state_dict(self, *args, **kwargs):
        owner = _owner(self)
        if owner is not None:
            owner._sync_optimizer_state_to_host()
        return super(synced, self).state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        result = super(synced, self).load_state_dict(*args, **kwargs)
        owner = _owner(self)
        if owner is not None:
            owner._optimizer_state_loaded()
        return result

    return {"state_dict": state_dict, "load_state_dict": load_state_dict}


_SWAP = ClassSwap("_popsim_optimizer_owner", _synced_methods)


def install(optimizer, executor):
    """Routes optimizer.state_dict() / load_state_dict() through `executor`."""
    _SWAP.install(optimizer, weakref.ref(executor))


def uninstall(optimizer):
    _SWAP.uninstall(optimizer)
