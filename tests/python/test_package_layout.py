"""The Python package's layout holds: its modules import one another without a
circle (counting imports inside functions and under TYPE_CHECKING, which hold
a circle together as well as any), none is over 800 lines, and the public
module paths PopTorch code imports (popsim.options, popsim.enums, ...) still
give the same objects."""

import ast
import importlib
import os
from typing import Dict, List, Set

import pytest

import popsim

PACKAGE = os.path.dirname(popsim.__file__)
MAX_LINES = 800


def modules() -> Dict[str, str]:
    """{dotted module name: path} of every module of the package."""
    found = {}
    for directory, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3]
                dotted = relative.replace(os.sep, ".")
                found[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = path
    return found


def imports(path: str, name: str, known: Set[str]) -> Set[str]:
    """The package's modules that the module `name` at `path` imports, anywhere in it.
    `from popsim import _C` imports the C++ extension, a leaf."""
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    found.add(target)
                elif base in known and alias.name != "_C":
                    found.add(base)
    found.discard(name)
    return found


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    components: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return components


def test_no_module_imports_another_that_imports_it_back():
    known = modules()
    graph = {name: imports(path, name, set(known)) for name, path in known.items()}
    assert cycles(graph) == []


def test_a_circle_is_found_when_there_is_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_is_over_800_lines(name):
    with open(modules()[name]) as source:
        assert sum(1 for _ in source) <= MAX_LINES


@pytest.mark.parametrize("old, new", [
    ("popsim.options", "popsim.api.options"), ("popsim.enums", "popsim.api.enums"),
    ("popsim.errors", "popsim.api.errors"), ("popsim.strategies", "popsim.api.strategies"),
    ("popsim.tensor_locations", "popsim.api.tensor_locations"),
    ("popsim.optim", "popsim.training.optim"),
])
def test_public_module_paths_keep_working(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)
    from popsim.options import Options  # as PopTorch code imports it
    assert Options is popsim.Options
