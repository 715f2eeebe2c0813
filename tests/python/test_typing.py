"""The Python package type-checks: it carries type hints, and popsim._C's
contract is described by python/popsim/_C.pyi, which declares every binding
and nothing else, so a change on either side that breaks the other fails
here. Configured in pyproject.toml ([tool.mypy])."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.timeout(300)
def test_the_package_type_checks_with_mypy():
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                            text=True, timeout=280)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("Success")


def _stub_names():
    """What python/popsim/_C.pyi declares: {name: None} for module-level
    functions and variables, {name: set of members} for classes (TypedDicts,
    which only the stub has, left out)."""
    import ast
    tree = ast.parse(open(os.path.join(ROOT, "python", "popsim", "_C.pyi")).read())
    declared = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = {getattr(base, "id", getattr(base, "attr", "")) for base in node.bases}
            if "TypedDict" in bases or any(b.startswith("Graph") for b in bases):
                continue
            members = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    members.add(item.target.id)
            declared[node.name] = members
        elif isinstance(node, ast.FunctionDef):
            declared[node.name] = None
        elif isinstance(node, ast.AnnAssign):
            declared[node.target.id] = None
    return declared


def test_the_stub_declares_every_binding_and_nothing_else():
    import inspect

    from popsim import _C
    declared = _stub_names()
    assert set(declared) == {name for name in dir(_C) if not name.startswith("__")}
    for name, members in declared.items():
        binding = getattr(_C, name)
        if not inspect.isclass(binding):
            assert members is None, name
            continue
        public = {m for m in dir(binding) if not m.startswith("_")}
        is_enum = hasattr(binding, "__members__")
        if is_enum:  # a pybind11 enum: its values, and name and value
            public -= {"name", "value"}
        # (Dunder methods the stub declares, such as __int__ or __deepcopy__, type protocols
        # mypy checks; the public members must match exactly.)
        assert {m for m in members if not m.startswith("_")} == public, name
        for dunder in {m for m in members if m.startswith("__")}:
            assert hasattr(binding, dunder), f"{name}.{dunder}"
        # A class the stub gives no constructor cannot be built from Python.
        if "__init__" not in members and not is_enum:
            with pytest.raises(TypeError):
                binding()
