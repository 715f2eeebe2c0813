"""What kinds of value the API's arguments are, as its checks ask: Python's
bool is an int, but an option that wants a count or a size does not take
True. Typed as `object` so that a check of a user's value is not a claim
about its type that mypy would hold against the check itself."""

import json
import numbers
import os
from typing import Any, Dict, Optional

from popsim.api.errors import OptionError


def is_integer(value: object) -> bool:
    """An integer (Python's or NumPy's, ...) that is not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: object) -> bool:
    """A real number (an integer included) that is not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_string_list(value: object) -> bool:
    """A list (or other iterable that is not a str) of strs."""
    if isinstance(value, str):
        return False
    try:
        return all(isinstance(item, str) for item in value)  # type: ignore[attr-defined]
    except TypeError:
        return False


def json_object_in_environment(variable: str, holds: str, example: str
                               ) -> Optional[Dict[str, Any]]:
    """The JSON object environment variable `variable` holds (`holds`, with
    `example`, says what it is for the errors), or None when it is unset or
    blank; an OptionError when it is not a JSON object."""
    text = os.environ.get(variable, "")
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise OptionError(f"{variable} is not JSON ({error}): give an object of {holds}, "
                          f"e.g. '{example}'.", option=variable) from None
    if not isinstance(value, dict):
        raise OptionError(f"{variable} must be a JSON object of {holds}, got {text!r}.",
                          option=variable)
    return value
