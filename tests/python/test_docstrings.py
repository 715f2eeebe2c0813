"""Every public name of popsim's API documents itself: what it does, each argument, what it
returns and the errors it raises (Google style, which the docs' API reference renders with
sphinx.ext.napoleon). The API reference is generated from these docstrings, so a missing
argument here is a gap in the docs."""

import ast
import enum
import inspect
import re
import textwrap

import pytest

import popsim
import popsim.enums
import popsim.optim
import popsim.profiling
import popsim.testing

MODULES = [popsim, popsim.optim, popsim.enums, popsim.profiling, popsim.testing]
SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Yields|Raises|Example|Examples|Note|"
                     r"Notes|Attributes|See Also|Warning|Warnings):\s*$", re.MULTILINE)


def option_groups():
    """The classes of Options' groups (opts.Training, ...), which users reach as attributes."""
    options = popsim.Options()
    return {f"Options.{name}": type(getattr(options, name))
            for name in ("Training", "Simulator", "TensorLocations", "Precision", "Jit",
                         "Distributed", "_Popart")}


def public_objects():
    """(qualified name, object, owning class or None) for every public callable and class."""
    seen = set()
    found = []

    def visit(name, obj, owner=None):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        found.append((name, obj, owner))
        if inspect.isclass(obj) and not issubclass(obj, enum.Enum):
            # Its own members and those of popsim's classes it is made of (a class's
            # methods may live in mixins by concern), the nearest definition of each name.
            members = {}
            for klass in obj.__mro__:
                if klass is obj or klass.__module__.startswith("popsim."):
                    for member_name, member in vars(klass).items():
                        members.setdefault(member_name, member)
            for member_name, member in members.items():
                if member_name.startswith("_") and member_name != "__init__":
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member):
                    visit(f"{name}.{member_name}", member, obj)

    for module in MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                visit(f"{module.__name__}.{name}", obj)
    for name, group in option_groups().items():
        visit(f"popsim.{name}", group)
    return found


def sections(doc):
    """{section title: body} of a Google-style docstring."""
    parts = SECTION.split(doc)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def documented_arguments(doc):
    # A dataclass's generated __init__ takes its fields, documented under "Attributes:".
    body = "".join(sections(doc).get(title, "")
                   for title in ("Args", "Arguments", "Parameters", "Attributes"))
    return set(re.findall(r"^\s+\**(\w+)\s*(?:\([^)]*\))?:", body, re.MULTILINE))


def arguments(function):
    names = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name in ("self", "cls"):
            continue
        names.append(parameter.name)
    return names


def raised_directly(function):
    """Exception classes the function's own body raises by name (not nested functions)."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return set()
    tree = ast.parse(source).body[0]
    raised = set()

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                  ast.ClassDef)):
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                target = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                if isinstance(target, ast.Name) and target.id[0].isupper():
                    raised.add(target.id)
                elif isinstance(target, ast.Attribute):
                    raised.add(target.attr)
            walk(child)

    walk(tree)
    return raised


def returns_value(function):
    annotation = inspect.signature(function).return_annotation
    return annotation not in (inspect.Signature.empty, None, "None")


OBJECTS = public_objects()


def test_the_api_has_the_expected_size():
    # A guard against the walk silently finding nothing.
    assert len(OBJECTS) > 250, len(OBJECTS)


@pytest.mark.parametrize("name,obj,owner", OBJECTS, ids=[name for name, _, _ in OBJECTS])
def test_public_name_documents_itself(name, obj, owner):
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    if inspect.isclass(obj):
        return
    is_property = owner is not None and isinstance(
        inspect.getattr_static(owner, name.rsplit(".", 1)[1], None), property)
    if is_property:
        return
    problems = []
    doc_of_arguments = doc
    if obj.__name__ == "__init__" and owner is not None:
        doc_of_arguments += "\n" + (inspect.getdoc(owner) or "")
    missing = [argument for argument in arguments(obj)
               if argument not in documented_arguments(doc_of_arguments)]
    if missing:
        problems.append(f"arguments not under 'Args:': {missing}")
    if returns_value(obj) and obj.__name__ != "__init__" and not (
            {"Returns", "Yields"} & set(sections(doc))):
        problems.append("no 'Returns:' section")
    undocumented = [error for error in sorted(raised_directly(obj))
                    if error not in sections(doc).get("Raises", "")]
    if undocumented:
        problems.append(f"raises {undocumented} without saying so under 'Raises:'")
    assert not problems, f"{name}: " + "; ".join(problems)
