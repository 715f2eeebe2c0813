"""Options.loadFromFile: a file of option setter calls, one per line
("deviceIterations(4)", "Training.gradientAccumulation(2)").

A configuration file is data, not a program: each line's arguments are read
from their syntax tree by a small evaluator that knows literals, arithmetic
on numbers, public attributes of popsim and torch, and calls of popsim's own
classes and a few builtins. Nothing else in the file runs (no eval), so a
file from elsewhere cannot run code or reach popsim's internals.
"""

import ast
import builtins
import io
import operator
import re
import sys
import tokenize
from typing import Any, Callable, Dict, List, Tuple

import torch

from popsim.api.errors import OptionError

_SETTER_LINE = re.compile(r"^(?:(Training|Simulator|TensorLocations|Precision|Distributed|Jit|"
                          r"_Popart)\.)?([A-Za-z][A-Za-z0-9_]*)\((.*)\)$")

_BUILTINS = {name: getattr(builtins, name)
             for name in ("bool", "dict", "float", "int", "list", "str", "tuple")}

_UNARY: Dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos,
                                            ast.Not: operator.not_}
_BINARY: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow}


class ConfigFileError(OptionError):
    """A line of an options file that ``Options.loadFromFile`` cannot apply, as PopTorch's
    ``poptorch.options.ConfigFileError`` (an :class:`OptionError` too): a line that is not
    Python (``SyntaxError at line 5 of <file>: '(' was never closed``, then the line as
    ``> options.<line>``), not a setter call, a setter the options lack, or arguments that
    cannot be read or that the setter cannot take (a setter's own refusal of a value stays
    its OptionError)."""

    def __init__(self, message: str) -> None:
        """Makes the error.

        Args:
            message: what is wrong, naming the file and line.
        """
        super().__init__(message, option="loadFromFile")


class _Refused(ValueError):
    """An argument the evaluator does not read."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Arguments:
    """Evaluates a setter call's argument expressions against `names`."""

    def __init__(self, names: Dict[str, Any]) -> None:
        self._names = names

    def call(self, text: str) -> Tuple[List[Any], Dict[str, Any]]:
        """The arguments of a setter call written as `setter(text)`."""
        tree = ast.parse(f"_({text})", mode="eval").body
        if not isinstance(tree, ast.Call):
            raise _Refused("the line is not one call")
        return self.call_arguments(tree)

    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [self.value(item) for item in node.elts]
            return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
        if isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                raise _Refused("** in a dict is not read")
            return {self.value(key): self.value(item)  # type: ignore[arg-type]
                    for key, item in zip(node.keys, node.values)}
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = self.value(node.left), self.value(node.right)
            if not (_number(left) and _number(right)):
                raise _Refused("arithmetic is read on numbers only")
            if isinstance(node.op, ast.Pow) and abs(right) > 64:
                raise _Refused("exponents above 64 are not read")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.Name):
            if node.id not in self._names:
                raise _Refused(f"the name '{node.id}' is not known here (popsim, poptorch, torch "
                               f"and {', '.join(sorted(_BUILTINS))} are)")
            return self._names[node.id]
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise _Refused(f"the attribute '{node.attr}' is private")
            return getattr(self.value(node.value), node.attr)
        if isinstance(node, ast.Call):
            function = self.value(node.func)
            if not (any(function is allowed for allowed in _BUILTINS.values())
                    or (isinstance(function, type)
                        and function.__module__.split(".")[0] == "popsim")):
                raise _Refused(f"only popsim's classes and {', '.join(sorted(_BUILTINS))} are "
                               f"called, not {getattr(function, '__name__', function)!r}")
            arguments, keywords = self.call_arguments(node)
            return function(*arguments, **keywords)
        raise _Refused(f"{type(node).__name__} expressions are not read")

    def call_arguments(self, node: ast.Call) -> Tuple[List[Any], Dict[str, Any]]:
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(
                keyword.arg is None for keyword in node.keywords):
            raise _Refused("* and ** arguments are not read")
        return ([self.value(arg) for arg in node.args],
                {str(keyword.arg): self.value(keyword.value) for keyword in node.keywords})


def _without_comment(line: str) -> str:
    """The line without its comment (a # outside strings, as Python reads it); a line Python
    cannot tokenize is left whole, for the syntax check to report."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]]
    except (tokenize.TokenError, SyntaxError):
        pass
    return line


def load(options: Any, filepath: str) -> None:
    """Applies the file's setter calls to `options`, line by line."""
    popsim = sys.modules["popsim"]  # the public package, which has loaded these options
    try:
        with open(filepath) as source:
            lines = source.read().splitlines()
    except OSError as error:
        raise OptionError(f"loadFromFile('{filepath}'): cannot read it: {error}.",
                          option="loadFromFile") from error
    arguments = _Arguments(dict(_BUILTINS, popsim=popsim, poptorch=popsim, torch=torch))
    for number, text in enumerate(lines, start=1):
        line = _without_comment(text).strip()
        if not line:
            continue
        where = f"loadFromFile('{filepath}'), line {number} ({line!r})"
        try:  # the file is read as the lines of options.<line>, as PopTorch reads it
            ast.parse(f"options.{line}")
        except SyntaxError as error:
            raise ConfigFileError(f"SyntaxError at line {number} of {filepath}: {error.msg}\n"
                                  f"> options.{line}\n({where}: each line must call one "
                                  "option setter, such as deviceIterations(4) or "
                                  "Training.gradientAccumulation(2))."
                                  ) from error
        match = _SETTER_LINE.match(line)
        if match is None:
            raise ConfigFileError(f"{where}: each line must call one option setter, such as "
                                  "deviceIterations(4) or Training.gradientAccumulation(2).")
        group, setter = match.group(1), match.group(2)
        target = getattr(options, group) if group else options
        method = getattr(type(target), setter, None)
        if setter.startswith("_") or not callable(method):
            owner = f"Options.{group}" if group else "Options"
            raise ConfigFileError(f"{where}: {owner} has no setter '{setter}'.")
        try:
            positional, keywords = arguments.call(match.group(3))
        except Exception as error:  # noqa: BLE001 - any error in the user's arguments
            raise ConfigFileError(f"{where}: cannot evaluate its arguments: {error}.") from error
        try:
            getattr(target, setter)(*positional, **keywords)
        except OptionError as error:
            raise OptionError(f"{where}: {error}", option=error.option or "loadFromFile") from error
        except TypeError as error:  # wrong arguments for the setter
            raise ConfigFileError(f"{where}: {error}.") from error
