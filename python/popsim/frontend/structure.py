"""Flattening nested inputs and outputs (tuples, lists, dicts, NamedTuples,
dataclass instances, and types with a registered ICustomArgParser) into leaves.

A model may take and return nested structures; the compiled program takes and
returns flat lists of tensors. Each leaf keeps a readable name ("x",
"batch['ids']", "output[1]") for error messages.
"""

import abc
import copy
import dataclasses
from typing import Any, Dict, Hashable, Iterable, Iterator, List, Optional, Tuple, Union

import torch
from torch.utils import _pytree
from popsim.api.errors import ArgumentError


class ICustomArgParser(abc.ABC):
    """Teaches popsim (as PopTorch) to pass an argument of a type of your own:
    subclass it, implement both methods and register an instance for the type
    with registerCustomArgParser(type, parser). Instances of the type (and of
    its subclasses) are then taken apart into tensors on each call and rebuilt
    for the model's forward()."""

    @abc.abstractmethod
    def yieldTensors(self, struct: Any) -> Iterator[torch.Tensor]:
        """Takes an argument of the registered type apart into its tensors.

        Args:
            struct: An instance of the registered type (or of a subclass).

        Yields:
            The tensors of ``struct``, always in the same order, the order
            :meth:`popsim.ICustomArgParser.reconstruct` takes them in.
        """

    @abc.abstractmethod
    def reconstruct(self, original_structure: Any, tensor_iterator: Iterator[torch.Tensor]) -> Any:
        """Builds an argument like ``original_structure`` around other tensors.

        Args:
            original_structure: An instance of the registered type, as first seen, to copy.
            tensor_iterator: The tensors to put in place of its own, in the order
                :meth:`popsim.ICustomArgParser.yieldTensors` yields them.

        Returns:
            An object like ``original_structure`` holding the tensors of ``tensor_iterator`` in
            place of its own.
        """


_PARSERS: Dict[type, ICustomArgParser] = {}


def registerCustomArgParser(cls: type, parser: ICustomArgParser) -> None:
    """Registers ``parser`` for arguments of type ``cls`` (see :class:`popsim.ICustomArgParser`).

    Instances of ``cls`` and of its subclasses are then taken apart into tensors on each call
    and rebuilt for the model's ``forward()``. The type is registered with PyTorch's pytree too,
    so that :class:`popsim.DataLoader`'s background loading carries its tensors. A later
    registration for the same type replaces the parser.

    Args:
        cls: The type of the arguments.
        parser: The parser for them, an instance of a subclass of
            :class:`popsim.ICustomArgParser`.

    Raises:
        ArgumentError: when ``cls`` is not a type or ``parser`` is not an
            :class:`popsim.ICustomArgParser`.
    """
    if not isinstance(cls, type):
        raise ArgumentError(f"registerCustomArgParser expects a type first, got {cls!r}.")
    if not isinstance(parser, ICustomArgParser):
        raise ArgumentError(f"registerCustomArgParser expects an ICustomArgParser instance for "
                            f"{cls.__name__}, got {parser!r}.")
    _PARSERS[cls] = parser
    # The DataLoader's background loading (popsim.data.async_data) flattens batches
    # with torch's pytree: taught the type too, its tensors travel in shared
    # memory and AsyncRebatched can join them.
    _pytree._register_pytree_node(
        cls, lambda item: (list(parser.yieldTensors(item)), item),
        lambda tensors, original: parser.reconstruct(original, iter(tensors)))


def _parser_of(item: object) -> Optional[ICustomArgParser]:
    if not _PARSERS:  # every leaf of every call comes here
        return None
    for cls in type(item).__mro__:
        if cls in _PARSERS:
            return _PARSERS[cls]
    return None


class Structure:
    """The shape of a nested value: containers and the positions of leaves."""

    def __init__(self, kind: str, children: Optional[List["Structure"]] = None,
                 keys: Union[List[Hashable], type, Tuple[type, List[str]], None] = None,
                 original: object = None) -> None:
        # "leaf", "none", "tuple", "list", "dict", "namedtuple", "dataclass" or "custom"
        self.kind = kind
        self.children = children or []
        # A dict's keys; a custom argument's or NamedTuple's type; a dataclass's
        # (type, field names).
        self.keys: Any = keys
        # A custom argument or dataclass as first seen, for its parser or to
        # copy; a dict's class when it is not dict itself.
        self.original = original

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Structure) and self.kind == other.kind
                and self.keys == other.keys and self.children == other.children)

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        if self.kind == "custom" or self.kind == "namedtuple":
            return f"{self.keys.__name__}({', '.join(repr(c) for c in self.children)})"
        if self.kind == "dataclass":
            inner = ", ".join(f"{k}={c!r}" for k, c in zip(self.keys[1], self.children))
            return f"{self.keys[0].__name__}({inner})"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children))
            return "{" + inner + "}"
        return ("(" if self.kind == "tuple" else "[") + inner + (")" if self.kind == "tuple" else "]")


class _Flattener:
    """flatten()'s walk: a class rather than a closure that calls itself, which would be
    a reference cycle keeping the leaves (a call's tensors) alive until the garbage
    collector ran."""

    def __init__(self, none_as_empty: bool) -> None:
        self.none_as_empty = none_as_empty
        self.leaves: List[Any] = []
        self.names: List[str] = []

    def visit(self, item: object, path: str, model: Optional[Structure]) -> Structure:
        if item is None and self.none_as_empty:
            return Structure("none")
        parser = _parser_of(item)
        if parser is not None:
            tensors = list(parser.yieldTensors(item))
            return Structure("custom", [self.visit(t, f"{path}.tensors[{i}]", None)
                                        for i, t in enumerate(tensors)], type(item), item)
        if isinstance(item, tuple) and hasattr(item, "_fields"):
            # A NamedTuple, rebuilt as its own type; its leaves named by field.
            fields = list(getattr(item, "_fields"))
            models = (model.children if model is not None and model.kind == "namedtuple"
                      and model.keys is type(item)
                      else [None] * len(item))  # type: ignore[list-item]
            return Structure("namedtuple", [self.visit(child, f"{path}.{field}", m)
                                            for field, child, m in zip(fields, item, models)],
                             type(item))
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            # A dataclass instance (a model's output record), rebuilt as a copy of it with
            # each field's new value; its leaves named by field. An output's fields that
            # hold no tensor (a string, a number) stay as the copy has them.
            fields = [field.name for field in dataclasses.fields(item)
                      if not (self.none_as_empty and _plain_value(getattr(item, field.name)))]
            same = (model is not None and model.kind == "dataclass"
                    and model.keys == (type(item), fields))
            matching: List[Optional[Structure]] = (
                list(model.children) if same else [None] * len(fields))  # type: ignore[union-attr]
            children = [self.visit(getattr(item, field), f"{path}.{field}", m)
                        for field, m in zip(fields, matching)]
            # Kept to copy: the instance without the values it was taken apart into (a
            # trace's tensors would otherwise stay alive with the compiled model).
            template = copy.copy(item)
            for field in fields:
                object.__setattr__(template, field, None)
            return Structure("dataclass", children, (type(item), fields), template)
        if isinstance(item, (tuple, list)):
            kind = "tuple" if isinstance(item, tuple) else "list"
            models = (model.children if model is not None and model.kind == kind
                      and len(model.children) == len(item)
                      else [None] * len(item))  # type: ignore[list-item]
            return Structure(kind, [self.visit(child, f"{path}[{i}]", m)
                                    for i, (child, m) in enumerate(zip(item, models))])
        if isinstance(item, dict):
            keys = list(item.keys())
            same = model is not None and model.kind == "dict" and set(model.keys) == set(keys)
            # (`same` holds only for a model, which mypy does not follow.)
            if same:
                keys = list(model.keys)  # type: ignore[union-attr]
            models = (dict(zip(model.keys, model.children))  # type: ignore[assignment, union-attr]
                      if same else {})
            # Top-level keys are argument names: "x" reads better than "['x']".
            # A dict's own class (an OrderedDict or a subclass) is rebuilt as such.
            return Structure("dict", [self.visit(item[k], f"{path}[{k!r}]" if path else str(k),
                                                 models.get(k))  # type: ignore[attr-defined]
                                      for k in keys], keys,
                             original=type(item) if type(item) is not dict else None)
        self.leaves.append(item)
        self.names.append(path)
        return Structure("leaf")


def flatten(value: object, name: str, like: Optional[Structure] = None,
            none_as_empty: bool = False) -> Tuple[List[Any], List[str], Structure]:
    """Returns (leaves, names, structure) for a nested value. Dicts with the
    keys of the matching dict in `like` (a structure) are read in its order.
    With `none_as_empty` (a model's outputs), None is part of the structure
    rather than a leaf: a model that returns None, or (x, None), does so
    after the call too."""
    flattener = _Flattener(none_as_empty)
    structure = flattener.visit(value, name, like)
    return flattener.leaves, flattener.names, structure


def _plain_value(value: object) -> bool:
    """A value that is not None and holds no tensor: a number, a string, another object."""
    return (value is not None and not isinstance(value, (torch.Tensor, tuple, list, dict))
            and not dataclasses.is_dataclass(value) and _parser_of(value) is None)


def unflatten(leaves: Iterable[Any], structure: Structure) -> Any:
    """Rebuilds a nested value from leaves in flatten() order."""
    return _build(structure, iter(leaves))


def _build(node: Structure, leaves: Iterator[Any]) -> Any:
    """unflatten()'s recursion, a function of its own rather than a closure that calls
    itself: such a closure is a reference cycle, which would keep the leaves (a call's
    output tensors) alive until the garbage collector ran."""
    if node.kind == "leaf":
        return next(leaves)
    if node.kind == "none":
        return None
    children = [_build(child, leaves) for child in node.children]
    if node.kind == "custom":
        return _parser_of(node.original).reconstruct(  # type: ignore[union-attr]
            node.original, iter(children))
    if node.kind == "tuple":
        return tuple(children)
    if node.kind == "namedtuple":
        return node.keys(*children)
    if node.kind == "dataclass":
        rebuilt = copy.copy(node.original)
        for field, child in zip(node.keys[1], children):
            object.__setattr__(rebuilt, field, child)  # (frozen dataclasses too)
        return rebuilt
    if node.kind == "list":
        return children
    if isinstance(node.original, type):  # the dict's own class
        try:
            return node.original(zip(node.keys, children))
        except TypeError:  # a class that cannot be built from pairs: a plain dict
            pass
    return dict(zip(node.keys, children))


def is_tensor(value: object) -> bool:
    return isinstance(value, torch.Tensor)
