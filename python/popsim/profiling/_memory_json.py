"""A compiled model's memory as JSON (memory.json).

Per IPU: its limit, the always-live and not-always-live bytes by category,
the bytes kept off chip in Streaming Memory (offloaded tensors),
their totals, the peak (the plan's footprint: always-live memory plus the
activation arena and the stash, sized for the most that is live at once), the
largest tensors, and the program's ops with their cycles.

Sections the C++ bindings do not expose yet are null, and "unavailable" says
which binding each one needs. Each has its own function below, so adding a
binding means filling in one function.
"""

FORMAT_VERSION = 1


def _liveness(executable):
    """Live bytes per IPU at each program step, and which tensors are live.

    Needs: the memory plan's TensorSlot of each value (IPU, region, bytes,
    Lifetime first/last step) from Executable, e.g. a `memory_slots()` binding
    returning one dict per storage root with its description and type."""
    del executable
    return None


def _activation_peak(executable):
    """Per IPU, the most activation bytes live at one step and that step.

    Needs: IpuMemoryLayout.activationLivePeak and activationPeakStep in the
    memory_report() binding (or a binding of the MemoryPlan)."""
    del executable
    return None


UNAVAILABLE = {
    "liveness": "live bytes and tensors per program step: needs the memory plan's "
                "per-value slots (IPU, region, bytes, first/last step) in the bindings",
    "activation_peak": "the most activation bytes live at one step and that step: needs "
                       "IpuMemoryLayout.activationLivePeak/activationPeakStep in the bindings",
    "all_tensors": "only the largest tensors per IPU are reported "
                   "(device::kLargestTensors in memory_report.h)",
}


def _ipu_entry(ipu, program):
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
        "program": [{"op": s["op"], "task": s["task"], "cycles": s["cycles"],
                     "location": s["location"]} for s in program if s["ipu"] == ipu["ipu"]],
    }


def memory_document(executable, model, kind):
    """memory.json's content for a compiled executable."""
    report = executable.memory_report()
    program = executable.program()
    ipus = [_ipu_entry(ipu, program) for ipu in report["ipus"]]
    sections = {"liveness": _liveness(executable),
                "activation_peak": _activation_peak(executable)}
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
        **sections,
        "unavailable": {name: why for name, why in UNAVAILABLE.items()
                        if sections.get(name, None) is None},
    }
