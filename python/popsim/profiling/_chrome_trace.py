"""A model's last call as Chrome Trace Event JSON (opens in Perfetto and chrome://tracing).

Layout:
1. One process per IPU ("IPU k"), its thread "tasks" holding a complete event
   ("ph": "X") per task run: F<s> / B<s> / FB<s> (stage s's forward, backward,
   or the last stage's both) and U<k> (IPU k's weight update), with step,
   micro_batch and the pipeline cycle in args.
2. Inside each task of the call's first step, one event per op, from the
   program's per-op cycles. Every step runs the same ops, so one step shows them
   all while keeping the file small.
3. A "links" process, one thread per IPU, holding the transfers each IPU makes:
   inter-IPU copies it receives ("copy", with the IPUs they come from as
   from_ipus), its micro-batch of the inputs streamed from the host
   ("host_input"; the bytes its compute tiles receive, or copy from and to the
   IO tiles: "stream_copy"), outputs streamed back ("host_output") and
   off-chip tensors to and from Streaming Memory ("streaming").
4. A "host" process with the call's measured host wall time and, one thread per
   IPU, each task run on the host's clock (from when the IPU's thread starts it,
   waits for other IPUs included, to its end). Host time and simulated time
   differ, so these are tracks of their own, starting at 0.

Timestamps are simulated microseconds (cycles / clock_hz). The original
ExecutionTrace event is kept in each task and transfer event's args
("start_cycle", "end_cycle", ...), so popsim.profiling can rebuild it exactly.
Top-level key "popsim" (ignored by viewers) holds what the analyses need.
"""

import json
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Sequence, Tuple

from popsim.profiling._style import TRANSFER_KINDS

if TYPE_CHECKING:
    from popsim._trace import ExecutionTrace

FORMAT_VERSION = 1

HOST_PID = 1
LINKS_PID = 2
_IPU_PID_BASE = 100  # IPU k is process 100 + k
_TASK_TID = 1

# Reserved colour names of chrome://tracing's viewer (Perfetto picks its own). Only names
# that every version of the viewer knows: it rejects a trace with an unknown one.
_CHROME_COLOURS = {"forward": "good", "backward": "terrible", "forward+backward": "bad",
                   "update": "rail_response", "copy": "generic_work",
                   "host_input": "generic_work", "stream_copy": "generic_work",
                   "host_output": "generic_work",
                   "streaming": "generic_work"}


def ipu_pid(ipu: int) -> int:
    return _IPU_PID_BASE + ipu


def _metadata(pid: int, process: str, sort_index: int,
              threads: Dict[int, str]) -> List[Dict[str, Any]]:
    events = [{"ph": "M", "pid": pid, "tid": 0, "name": "process_name",
               "args": {"name": process}},
              {"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index",
               "args": {"sort_index": sort_index}}]
    for tid, name in threads.items():
        events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                       "args": {"name": name}})
    return events


class _Clock:
    """Cycles to simulated microseconds, rounded to nanoseconds the same way for
    every event so that nested events stay inside their parents."""

    def __init__(self, clock_hz: float) -> None:
        self._per_cycle = 1e6 / clock_hz

    def us(self, cycles: int) -> float:
        return round(cycles * self._per_cycle, 3)

    def span(self, start: int, end: int) -> Tuple[float, float]:
        ts = self.us(start)
        return ts, round(self.us(end) - ts, 3)


def _op_events(event: Dict[str, Any], ops: List[Dict[str, Any]], clock: _Clock,
               pid: int) -> List[Dict[str, Any]]:
    """Stage ops laid end to end inside the task event; none if their cycles do not
    add up to the task's, rather than a misleading picture."""
    if sum(op["cycles"] for op in ops) != event["end"] - event["start"]:
        return []
    result, start = [], event["start"]
    for op in ops:
        ts, dur = clock.span(start, start + op["cycles"])
        result.append({"name": op["name"], "cat": "op", "ph": "X", "pid": pid, "tid": _TASK_TID,
                       "ts": ts, "dur": dur,
                       "args": _op_args(op)})
        start += op["cycles"]
    return result


def _op_args(op: Dict[str, Any]) -> Dict[str, Any]:
    args = {"location": op["location"], "implementation": op["implementation"],
            "cycles": op["cycles"]}
    if op["temporary_bytes"]:  # matmuls and convolutions
        args.update(temporary_bytes=op["temporary_bytes"], passes=op["passes"])
    return args


def task_ops(program: Iterable[Dict[str, Any]]) -> Dict[Tuple[int, str], List[Dict[str, Any]]]:
    """Per (ipu, task), the ops its compute part runs, in order (inter-IPU copies are
    the task's "copy" event, not compute)."""
    ops: Dict[Tuple[int, str], List[Dict[str, Any]]] = {}
    for step in program:
        if step["op"] != "ipu_copy":
            ops.setdefault((step["ipu"], step["task"]), []).append(step)
    return ops


def simulated_events(trace: "ExecutionTrace", program: Iterable[Dict[str, Any]],
                     stages: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Every event of the simulated call (layout steps 1 to 3), metadata included."""
    clock = _Clock(trace.clock_hz)
    ops = task_ops(program)
    stage_of_ipu: Dict[int, List[Dict[str, Any]]] = {}
    for stage in stages:
        stage_of_ipu.setdefault(stage["ipu"], []).append(stage)
    events = []
    for ipu in range(trace.num_ipus):
        blocks = [b for s in stage_of_ipu.get(ipu, []) for b in s["blocks"]]
        label = f"IPU {ipu}" + (f" ({', '.join(blocks)})" if blocks else "")
        events += _metadata(ipu_pid(ipu), label, ipu, {_TASK_TID: "tasks"})
    events += _metadata(LINKS_PID, "links (IPU-Links and host streams)", trace.num_ipus,
                        {ipu + 1: f"IPU {ipu}" for ipu in range(trace.num_ipus)})
    for event in trace.events:
        ts, dur = clock.span(event["start"], event["end"])
        transfer = event["kind"] in TRANSFER_KINDS
        args = {"task": event["task"], "kind": event["kind"], "ipu": event["ipu"],
                "step": event["step"], "micro_batch": event["micro_batch"],
                "cycle": event["cycle"], "start_cycle": event["start"],
                "end_cycle": event["end"]}
        for key in ("from_ipus", "output", "io_tiles"):
            if key in event:
                args[key] = event[key]
        if transfer:
            name = event["kind"]
            if "from_ipus" in event:
                name += " from IPU " + ", ".join(str(ipu) for ipu in event["from_ipus"])
            pid, tid = LINKS_PID, event["ipu"] + 1
        else:
            name = event["task"]
            pid, tid = ipu_pid(event["ipu"]), _TASK_TID
        events.append({"name": name, "cat": event["kind"], "ph": "X", "pid": pid, "tid": tid,
                       "ts": ts, "dur": dur, "cname": _CHROME_COLOURS[event["kind"]],
                       "args": args})
        if not transfer and event["step"] == 0:
            events += _op_events(event, ops.get((event["ipu"], event["task"]), []), clock, pid)
    return events


def host_events(calls: int, wall_seconds: float, simulated_seconds: float,
                task_wall_times: Sequence[Dict[str, Any]] = ()) -> List[Dict[str, Any]]:
    """The host process (layout step 4): the last call's measured wall time, and
    each task run's (dicts of ipu, task, step, micro_batch, start and end seconds)."""
    ipus = sorted({run["ipu"] for run in task_wall_times})
    threads = {1: "wall clock of the last call"}
    threads.update({ipu + 2: f"IPU {ipu} tasks (host thread)" for ipu in ipus})
    events = _metadata(HOST_PID, "host", -1, threads)
    events.append({"name": "call (host wall time)", "cat": "host", "ph": "X", "pid": HOST_PID,
                   "tid": 1, "ts": 0, "dur": round(wall_seconds * 1e6, 3),
                   "args": {"call": calls, "wall_ms": round(wall_seconds * 1e3, 6),
                            "simulated_ms": round(simulated_seconds * 1e3, 6)}})
    for run in task_wall_times:
        ts = round(run["start"] * 1e6, 3)
        events.append({"name": run["task"], "cat": "host_task", "ph": "X", "pid": HOST_PID,
                       "tid": run["ipu"] + 2, "ts": ts,
                       "dur": round(run["end"] * 1e6 - ts, 3),
                       "args": {"ipu": run["ipu"], "task": run["task"], "step": run["step"],
                                "micro_batch": run["micro_batch"],
                                "wall_ms": round((run["end"] - run["start"]) * 1e3, 6)}})
    return events


def serialize_events(events: Iterable[Dict[str, Any]]) -> str:
    """Events as the comma-separated body of a JSON array (no brackets), so a cached
    body can be joined with per-call events without serializing it again."""
    return ",\n".join(json.dumps(event, separators=(",", ":")) for event in events)


def trace_document(simulated_body: str, host: Iterable[Dict[str, Any]],
                   popsim_data: Dict[str, Any]) -> str:
    """The whole trace.json text: cached simulated events plus this call's host events."""
    parts = [serialize_events(host)]
    if simulated_body:
        parts.append(simulated_body)
    return ('{"displayTimeUnit":"ns","otherData":{"generator":"popsim"},\n"popsim":'
            + json.dumps(popsim_data) + ',\n"traceEvents":[\n' + ",\n".join(parts) + "\n]}\n")
