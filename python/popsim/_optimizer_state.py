"""The optimizer's state while a training model runs.

The device holds the optimizer state that counts (momentum buffers, Adam's
moments and step counts). As PopTorch does, the optimizer's state_dict()
first copies that state home, and its load_state_dict() marks the loaded
state (and hyper-parameters) to be written to the device before the next
call, so checkpoints round-trip as in eager PyTorch.

As _host_sync.py does for models, the optimizer gets a subclass of its own
class whose two methods call back into the training model (through a weak
reference); pickling and deepcopy see the original class, and uninstall()
(on destroy() or setOptimizer() with another optimizer) restores it.
"""

import copyreg
import weakref
from typing import Dict

_OWNER = "_popsim_optimizer_owner"
_ORIGINALS: Dict[type, type] = {}  # synced class -> original class
_SYNCED: Dict[type, type] = {}  # original class -> synced class


def _owner(optimizer):
    reference = optimizer.__dict__.get(_OWNER)
    return reference() if reference is not None else None


def _synced_class(cls):
    if cls in _ORIGINALS:
        return cls
    if cls in _SYNCED:
        return _SYNCED[cls]

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

    def __reduce_ex__(self, protocol):
        _, _, state, *rest = object.__reduce_ex__(self, max(protocol, 2))
        if isinstance(state, dict):
            state = {key: value for key, value in state.items() if key != _OWNER}
        return (copyreg._reconstructor, (_ORIGINALS[type(self)], object, None), state, *rest)

    namespace = {"state_dict": state_dict, "load_state_dict": load_state_dict,
                 "__reduce_ex__": __reduce_ex__, "__module__": cls.__module__,
                 "__qualname__": cls.__qualname__}
    synced = type(cls.__name__, (cls,), namespace)
    _ORIGINALS[synced] = cls
    _SYNCED[cls] = synced
    return synced


def install(optimizer, executor):
    """Routes optimizer.state_dict() / load_state_dict() through `executor`."""
    optimizer.__class__ = _synced_class(type(optimizer))
    optimizer.__dict__[_OWNER] = weakref.ref(executor)


def uninstall(optimizer):
    optimizer.__dict__.pop(_OWNER, None)
    original = _ORIGINALS.get(type(optimizer))
    if original is not None:
        optimizer.__class__ = original
