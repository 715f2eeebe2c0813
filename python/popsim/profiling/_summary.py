"""The text summary of a profile, as `python -m popsim.profiling DIR` prints it."""

from typing import TYPE_CHECKING, Any, Dict, List, Optional, cast

from popsim.profiling._analysis import StageLoad, advice, analyse, mib

if TYPE_CHECKING:
    from popsim._trace import ExecutionTrace


def _percent(fraction: float) -> str:
    return f"{fraction:.1%}"


def _table(header: List[str], rows: List[List[str]]) -> List[str]:
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    lines = []
    for row in [header] + rows:
        cells = [str(cell).ljust(width) if i == 0 else str(cell).rjust(width)
                 for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines


def num_ipus(trace: Optional["ExecutionTrace"], memory: Optional[Dict[str, Any]]) -> int:
    """IPUs of a profile: its trace's, else its memory report's."""
    if trace is not None:
        return trace.num_ipus
    return len(memory["ipus"]) if memory is not None else 0


def overview_line(trace: Optional["ExecutionTrace"], memory: Optional[Dict[str, Any]],
                  host: Optional[Dict[str, Any]]) -> str:
    parts = []
    if memory is not None:
        parts.append(memory["chip"])
    parts.append(f"{num_ipus(trace, memory)} IPU(s)")
    if trace is not None:
        parts.append(f"{trace.pipeline['schedule']} schedule, {trace.pipeline['stages']} stage(s)")
        parts.append(f"{trace.total_cycles:,} cycles = {trace.seconds * 1e3:.3f} ms simulated "
                     "per call")
    if host:
        parts.append(f"host wall time {host['wall_seconds'] * 1e3:.3f} ms (call {host['calls']})")
    return ", ".join(parts)


def replication_lines(replication: Optional[Dict[str, Any]],
                      trace: Optional["ExecutionTrace"]) -> List[str]:
    """What replicas add: their count and each IPU's share of the call spent in
    collectives across them (the gradients' reduction, the gathers of sharded
    weights)."""
    if not replication or replication["replicas"] <= 1:
        return []
    lines = [f"Replicas: {replication['replicas']}, each on IPUs of its own running this "
             "program (the trace and memory are replica 0's)."]
    cycles = replication["collective_cycles"]
    if cycles and trace is not None:
        shares = ", ".join(f"IPU{ipu} {c:,} cycles ({_percent(c / trace.total_cycles)})"
                           for ipu, c in sorted(cycles.items(), key=lambda item: int(item[0])))
        lines.append(f"Collectives across replicas (reducing gradients, gathering sharded "
                     f"weights) per call: {shares}.")
    return lines + [""]


def summary_lines(model: str, kind: str, directory: str, trace: Optional["ExecutionTrace"],
                  stages: List[Dict[str, Any]], memory: Optional[Dict[str, Any]],
                  host: Optional[Dict[str, Any]] = None,
                  replication: Optional[Dict[str, Any]] = None,
                  sizing: Optional[Dict[str, Any]] = None) -> List[str]:
    """Summary lines of a model's profile: its last call's ExecutionTrace (or None),
    its stages (dicts of stage, ipu, blocks), memory.json's content (or None), the
    host's numbers of the last call (or None), the replicas (the trace's
    "replication" entry, or None) and the sizing report of the call (the
    trace's "sizing" entry, SizingReport.to_dict(), or None)."""
    analysis = analyse(trace, stages, memory)
    lines = [f"popsim profile of {model} ({kind})" + (f" in {directory}" if directory else ""),
             overview_line(trace, memory, host), ""] + replication_lines(replication, trace)
    memory_of = {m.ipu: m for m in analysis.memory}
    header = ["IPU", "busy", "compute", "idle", "memory", "of limit"]
    rows = []
    for ipu in range(num_ipus(trace, memory)):
        load = analysis.ipus[ipu] if analysis.ipus else None
        mem = memory_of.get(ipu)
        rows.append([
            str(ipu),
            _percent(load.busy_fraction) if load else "-",
            _percent(load.compute_fraction) if load else "-",
            _percent(load.idle_fraction) if load else "-",
            mib(mem.total) if mem else "-",
            f"{_percent(mem.fraction)} of {mib(mem.limit)}" if mem else "-"])
    lines += _table(header, rows)
    if analysis.ipus:
        lines.append(f"Idle (bubble) fraction over all IPUs: {_percent(analysis.idle_fraction)}")
    else:
        lines.append("No call yet: run the model to profile its execution.")
    if analysis.stages:
        slowest = cast(StageLoad, analysis.bottleneck).cycles or 1  # not None: there are stages
        lines += ["", "Stage balance (median cycles per micro-batch, transfers included):"]
        rows = [[str(s.stage), str(s.ipu), ", ".join(s.blocks) or "-", f"{s.cycles:,.0f}",
                 f"{s.compute_cycles:,.0f}", f"{s.host_cycles:,.0f}", f"{s.copy_cycles:,.0f}",
                 _percent(s.cycles / slowest)] for s in analysis.stages]
        lines += _table(["stage", "IPU", "blocks", "cycles", "compute", "host I/O", "copies",
                         "of slowest"], rows)
    if sizing is not None:
        from popsim._sizing import SizingReport  # the sizing report uses the profile's analysis

        report = SizingReport.from_dict(sizing)
        lines += [""] + report.overview_lines()[1:4] + [""] + report.time_lines()
    pipelined = trace is not None and trace.pipeline["schedule"] != "Sequential"
    tips = advice(analysis, pipelined=pipelined)
    if tips:
        lines += ["", "Advice:"] + [f"- {tip}" for tip in tips]
    return lines
