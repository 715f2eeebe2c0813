"""Colours and labels of profile drawings, from the core (csrc/profile/report_style.h),
so that the matplotlib helpers draw a profile as report.html does: forward green,
backward red, as PopVision does."""

from typing import Any, Dict, Iterable, List

from popsim import _C

_STYLE = _C.profile_style()

# Event kinds of transfers around a task (the others are the tasks themselves),
# drawn as transfers.
TRANSFER_KINDS = tuple(_STYLE["transfer_kinds"])

# ExecutionTrace event kinds, in legend order.
KIND_COLOURS: Dict[str, str] = _STYLE["kind_colours"]
KIND_LABELS: Dict[str, str] = _STYLE["kind_labels"]

# Memory report categories in stacking order.
CATEGORY_COLOURS: Dict[str, str] = _STYLE["category_colours"]
OTHER_CATEGORY_COLOUR: str = _STYLE["other_category_colour"]


def category_colour(name: str) -> str:
    return CATEGORY_COLOURS.get(name, OTHER_CATEGORY_COLOUR)


def categories(ipu: Dict[str, Any]) -> Dict[str, int]:
    """{category: bytes} of one IPU of memory.json, always-live categories first."""
    return {**ipu["always_live"]["categories"], **ipu["not_always_live"]["categories"]}


def category_order(ipus: Iterable[Dict[str, Any]]) -> List[str]:
    """The categories of memory.json's IPUs in stacking order: the known ones in
    CATEGORY_COLOURS' order, then the others as they first appear."""
    seen = list(dict.fromkeys(name for ipu in ipus for name in categories(ipu)))
    return [name for name in CATEGORY_COLOURS if name in seen] + [
        name for name in seen if name not in CATEGORY_COLOURS]
