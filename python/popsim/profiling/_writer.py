"""Writes a model's profile files while it compiles and runs.

After compiling: memory.json, and report.html with the memory alone. After
each call: trace.json and report.html. Every call of a compiled program runs
the same schedule on the simulated clock (the executable replays it once at
compile time), so the simulated part of both files is built once per
compilation and cached as text; a call only adds its measured host wall time
and writes the files. Files are replaced atomically, so a reader never sees
half a file.
"""

import json
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from popsim._trace import ExecutionTrace
from popsim.profiling import _layout
from popsim.profiling._chrome_trace import (FORMAT_VERSION, host_events, serialize_events,
                                            simulated_events, trace_document)
from popsim.profiling._html import host_json, page_data, render_report, report_parts
from popsim.profiling._memory_json import memory_document
from popsim.profiling._summary import summary_lines

if TYPE_CHECKING:
    from popsim._executor import Program
    from popsim._sizing import SizingReport


def _write_atomically(path: str, text: str) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)


def replication_meta(executable: "Program", trace: ExecutionTrace,
                     replicas: int) -> Dict[str, Any]:
    """The job's replica count and, per IPU, the cycles a call spends in
    collectives across replicas: the gradients' (once per step, in the IPU's
    gradient-norm or update task) and the gathers of sharded weights (in
    each task that reads one, once per micro-batch)."""
    per_run: Dict[int, Dict[str, int]] = {}
    for step in executable.program():
        if step.op.startswith("replica_"):
            per_run.setdefault(step.ipu, {}).setdefault(step.task, 0)
            per_run[step.ipu][step.task] += step.cycles
    runs: Dict[Tuple[int, str], Set[Tuple[int, int]]] = {}
    for event in trace.events:
        runs.setdefault((event["ipu"], event["task"]), set()).add(
            (event["step"], event["micro_batch"]))
    cycles = {str(ipu): sum(c * len(runs.get((ipu, task), ())) for task, c in tasks.items())
              for ipu, tasks in per_run.items()}
    return {"replicas": replicas, "collective_cycles": cycles}


def stage_list(assigned: Iterable[Tuple[str, int, int]]) -> List[Dict[str, Any]]:
    """Stages as (block, stage, ipu) tuples, the strategy's assignment, grouped into
    dicts of stage, ipu and blocks."""
    stages: Dict[int, Dict[str, Any]] = {}  # by stage
    for block, stage, ipu in assigned:
        entry = stages.setdefault(stage, {"stage": stage, "ipu": ipu, "blocks": []})
        entry["blocks"].append(block)
    return [stages[s] for s in sorted(stages)]


class _Compiled:
    """What one compilation contributes to the files, computed once."""

    def __init__(self, executable: "Program", model: str, kind: str,
                 stages: List[Dict[str, Any]], compile_seconds: float, replicas: int) -> None:
        self.executable = executable
        self.model = model
        self.kind = kind
        self.stages = stages
        self.compile_seconds = compile_seconds
        self.replicas = replicas
        self.memory = memory_document(executable, model, kind)
        # Made at the first call (build_call_parts):
        self.trace_body: Optional[str] = None
        self.meta: Dict[str, Any] = {}
        self.report: Tuple[str, str] = ("", "")  # report.html before and after the host's numbers

    def build_call_parts(self, directory: str,
                         sizing: Optional[Callable[[], "SizingReport"]] = None) -> None:
        trace = ExecutionTrace.of(self.executable)
        self.trace_body = serialize_events(
            simulated_events(trace, [step.to_dict() for step in self.executable.program()],
                             self.stages))
        self.meta = {"format": "popsim-trace", "version": FORMAT_VERSION, "model": self.model,
                     "kind": self.kind, "clock_hz": trace.clock_hz,
                     "total_cycles": trace.total_cycles, "pipeline": trace.pipeline,
                     "stages": self.stages, "compile_seconds": self.compile_seconds,
                     "replication": replication_meta(self.executable, trace, self.replicas)}
        if sizing is not None:
            self.meta["sizing"] = sizing().to_dict()
        self.report = report_parts(self.model, self.page_json(directory, trace))

    def page_json(self, directory: str, trace: Optional[ExecutionTrace]) -> str:
        """page_data() for report.html; `trace` is None before the first call."""
        replication = self.meta["replication"] if self.meta else None
        summary = "\n".join(summary_lines(self.model, self.kind, directory, trace, self.stages,
                                          self.memory, replication=replication,
                                          sizing=self.meta.get("sizing")))
        return page_data(self.model, self.kind, self.memory, trace, summary)


class ProfileWriter:
    """The profile files of one model (one executor), in its own subdirectory."""

    def __init__(self, root: str, kind: str, model_name: Optional[str] = None) -> None:
        self.root = root
        self.kind = kind
        self.directory = _layout.claim_model_directory(root, kind, model_name)
        self._compiled: Optional[_Compiled] = None
        self._calls = 0

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def after_compile(self, executable: "Program", model: str,
                      assigned_stages: Iterable[Tuple[str, int, int]], compile_seconds: float,
                      replicas: int = 1) -> None:
        self._compiled = _Compiled(executable, model, self.kind, stage_list(assigned_stages),
                                   compile_seconds, replicas)
        compiled = self._compiled
        _write_atomically(self._path(_layout.MEMORY_FILE), json.dumps(compiled.memory, indent=1))
        _write_atomically(self._path(_layout.REPORT_FILE),
                          render_report(compiled.model, compiled.page_json(self.directory, None),
                                        {"calls": 0}))

    def after_call(self, wall_seconds: float,
                   sizing: Optional[Callable[[], "SizingReport"]] = None) -> None:
        """Writes the call's files; `sizing` makes the call's sizing report
        (asked once per compilation: every call is alike)."""
        compiled = self._compiled
        assert compiled is not None, "after_call() before after_compile()"
        if compiled.trace_body is None:
            compiled.build_call_parts(self.directory, sizing)
        assert compiled.trace_body is not None
        self._calls += 1
        simulated = compiled.meta["total_cycles"] / compiled.meta["clock_hz"]
        host = {"calls": self._calls, "wall_seconds": wall_seconds}
        meta = dict(compiled.meta, host=host)
        _write_atomically(self._path(_layout.TRACE_FILE),
                          trace_document(compiled.trace_body,
                                         host_events(self._calls, wall_seconds, simulated,
                                                     [run.to_dict() for run in
                                                      compiled.executable.task_wall_times()]),
                                         meta))
        before, after = compiled.report
        _write_atomically(self._path(_layout.REPORT_FILE), before + host_json(
            {"calls": self._calls, "wall_ms": wall_seconds * 1e3}) + after)
