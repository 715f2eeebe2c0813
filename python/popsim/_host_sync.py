"""Lazy copies of trained weights back into the user's model.

While a training model runs, the device holds the weights that count. The
host model catches up only when it is used: reading a parameter or buffer,
calling parameters(), named_parameters(), buffers(), state_dict(), or
calling the host model triggers one copy from the device (if there were
steps since the last one).

This works by giving the model and each of its submodules a subclass of its
own class that checks first. Pickling and deepcopy see the original class.
destroy() (or the end of the training wrapper) restores the original
classes.
"""

import copyreg
import weakref
from typing import Dict

_SYNC = "_popsim_sync"
_ORIGINALS: Dict[type, type] = {}  # synced class -> original class
_SYNCED: Dict[type, type] = {}  # original class -> synced class


def _sync(module):
    sync = module.__dict__.get(_SYNC)
    if sync is not None:
        sync()


def _synced_class(cls):
    if cls in _ORIGINALS:
        return cls
    if cls in _SYNCED:
        return _SYNCED[cls]

    def __getattr__(self, name):
        if name in self.__dict__.get("_parameters", ()) or name in self.__dict__.get("_buffers", ()):
            _sync(self)
        return super(synced, self).__getattr__(name)

    def synced_method(name):
        def method(self, *args, **kwargs):
            _sync(self)
            return getattr(super(synced, self), name)(*args, **kwargs)

        method.__name__ = name
        return method

    def __reduce_ex__(self, protocol):
        _sync(self)
        _, _, state, *rest = object.__reduce_ex__(self, max(protocol, 2))
        if isinstance(state, dict):
            state = {key: value for key, value in state.items() if key != _SYNC}
        # Rebuilt as the original class by the standard library alone, so
        # pickles load without popsim.
        return (copyreg._reconstructor, (_ORIGINALS[type(self)], object, None), state, *rest)

    namespace = {"__getattr__": __getattr__, "__reduce_ex__": __reduce_ex__,
                 "__module__": cls.__module__, "__qualname__": cls.__qualname__}
    for name in ("__call__", "parameters", "named_parameters", "buffers", "named_buffers",
                 "state_dict"):
        namespace[name] = synced_method(name)
    synced = type(cls.__name__, (cls,), namespace)
    _ORIGINALS[synced] = cls
    _SYNCED[cls] = synced
    return synced


def install(model, owner):
    """Makes `model` copy `owner`'s device weights home before it is used."""
    reference = weakref.ref(owner)

    def sync():
        executor = reference()
        if executor is not None:
            executor._sync_host_if_needed()

    for module in model.modules():
        module.__class__ = _synced_class(type(module))
        module.__dict__[_SYNC] = sync


def uninstall(model):
    for module in model.modules():
        module.__dict__.pop(_SYNC, None)
        original = _ORIGINALS.get(type(module))
        if original is not None:
            module.__class__ = original
