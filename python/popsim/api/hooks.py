"""Functions PopTorch code registers to run around every compilation:
registerPreCompileHook(hook) before a model is traced, and
registerPostCompileHook(hook) once its program is built (weights on the
device). Each is called with no arguments; the returned handle's remove()
unregisters it."""

from collections import OrderedDict
from typing import Callable

import torch
from popsim.api.errors import NotCallableError

_PRE_COMPILE: "OrderedDict[int, Callable[[], None]]" = OrderedDict()
_POST_COMPILE: "OrderedDict[int, Callable[[], None]]" = OrderedDict()


def _register(hooks: "OrderedDict[int, Callable[[], None]]", hook: Callable[[], None],
              when: str) -> torch.utils.hooks.RemovableHandle:
    if not callable(hook):
        raise NotCallableError(f"{when}-compile hook must be callable, got {hook!r}.")
    handle = torch.utils.hooks.RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def registerPreCompileHook(hook: Callable[[], None]) -> torch.utils.hooks.RemovableHandle:
    """Registers a function popsim calls before each model compiles.

    The hook runs with no arguments before the model is traced, each time any model compiles
    (its first call, :meth:`popsim.Executor.compile` or a recompilation); hooks run in the
    order they were registered.

    Args:
        hook: The function to call, taking no arguments.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Raises:
        NotCallableError: when ``hook`` is not callable (an ArgumentError and a RuntimeError,
            as PopTorch documents).
    """
    return _register(_PRE_COMPILE, hook, "Pre")


def registerPostCompileHook(hook: Callable[[], None]) -> torch.utils.hooks.RemovableHandle:
    """Registers a function popsim calls after each model has compiled.

    The hook runs with no arguments once the model's program is built and its weights are on
    the device, each time any model compiles; hooks run in the order they were registered.

    Args:
        hook: The function to call, taking no arguments.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Raises:
        NotCallableError: when ``hook`` is not callable (an ArgumentError and a RuntimeError,
            as PopTorch documents).
    """
    return _register(_POST_COMPILE, hook, "Post")


def run_pre_compile() -> None:
    for hook in list(_PRE_COMPILE.values()):
        hook()


def run_post_compile() -> None:
    for hook in list(_POST_COMPILE.values()):
        hook()
