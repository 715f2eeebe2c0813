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

from popsim._class_swap import ClassSwap


def _sync(module):
    sync = _SWAP.hook(module)
    if sync is not None:
        sync()


def _synced_methods(synced):
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

    methods = {"__getattr__": __getattr__}
    for name in ("__call__", "parameters", "named_parameters", "buffers", "named_buffers",
                 "state_dict"):
        methods[name] = synced_method(name)
    return methods


# Pickling a module copies the trained weights home first.
_SWAP = ClassSwap("_popsim_sync", _synced_methods, before_pickle=_sync)


def install(model, owner):
    """Makes `model` copy `owner`'s device weights home before it is used."""
    reference = weakref.ref(owner)

    def sync():
        executor = reference()
        if executor is not None:
            executor._sync_host_if_needed()

    for module in model.modules():
        _SWAP.install(module, sync)


def uninstall(model):
    for module in model.modules():
        _SWAP.uninstall(module)
