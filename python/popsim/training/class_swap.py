"""Subclasses popsim swaps into the user's objects (the modules of a model
being trained, its optimizer) so that some of their methods call back into
popsim first, and swaps out again.

Each object keeps its popsim hook under one key of its __dict__. Pickling
and deepcopy drop the hook and rebuild the object as its original class, by
the standard library alone, so pickles load without popsim."""

import copyreg
from typing import Any, Callable, Dict, Optional, Tuple


class ClassSwap:
    """One kind of swapped-in subclass. `methods(subclass)` gives the
    subclass's own methods (they call super(subclass, self) and reach the
    hook with hook(self)); `before_pickle(obj)`, if given, runs first when
    an object is pickled or copied."""

    def __init__(self, hook_key: str, methods: Callable[[type], Dict[str, Any]],
                 before_pickle: Optional[Callable[[Any], None]] = None):
        self._key = hook_key
        self._methods = methods
        self._before_pickle = before_pickle
        self._originals: Dict[type, type] = {}  # subclass -> original class
        self._subclasses: Dict[type, type] = {}  # original class -> subclass

    def hook(self, obj: object) -> Any:
        return obj.__dict__.get(self._key)

    def install(self, obj: object, hook: object) -> None:
        obj.__class__ = self._subclass(type(obj))
        obj.__dict__[self._key] = hook

    def uninstall(self, obj: object) -> None:
        obj.__dict__.pop(self._key, None)
        original = self._originals.get(type(obj))
        if original is not None:
            obj.__class__ = original

    def _subclass(self, cls: type) -> type:
        if cls in self._originals:
            return cls
        if cls in self._subclasses:
            return self._subclasses[cls]
        swap = self

        def __reduce_ex__(obj: object, protocol: int) -> Tuple[Any, ...]:
            if swap._before_pickle is not None:
                swap._before_pickle(obj)
            reduced: Tuple[Any, ...] = tuple(object.__reduce_ex__(obj, max(protocol, 2)))
            _, _, state, *rest = reduced
            if isinstance(state, dict):
                state = {key: value for key, value in state.items() if key != swap._key}
            return (getattr(copyreg, "_reconstructor"), (swap._originals[type(obj)], object, None),
                    state, *rest)

        subclass = type(cls.__name__, (cls,), {"__reduce_ex__": __reduce_ex__,
                                               "__module__": cls.__module__,
                                               "__qualname__": cls.__qualname__})
        for name, method in self._methods(subclass).items():
            setattr(subclass, name, method)
        self._originals[subclass] = cls
        self._subclasses[cls] = subclass
        return subclass
