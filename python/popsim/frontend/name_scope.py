"""Name scopes: ``with popsim.NameScope("encoder"):`` prefixes the names of the
ops traced inside with ``encoder/`` (nested scopes join with ``/``), as
PopTorch's NameScope does: in the profile's program (its steps' ``name``),
the execution trace's op events and error messages. While tracing, every
submodule call is a scope of its attribute name too (``module_scopes``),
unless ``Options.disableModuleNamescope()``.

Like the block annotations, the scopes leave marker ops in the trace
(``popsim::push_name_scope(name)``, ``popsim::pop_name_scope()``) that the
C++ importer reads; run eagerly, they do nothing.
"""

import contextlib
from typing import Iterator, Literal

import torch

from popsim.frontend.ops import LIBRARY as _LIBRARY
from popsim.api.errors import OptionError

_LIBRARY.define("push_name_scope(str name) -> ()", alias_analysis="CONSERVATIVE")
_LIBRARY.define("pop_name_scope() -> ()", alias_analysis="CONSERVATIVE")
_LIBRARY.impl("push_name_scope", lambda name: None, "CompositeExplicitAutograd")
_LIBRARY.impl("pop_name_scope", lambda: None, "CompositeExplicitAutograd")


class NameScope:
    """Prefixes the names of the ops run inside ``with popsim.NameScope(name):``
    with ``name/``."""

    def __init__(self, name: str):
        """Creates a scope; entering it pushes ``name``, leaving it pops it.

        Args:
            name: The scope's name, joined to the enclosing scopes' with ``/``.

        Raises:
            OptionError: when ``name`` is not a non-empty ``str`` or contains ``/`` (nest
                scopes to build a path).
        """
        if not isinstance(name, str) or not name or "/" in name:
            raise OptionError(f"NameScope expects a non-empty str without '/', got {name!r}; "
                              "nest scopes to build a path.", option="NameScope")
        self.name = name

    def __enter__(self) -> "NameScope":
        torch.ops.popsim.push_name_scope(self.name)
        return self

    def __exit__(self, *exc_info: object) -> Literal[False]:
        torch.ops.popsim.pop_name_scope()
        return False


@contextlib.contextmanager
def module_scopes(model: torch.nn.Module) -> Iterator[None]:
    """While tracing: every submodule call runs in a name scope of its own
    attribute name, so that the ops of ``model.encoder.layers[0]`` are named
    ``encoder/layers/0/<op>`` (Options.disableModuleNamescope turns it off).
    TorchScript modules take no hooks and are left unnamed."""
    handles = []
    for path, module in model.named_modules():
        if not path or isinstance(module, torch.jit.ScriptModule):
            continue
        name = path.rsplit(".", 1)[-1]
        # The hooks return None: anything else would replace the inputs or output.
        handles.append(module.register_forward_pre_hook(
            lambda _module, _inputs, name=name: torch.ops.popsim.push_name_scope(name)))
        handles.append(module.register_forward_hook(
            lambda _module, _inputs, _output: torch.ops.popsim.pop_name_scope()))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
