"""Functions PopTorch code registers to run around every compilation:
registerPreCompileHook(hook) before a model is traced, and
registerPostCompileHook(hook) once its program is built (weights on the
device). Each is called with no arguments; the returned handle's remove()
unregisters it."""

from collections import OrderedDict
from typing import Callable

import torch

_PRE_COMPILE: "OrderedDict[int, Callable[[], None]]" = OrderedDict()
_POST_COMPILE: "OrderedDict[int, Callable[[], None]]" = OrderedDict()


def _register(hooks: "OrderedDict[int, Callable[[], None]]", hook: Callable[[], None],
              when: str) -> torch.utils.hooks.RemovableHandle:
    if not callable(hook):
        raise TypeError(f"{when}-compile hook must be callable, got {hook!r}.")
    handle = torch.utils.hooks.RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def registerPreCompileHook(hook: Callable[[], None]) -> torch.utils.hooks.RemovableHandle:
    """Calls `hook()` before each model compiles."""
    return _register(_PRE_COMPILE, hook, "Pre")


def registerPostCompileHook(hook: Callable[[], None]) -> torch.utils.hooks.RemovableHandle:
    """Calls `hook()` after each model has compiled."""
    return _register(_POST_COMPILE, hook, "Post")


def run_pre_compile() -> None:
    for hook in list(_PRE_COMPILE.values()):
        hook()


def run_post_compile() -> None:
    for hook in list(_POST_COMPILE.values()):
        hook()
