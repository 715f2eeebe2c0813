"""The call a model compiled for, as exported files hold it: its nested
structure, each tensor as a shape and dtype, each other argument as a plain
value.

loadExecutable traces the model again on zeros of these shapes, so the file
must describe the call, and it does so as JSON that popsim parses itself:
reading a file never runs code from it (no pickle). Only what JSON can say
exactly is written: tuples, lists and dicts (OrderedDict kept as such) of
tensors, None, bools, ints, floats, strings and dtypes. Anything else is
refused when the file is written, naming the argument.
"""

from collections import OrderedDict
from typing import Any, Dict, List, Tuple

import torch

from popsim.api.errors import ExecutableFileError
from popsim.frontend import structure as _structure


class TensorSpec:
    """A call's tensor in an exported file: its shape and dtype. (A class of its own, not a
    NamedTuple, which _structure.flatten would take apart: a spec is one leaf.)"""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: torch.dtype) -> None:
        self.shape = shape
        self.dtype = dtype

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TensorSpec) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype})"


# (structure, leaves), each tensor leaf a TensorSpec.
CallSpec = Tuple[_structure.Structure, List[Any]]

_DTYPES = {str(dtype).replace("torch.", ""): dtype for dtype in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8,
    torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128)}


def call_spec(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> CallSpec:
    """The call as _structure.flatten sees it, with each tensor leaf replaced by its
    TensorSpec."""
    leaves, _, structure = _structure.flatten((args, kwargs), "")
    return structure, [TensorSpec(tuple(leaf.shape), leaf.dtype)
                       if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]


def call_from_spec(spec: CallSpec) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    """(args, kwargs) of call_spec's call, with zero tensors of the specs."""
    structure, leaves = spec
    return _structure.unflatten([torch.zeros(leaf.shape, dtype=leaf.dtype)
                                 if isinstance(leaf, TensorSpec) else leaf for leaf in leaves],
                                structure)


def to_json(spec: CallSpec) -> Dict[str, Any]:
    """The spec as JSON-able data; ExecutableFileError names an argument JSON cannot hold."""
    structure, leaves = spec
    encoded = _structure_to_json(structure)  # first: it refuses custom arguments
    # The leaves' readable names ("x", "batch['ids']", "argument 2"); flatten keeps each
    # TensorSpec whole.
    args, kwargs = _structure.unflatten(leaves, structure)
    names = [name for i, arg in enumerate(args)
             for name in _structure.flatten(arg, f"argument {i + 1}")[1]]
    names += [name for key, value in kwargs.items()
              for name in _structure.flatten(value, str(key))[1]]
    return {"structure": encoded,
            "leaves": [_leaf_to_json(leaf, name) for leaf, name in zip(leaves, names)]}


def from_json(data: Any, where: str) -> CallSpec:
    """The spec to_json wrote; ExecutableFileError (naming `where`) for anything else."""
    try:
        if not isinstance(data, dict) or not isinstance(data.get("leaves"), list):
            raise ValueError("the call is not an object with a list of leaves")
        structure = _structure_from_json(data["structure"], depth=0)
        leaves = [_leaf_from_json(leaf) for leaf in data["leaves"]]
        if _leaf_count(structure) != len(leaves):
            raise ValueError(f"the call's structure has {_leaf_count(structure)} leaves, the "
                             f"file lists {len(leaves)}")
    except (ValueError, TypeError, KeyError) as error:
        raise ExecutableFileError(f"{where} has a malformed call description: {error}.") from error
    return structure, leaves


def _structure_to_json(node: _structure.Structure) -> Dict[str, Any]:
    if node.kind == "custom":
        raise ExecutableFileError(
            f"An exported file cannot hold an argument of type {node.keys.__name__} (a type with a "
            "registered ICustomArgParser): the file describes the call as data, and rebuilding "
            "the argument would need its parser's object. Pass its tensors in a tuple, list or "
            "dict to export the model.")
    if node.kind in ("namedtuple", "dataclass"):
        kind = node.keys if node.kind == "namedtuple" else node.keys[0]
        raise ExecutableFileError(
            f"An exported file cannot hold an argument of type {kind.__name__} (a "
            f"{'NamedTuple' if node.kind == 'namedtuple' else 'dataclass'}): the file describes "
            "the call as data, and rebuilding the argument would need its class. Pass its "
            "tensors in a tuple, list or dict to export the model.")
    encoded: Dict[str, Any] = {"kind": node.kind,
                               "children": [_structure_to_json(c) for c in node.children]}
    if node.kind == "dict":
        for key in node.keys:
            if not isinstance(key, (str, int, bool)) and key is not None:
                raise ExecutableFileError(f"An exported file cannot hold the dict key {key!r} of "
                                          "the call: keys must be strings, ints or bools.")
        encoded["keys"] = list(node.keys)
        encoded["ordered"] = node.original is not None
    return encoded


_MAX_DEPTH = 64  # far deeper than any model's arguments; bounds the recursion


def _structure_from_json(data: Any, depth: int) -> _structure.Structure:
    if depth > _MAX_DEPTH:
        raise ValueError(f"the call's structure is nested more than {_MAX_DEPTH} deep")
    if not isinstance(data, dict) or not isinstance(data.get("children"), list):
        raise ValueError("a node of the call's structure is not an object with children")
    kind = data.get("kind")
    children = [_structure_from_json(child, depth + 1) for child in data["children"]]
    if kind in ("leaf", "none", "tuple", "list"):
        if kind in ("leaf", "none") and children:
            raise ValueError(f"a {kind} of the call's structure has children")
        return _structure.Structure(kind, children)
    if kind == "dict":
        keys = data.get("keys")
        if (not isinstance(keys, list) or len(keys) != len(children)
                or not all(isinstance(k, (str, int, bool)) or k is None for k in keys)):
            raise ValueError("a dict of the call's structure has keys that do not match it")
        return _structure.Structure("dict", children, keys,
                                    original=OrderedDict if data.get("ordered") else None)
    raise ValueError(f"the call's structure has a node of kind {kind!r}")


def _leaf_count(node: _structure.Structure) -> int:
    if node.kind == "leaf":
        return 1
    return sum(_leaf_count(child) for child in node.children)


def _leaf_to_json(leaf: Any, name: str) -> Any:
    if isinstance(leaf, TensorSpec):
        return {"tensor": list(leaf.shape), "dtype": str(leaf.dtype).replace("torch.", "")}
    if isinstance(leaf, torch.dtype):
        return {"dtype": str(leaf).replace("torch.", "")}
    if leaf is None or isinstance(leaf, (bool, int, float, str)):
        return leaf
    raise ExecutableFileError(
        f"An exported file cannot hold {name or 'an argument'} of the call ({type(leaf).__name__}): "
        "the file describes the call as data (tensors' shapes and dtypes, None, bools, numbers, "
        "strings and dtypes). Pass it as one of those, or as a tensor, to export the model.")


def _leaf_from_json(data: Any) -> Any:
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if not isinstance(data, dict):
        raise ValueError(f"a leaf of the call is {type(data).__name__}")
    dtype = _DTYPES.get(data.get("dtype"))  # type: ignore[arg-type]
    if dtype is None:
        raise ValueError(f"a leaf of the call has dtype {data.get('dtype')!r}")
    if "tensor" not in data:
        return dtype
    shape = data["tensor"]
    if (not isinstance(shape, list)
            or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**48
                       for d in shape)):
        raise ValueError(f"a tensor of the call has shape {shape!r}")
    elements = 1
    for dim in shape:
        elements *= dim
    if elements >= 2**48:  # popsim's bound on a tensor (ir/shape.h)
        raise ValueError(f"a tensor of the call has {elements} elements")
    return TensorSpec(tuple(shape), dtype)
