"""A compiled model's memory as JSON (memory.json).

Per IPU: its limit, the always-live and not-always-live bytes by category,
the bytes kept off chip in Streaming Memory (offloaded tensors),
their totals, the peak (the plan's footprint: always-live memory plus the
activation arena and the stash, sized for the most that is live at once), the
largest tensors, the program's ops with their cycles (matmuls and convolutions
with their temporaries and passes), and the temporaries' budget under
availableMemoryProportion with the ops it splits into serial passes.

Then, from the memory plan: liveness over the program's steps (activation
bytes live at each step of each IPU), each IPU's activation peak and its step,
and every planned tensor with its lifetime.
"""

from typing import TYPE_CHECKING, Any, Dict, List

if TYPE_CHECKING:
    from popsim._executor import Program

FORMAT_VERSION = 2


def _activations_by_ipu(slots: List[Dict[str, Any]]) -> Dict[int, List[Dict[str, Any]]]:
    by_ipu: Dict[int, List[Dict[str, Any]]] = {}
    for slot in slots:
        if slot["region"] == "activations" and not slot["off_chip"]:
            by_ipu.setdefault(slot["ipu"], []).append(slot)
    return by_ipu


def _liveness(slots: List[Dict[str, Any]],
              program: List[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    """Per IPU, at each program step that runs one of its ops: the activation bytes and
    tensors live then (a tensor is live from the step that writes it to its last
    reader). Always-live memory comes on top and does not change."""
    activations = _activations_by_ipu(slots)
    liveness: Dict[str, List[Dict[str, Any]]] = {}
    for index, step in enumerate(program):
        live = [s for s in activations.get(step["ipu"], [])
                if s["first_step"] <= index <= s["last_step"]]
        liveness.setdefault(str(step["ipu"]), []).append(
            {"step": index, "op": step["op"], "task": step["task"],
             "live_bytes": sum(s["bytes"] for s in live), "live_tensors": len(live)})
    return liveness


def _activation_peak(liveness: Dict[str, List[Dict[str, Any]]]) -> Dict[str, Dict[str, Any]]:
    """Per IPU, the most activation bytes live at one step, and that step. The memory
    plan's activation arena is at least this (buffers share it when their lifetimes
    do not overlap, and alignment rounds it up)."""
    peaks = {}
    for ipu, points in liveness.items():
        peak = max(points, key=lambda p: p["live_bytes"])
        peaks[ipu] = {"bytes": peak["live_bytes"], "step": peak["step"], "op": peak["op"],
                      "task": peak["task"]}
    return peaks


def _all_tensors(slots: List[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    """Per IPU, every planned tensor, largest first, with its category and lifetime."""
    tensors: Dict[str, List[Dict[str, Any]]] = {}
    for slot in sorted(slots, key=lambda s: -s["bytes"]):
        tensors.setdefault(str(slot["ipu"]), []).append(
            {"description": slot["description"], "type": slot["type"],
             "category": slot["region"], "bytes": slot["bytes"],
             "first_step": slot["first_step"], "last_step": slot["last_step"],
             "off_chip": slot["off_chip"]})
    return tensors


def _ipu_entry(ipu: Dict[str, Any], program: List[Dict[str, Any]]) -> Dict[str, Any]:
    categories = ipu["categories"]
    always = {name: c["bytes"] for name, c in categories.items() if c["always_live"]}
    not_always = {name: c["bytes"] for name, c in categories.items() if not c["always_live"]}
    return {
        "ipu": ipu["ipu"],
        "limit": ipu["capacity"],
        "total": ipu["total"],
        "peak": ipu["total"],
        "free": ipu["capacity"] - ipu["total"],
        "fraction_of_limit": ipu["total"] / ipu["capacity"] if ipu["capacity"] else None,
        "always_live": {"total": ipu["always_live"], "categories": always},
        "not_always_live": {"total": ipu["not_always_live"], "categories": not_always},
        "streaming_memory": {"total": ipu["off_chip"], "categories": ipu["streaming_memory"]},
        "largest_tensors": ipu["largest_tensors"],
        "program": [_program_entry(s) for s in program if s["ipu"] == ipu["ipu"]],
        "temporaries": _temporaries(ipu, program),
    }


def _program_entry(step: Dict[str, Any]) -> Dict[str, Any]:
    entry = {"op": step["op"], "task": step["task"], "cycles": step["cycles"],
             "location": step["location"]}
    if step["temporary_bytes"]:
        entry.update(temporary_bytes=step["temporary_bytes"], passes=step["passes"])
    return entry


def _temporaries(ipu: Dict[str, Any], program: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The budget availableMemoryProportion gives one matmul or convolution on the IPU,
    and the ops that need more, so run in serial passes (most passes first)."""
    split = sorted((s for s in program if s["ipu"] == ipu["ipu"] and s["passes"] > 1),
                   key=lambda s: -s["passes"])
    return {
        "peak": ipu["categories"]["temporaries"]["bytes"],
        "budget": ipu["temporary_budget"],
        "available_memory_proportion": round(ipu["temporary_budget"] / ipu["capacity"], 4)
        if ipu["capacity"] else None,
        "split_ops": [{"op": s["op"], "task": s["task"], "location": s["location"],
                       "passes": s["passes"], "bytes_per_pass": s["temporary_bytes"],
                       "bytes_in_one_pass": s["unbounded_temporary_bytes"]} for s in split],
    }


def memory_document(executable: "Program", model: str, kind: str) -> Dict[str, Any]:
    """memory.json's content for a compiled executable."""
    report = executable.memory_report().to_dict()
    program = [step.to_dict() for step in executable.program()]
    ipus = [_ipu_entry(ipu, program) for ipu in report["ipus"]]
    slots = [slot.to_dict() for slot in executable.memory_slots()]
    liveness = _liveness(slots, program)
    return {
        "format": "popsim-memory",
        "version": FORMAT_VERSION,
        "model": model,
        "kind": kind,
        "chip": report["chip"],
        "ipus": ipus,
        "totals": {
            "limit": sum(i["limit"] for i in ipus),
            "total": sum(i["total"] for i in ipus),
            "always_live": sum(i["always_live"]["total"] for i in ipus),
            "not_always_live": sum(i["not_always_live"]["total"] for i in ipus),
        },
        "liveness": liveness,
        "activation_peak": _activation_peak(liveness),
        "all_tensors": _all_tensors(slots),
    }
