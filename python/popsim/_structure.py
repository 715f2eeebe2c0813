"""Flattening nested inputs and outputs (tuples, lists, dicts) into leaves.

A model may take and return nested structures; the compiled program takes and
returns flat lists of tensors. Each leaf keeps a readable name ("x",
"batch['ids']", "output[1]") for error messages.
"""

import torch


class Structure:
    """The shape of a nested value: containers and the positions of leaves."""

    def __init__(self, kind, children=None, keys=None):
        self.kind = kind  # "leaf", "tuple", "list" or "dict"
        self.children = children or []
        self.keys = keys

    def __eq__(self, other):
        return (isinstance(other, Structure) and self.kind == other.kind
                and self.keys == other.keys and self.children == other.children)

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children))
            return "{" + inner + "}"
        return ("(" if self.kind == "tuple" else "[") + inner + (")" if self.kind == "tuple" else "]")


def flatten(value, name):
    """Returns (leaves, names, structure) for a nested value."""
    leaves, names = [], []

    def visit(item, path):
        if isinstance(item, (tuple, list)) and not hasattr(item, "_fields"):
            kind = "tuple" if isinstance(item, tuple) else "list"
            return Structure(kind, [visit(child, f"{path}[{i}]") for i, child in enumerate(item)])
        if isinstance(item, dict):
            keys = list(item.keys())
            # Top-level keys are argument names: "x" reads better than "['x']".
            return Structure("dict", [visit(item[k], f"{path}[{k!r}]" if path else str(k))
                                      for k in keys], keys)
        leaves.append(item)
        names.append(path)
        return Structure("leaf")

    structure = visit(value, name)
    return leaves, names, structure


def unflatten(leaves, structure):
    """Rebuilds a nested value from leaves in flatten() order."""
    iterator = iter(leaves)

    def build(node):
        if node.kind == "leaf":
            return next(iterator)
        children = [build(child) for child in node.children]
        if node.kind == "tuple":
            return tuple(children)
        if node.kind == "list":
            return children
        return dict(zip(node.keys, children))

    return build(structure)


def is_tensor(value):
    return isinstance(value, torch.Tensor)
