"""Name scopes: ``with popsim.NameScope("encoder"):`` prefixes the names of the
ops traced inside with ``encoder/`` (nested scopes join with ``/``), as
PopTorch's NameScope does, in the program (``Executor.program()``'s
``name``), the execution trace's op events and error messages.

Like the block annotations, the scope leaves marker ops in the trace
(``popsim::push_name_scope(name)``, ``popsim::pop_name_scope()``) that the
C++ importer reads; run eagerly, they do nothing.
"""

import torch

from popsim._ops import LIBRARY as _LIBRARY
from popsim.errors import OptionError

_LIBRARY.define("push_name_scope(str name) -> ()", alias_analysis="CONSERVATIVE")
_LIBRARY.define("pop_name_scope() -> ()", alias_analysis="CONSERVATIVE")
_LIBRARY.impl("push_name_scope", lambda name: None, "CompositeExplicitAutograd")
_LIBRARY.impl("pop_name_scope", lambda: None, "CompositeExplicitAutograd")


class NameScope:
    """Prefixes the names of the ops run inside ``with popsim.NameScope(name):``
    with ``name/``."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name or "/" in name:
            raise OptionError(f"NameScope expects a non-empty str without '/', got {name!r}; "
                              "nest scopes to build a path.")
        self.name = name

    def __enter__(self):
        torch.ops.popsim.push_name_scope(self.name)
        return self

    def __exit__(self, *exc_info):
        torch.ops.popsim.pop_name_scope()
        return False
