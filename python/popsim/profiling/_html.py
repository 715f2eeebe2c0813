"""report.html: one self-contained page (inline CSS, JS and data; no network)
drawing a profile's pipeline Gantt chart and memory per IPU (see report.js)."""

import functools
import html
import json
import os
import re
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple, cast

from popsim.profiling._style import (KIND_COLOURS, KIND_LABELS, TRANSFER_KINDS, categories,
                                     category_colour, category_order)

if TYPE_CHECKING:
    from popsim._trace import ExecutionTrace

_HERE = os.path.dirname(os.path.abspath(__file__))
_PLACEHOLDER = re.compile(r"__(TITLE|CSS|JS|DATA)__")
_HOST_PLACEHOLDER = "__HOST__"


@functools.lru_cache(maxsize=None)
def _asset(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as source:
        return source.read()


def _script_json(value: object) -> str:
    """JSON that cannot end the <script> element it is embedded in."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def _memory_data(memory: Dict[str, Any]) -> Dict[str, Any]:
    order = category_order(memory["ipus"])
    always_live = {name: name in memory["ipus"][0]["always_live"]["categories"]
                   for name in order} if memory["ipus"] else {}
    return {
        "categories": order,
        "always_live": always_live,
        "ipus": [{"ipu": ipu["ipu"], "limit": ipu["limit"], "total": ipu["total"],
                  "categories": categories(ipu)}
                 for ipu in memory["ipus"]],
    }


def page_data(model: str, kind: str, memory: Dict[str, Any], trace: Optional["ExecutionTrace"],
              summary: str) -> str:
    """What report.js draws. `trace` is an ExecutionTrace, or None before the first call."""
    kinds = list(KIND_COLOURS)
    memory_data = _memory_data(memory)
    data = {
        "model": model,
        "kind": kind,
        "chip": memory["chip"],
        "num_ipus": len(memory["ipus"]),
        "clock_hz": trace.clock_hz if trace is not None else None,
        "kinds": kinds,
        "transfer_kinds": list(TRANSFER_KINDS),
        "kind_colours": KIND_COLOURS,
        "kind_labels": KIND_LABELS,
        "category_colours": {name: category_colour(name) for name in memory_data["categories"]},
        "memory": memory_data,
        "trace": None,
        "summary": summary,
    }
    if trace is not None:
        index = {kind_name: i for i, kind_name in enumerate(kinds)}
        data["trace"] = {
            "total_cycles": trace.total_cycles,
            "schedule": trace.pipeline["schedule"],
            "stages": trace.pipeline["stages"],
            "events": [[e["ipu"], index[e["kind"]], e["start"], e["end"], e["micro_batch"],
                        e["step"], e["task"]] for e in trace.events],
        }
    return _script_json(data)


def report_parts(title: str, data_json: str) -> Tuple[str, str]:
    """The page, from page_data()'s JSON, as the text before and after the host's
    numbers: a call's page is before + host_json(host) + after, so callers render the
    parts once per compilation."""
    values = {"TITLE": html.escape(title), "CSS": _asset("report.css"),
              "JS": _asset("report.js"), "DATA": data_json}
    before, after = _asset("report.html").split(_HOST_PLACEHOLDER)
    # One pass per part, so that no value is searched for the other placeholders.
    # (cast: the tuple has the two parts, which mypy cannot see through tuple().)
    return cast(Tuple[str, str],
                tuple(_PLACEHOLDER.sub(lambda match: values[match.group(1)], part)
                      for part in (before, after)))


def host_json(host: Mapping[str, float]) -> str:
    """The host's numbers of a call, for the page."""
    return _script_json(host)


def render_report(title: str, data_json: str, host: Mapping[str, float]) -> str:
    """The page, from page_data()'s JSON and the host's numbers for this call."""
    before, after = report_parts(title, data_json)
    return before + host_json(host) + after
