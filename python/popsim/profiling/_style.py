"""Colours and labels shared by report.html and the matplotlib helpers, so both
draw a profile the same way: forward green, backward red, as PopVision does."""

from typing import Any, Dict, Iterable, List

from popsim._trace import TRANSFER_KINDS  # noqa: F401 (the kinds drawn as transfers)

# ExecutionTrace event kinds, in legend order.
KIND_COLOURS = {
    "forward": "#2e9e44",
    "backward": "#d1343a",
    "forward+backward": "#c98a12",
    "update": "#3569c9",
    "copy": "#8c8c8c",
    "host_input": "#5fb3d9",
    "stream_copy": "#2f7fa6",
    "host_output": "#9a63c4",
    "streaming": "#b58b5c",
}

KIND_LABELS = {
    "forward": "forward (F)",
    "backward": "backward (B)",
    "forward+backward": "last stage's forward + backward (FB)",
    "update": "weight update (U)",
    "copy": "inter-IPU copy",
    "host_input": "host input",
    "stream_copy": "host data on the compute tiles",
    "host_output": "host output",
    "streaming": "Streaming Memory (off-chip tensors)",
}

TASK_KINDS = ("forward", "backward", "forward+backward", "update")

# Memory report categories (csrc/device/memory_report.cpp), in stacking order.
CATEGORY_COLOURS = {
    "weights": "#2e6fb7",
    "gradient accumulators": "#6fa8dc",
    "optimizer state": "#8e5cb5",
    "random state": "#c27ba0",
    "constants": "#999999",
    "input streams": "#5fb3d9",
    "code": "#f1b04c",
    "activations": "#2e9e44",
    "stash": "#d1343a",
}
OTHER_CATEGORY_COLOUR = "#444444"


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
