"""The sizing report: what a job needs and how long it takes on the simulated
IPUs, from a compiled program and its last call (usually a cost-only one,
popsim.sizeJob).

Every figure comes from the memory plan and the simulated clock; none is
measured on the host. A replicated job's replicas run the same program on
their own IPUs, so one replica's IPUs stand for all of them; throughput
counts every replica of every process.

Where an IPU's time goes is read off the call's timeline. Each task event
splits by its ops' costs (their sync, exchange and compute parts, with
collectives and recomputed ops apart); transfer events are inter-IPU
copies, host I/O or Streaming Memory; and the time the IPU waits splits by
what it waits in: the sync after every pipeline cycle, a pipeline cycle in
which it has no task (the pipeline filling or draining), a transfer still in
flight, or the other IPUs of a pipeline cycle (stages of unequal length).
The parts add up to the call's cycles on every IPU.
"""

import contextlib
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Tuple

import torch

from popsim import _replication
from popsim._trace import ExecutionTrace
from popsim.errors import InputError
from popsim.options import Options

if TYPE_CHECKING:
    from popsim._executor import Executor, Program

# Where an IPU's time goes, in the order the report lists the parts.
TIME_PARTS = ("compute", "exchange", "syncs", "collectives", "recomputation", "inter-IPU copies",
              "host I/O", "Streaming Memory", "pipeline fill and drain", "waiting for other IPUs")

_TASK_KINDS = ("forward", "backward", "forward+backward", "update")

Interval = Tuple[int, int]


def mib(size: float) -> str:
    """`size` bytes in MiB, as the profile's summary writes them."""
    from popsim.profiling._analysis import mib as profile_mib  # popsim.profiling loads lazily

    return profile_mib(size)


@dataclass
class IpuSizing:
    """One IPU of one replica in a :class:`popsim.SizingReport`: its memory and where its time goes.

    Attributes:
        ipu: The IPU's index in its replica.
        memory_bytes: The bytes the program needs on the IPU, by the memory plan.
        capacity_bytes: The bytes the IPU holds for the program (its compute tiles' memory).
        memory_by_category: ``memory_bytes`` by category (weights, activations, code,
            temporaries, optimizer state, ...).
        busy_share: The share of the call the IPU spent on its tasks and transfers; it waited
            for the rest.
        time_cycles: The call's cycles on this IPU by part (compute, exchange, syncs,
            collectives, recomputation, inter-IPU copies, host I/O, Streaming Memory, pipeline
            fill and drain, waiting for other IPUs); they add up to the call's cycles.
    """
    ipu: int
    memory_bytes: int
    capacity_bytes: int
    memory_by_category: Dict[str, int]
    busy_share: float
    time_cycles: Dict[str, int]

    @property
    def fits(self) -> bool:
        """Whether the program fits the IPU's memory (``memory_bytes <= capacity_bytes``)."""
        return self.memory_bytes <= self.capacity_bytes


@dataclass
class SizingReport:
    """What a job needs and how long it takes on the simulated IPUs, from one call.

    :func:`popsim.sizeJob` and :meth:`popsim.Executor.sizingReport` make it. ``str(report)``
    prints it; :meth:`to_dict` gives its figures. Every figure comes from the memory plan and
    the simulated clock, none is measured on the host. A replicated job's replicas run the same
    program on their own IPUs, so one replica's IPUs stand for all of them. The properties
    :attr:`call_seconds`, :attr:`step_cycles`, :attr:`step_seconds`, :attr:`throughput`,
    :attr:`total_ipus` and :attr:`fits` are derived from the fields.

    Attributes:
        model: The model's class name.
        chip: The simulated IPU, such as ``"Mk2 (GC200)"``.
        clock_hz: The simulated clock frequency, in Hz.
        replicas: The replicas of the whole job, every process's.
        ipus_per_replica: The IPUs each replica runs on.
        processes: The processes the job's replicas are spread over.
        steps_per_call: The steps (device iterations) one call makes.
        micro_batches_per_step: The micro-batches of each replica in a step (the gradient
            accumulation of a training job, 1 for inference).
        items_per_call: The items one call processes over all replicas and processes (the
            length of the batch dimension of its inputs).
        call_cycles: The simulated cycles of the call.
        cost_only: Whether the call was cost-only (nothing was computed).
        ipus: One :class:`popsim.IpuSizing` per IPU of one replica.
        advice: What to change, one line each, the most important first.
    """
    model: str
    chip: str
    clock_hz: float
    replicas: int
    ipus_per_replica: int
    processes: int
    steps_per_call: int
    micro_batches_per_step: int
    items_per_call: int
    call_cycles: int
    cost_only: bool
    ipus: List[IpuSizing] = field(default_factory=list)
    advice: List[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        """Whether the program fits the memory of every IPU."""
        return all(ipu.fits for ipu in self.ipus)

    @property
    def call_seconds(self) -> float:
        """The simulated seconds of the call."""
        return self.call_cycles / self.clock_hz

    @property
    def step_cycles(self) -> float:
        """The simulated cycles of one step: a device iteration (an optimizer step in training)."""
        return self.call_cycles / self.steps_per_call

    @property
    def step_seconds(self) -> float:
        """The simulated seconds of one step: a device iteration (an optimizer step in training)."""
        return self.step_cycles / self.clock_hz

    @property
    def throughput(self) -> float:
        """Simulated items per second over all replicas and processes (0 for a call of 0 cycles)."""
        return self.items_per_call / self.call_seconds if self.call_cycles else 0.0

    @property
    def total_ipus(self) -> int:
        """The IPUs of the job: ``replicas * ipus_per_replica``."""
        return self.replicas * self.ipus_per_replica

    def time_shares(self) -> Dict[str, float]:
        """Where the IPUs' time goes, as shares of all of one replica's IPUs' time.

        Returns:
            For each part of an IPU's time (compute, exchange, syncs, ..., waiting for other
            IPUs, in the report's order), its cycles summed over one replica's IPUs divided by
            the call's cycles times the number of IPUs: the shares add up to 1 (all 0 if the
            call took no cycles).
        """
        total = self.call_cycles * len(self.ipus)
        return {part: sum(ipu.time_cycles[part] for ipu in self.ipus) / total if total else 0.0
                for part in TIME_PARTS}

    def to_dict(self) -> Dict[str, Any]:
        """The report's figures as plain data, as a profile's ``trace.json`` keeps them.

        Returns:
            The fields (each IPU's a dict too) and the derived figures ``fits``,
            ``call_seconds``, ``step_cycles``, ``step_seconds``, ``throughput`` and
            ``total_ipus``, with ``fits`` in each IPU's dict; :meth:`from_dict` reads it back.
        """
        result = asdict(self)
        result.update(fits=self.fits, call_seconds=self.call_seconds,
                      step_cycles=self.step_cycles, step_seconds=self.step_seconds,
                      throughput=self.throughput, total_ipus=self.total_ipus)
        for ipu, entry in zip(self.ipus, result["ipus"]):
            entry["fits"] = ipu.fits
        return result

    @classmethod
    def from_dict(cls, entry: Dict[str, Any]) -> "SizingReport":
        """Rebuilds a report from what :meth:`to_dict` gave.

        Args:
            entry: A dict :meth:`to_dict` made, as a profile's ``trace.json`` keeps it; keys
                other than the fields (the derived figures) are ignored.

        Returns:
            The report.
        """
        fields = {name: entry[name] for name in cls.__dataclass_fields__}
        fields["ipus"] = [IpuSizing(**{name: ipu[name] for name in IpuSizing.__dataclass_fields__})
                          for ipu in entry["ipus"]]
        return cls(**fields)

    def __str__(self) -> str:
        return "\n".join(self.overview_lines() + [""] + self.memory_lines() + [""]
                         + self.time_lines() + self.advice_lines())

    def overview_lines(self) -> List[str]:
        """The overview that ``str(report)`` starts with, one line each.

        Returns:
            Lines for the model and chip, the job's replicas, IPUs and items per call, the
            simulated step time, the throughput and whether the job fits (which IPUs do not).
        """
        ghz = self.clock_hz / 1e9
        how = "cost-only: nothing was computed" if self.cost_only else "from a computing run"
        per_call = (f"{self.steps_per_call} steps of " if self.steps_per_call > 1 else "a step of ")
        processes = f" in {self.processes} processes" if self.processes > 1 else ""
        return [
            f"Sizing of {self.model} on simulated {self.chip} IPUs ({how})",
            f"Job: {self.replicas} replica(s) x {self.ipus_per_replica} IPU(s) = "
            f"{self.total_ipus} IPUs{processes}; a call is {per_call}"
            f"{self.micro_batches_per_step} micro-batch(es) per replica, "
            f"{self.items_per_call:,} items over all replicas",
            f"Simulated step: {self.step_cycles:,.0f} cycles = {self.step_seconds * 1e3:,.2f} ms "
            f"at {ghz:.3g} GHz",
            f"Simulated throughput: {self.throughput:,.0f} items/s over {self.total_ipus} IPUs "
            f"({self.throughput / self.total_ipus:,.0f} per IPU)",
            "Fits: " + ("yes, on every IPU" if self.fits else "NO: " + ", ".join(
                f"IPU {ipu.ipu} needs {mib(ipu.memory_bytes)} of {mib(ipu.capacity_bytes)}"
                for ipu in self.ipus if not ipu.fits)),
        ]

    def memory_lines(self) -> List[str]:
        """The memory part of ``str(report)``.

        Returns:
            A heading, then one line per IPU of one replica with its memory against its
            capacity and its four largest categories.
        """
        lines = ["Memory per IPU (one replica's; the largest categories):"]
        for ipu in self.ipus:
            largest = sorted(((b, name) for name, b in ipu.memory_by_category.items() if b),
                             reverse=True)[:4]
            share = ipu.memory_bytes / ipu.capacity_bytes if ipu.capacity_bytes else 0.0
            lines.append(f"  IPU {ipu.ipu}: {mib(ipu.memory_bytes)} of {mib(ipu.capacity_bytes)} "
                         f"({share:.0%}{'' if ipu.fits else ', does NOT fit'}): "
                         + ", ".join(f"{name} {mib(size)}" for size, name in largest))
        return lines

    def time_lines(self) -> List[str]:
        """The table of where each IPU's time goes, as ``str(report)`` prints it.

        Returns:
            A heading, then a table with one row per IPU of one replica, giving its busy share
            and the share of the call of each part of its time that any IPU spends time on.
        """
        lines = ["Where each IPU's time goes (share of the simulated call):"]
        parts = [p for p in TIME_PARTS if any(ipu.time_cycles[p] for ipu in self.ipus)]
        header = ["IPU", "busy"] + parts
        rows = [[str(ipu.ipu), f"{ipu.busy_share:.0%}"]
                + [f"{ipu.time_cycles[p] / self.call_cycles:.1%}" if self.call_cycles else "-"
                   for p in parts] for ipu in self.ipus]
        widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
        for row in [header] + rows:
            lines.append("  " + "  ".join(cell.rjust(width) for cell, width in zip(row, widths)))
        return lines

    def advice_lines(self) -> List[str]:
        """The advice part of ``str(report)``.

        Returns:
            A blank line, the heading and one bulleted line per piece of advice; no lines
            without advice.
        """
        return ["", "Advice:"] + [f"- {line}" for line in self.advice] if self.advice else []


def _task_parts(program_steps: Iterable[Dict[str, Any]]) -> Dict[Tuple[int, str], Dict[str, int]]:
    """Per (IPU, task), its ops' cycles by part (the copies it receives are
    its own event, not part of its compute)."""
    parts: Dict[Tuple[int, str], Dict[str, int]] = {}
    for op in program_steps:
        if op["op"] == "ipu_copy":
            continue
        task = parts.setdefault((op["ipu"], op["task"]), dict.fromkeys(TIME_PARTS, 0))
        if op["recomputed"]:
            task["recomputation"] += op["cycles"]
        elif op["collective"]:
            task["collectives"] += op["cycles"]
        else:
            task["compute"] += op["compute_cycles"]
            task["exchange"] += op["exchange_cycles"]
            task["syncs"] += op["sync_cycles"]
    return parts


def _split(cycles: int, weights: Dict[str, int], into: Dict[str, int]) -> None:
    """Adds `cycles` to `into` in proportion to `weights` (all to compute if
    they are all zero), the rounding remainder to the largest part."""
    total = sum(weights.values())
    if total == 0:
        into["compute"] += cycles
        return
    given = 0
    for part, weight in weights.items():
        share = cycles * weight // total
        into[part] += share
        given += share
    into[max(weights, key=lambda p: weights[p])] += cycles - given


def _merged(intervals: List[Interval]) -> List[Interval]:
    result: List[Interval] = []
    for start, end in sorted(intervals):
        if result and start <= result[-1][1]:
            result[-1] = (result[-1][0], max(result[-1][1], end))
        elif end > start:
            result.append((start, end))
    return result


def _overlap(gaps: List[Interval], intervals: List[Interval]) -> int:
    """Cycles of sorted, disjoint `gaps` covered by sorted, disjoint `intervals`."""
    total, j = 0, 0
    for start, end in gaps:
        while j < len(intervals) and intervals[j][1] <= start:
            j += 1
        k = j
        while k < len(intervals) and intervals[k][0] < end:
            total += min(end, intervals[k][1]) - max(start, intervals[k][0])
            k += 1
    return total


def _gaps(span: Interval, busy: List[Interval]) -> List[Interval]:
    """The parts of `span` no interval of `busy` (sorted, disjoint) covers."""
    gaps, at = [], span[0]
    for start, end in busy:
        if start > at:
            gaps.append((at, min(start, span[1])))
        at = max(at, end)
    if at < span[1]:
        gaps.append((at, span[1]))
    return [g for g in gaps if g[1] > g[0]]


def time_breakdown(trace: ExecutionTrace, program_steps: List[Dict[str, Any]],
                   cycle_spans: List[Interval], sync_cycles: int) -> List[Dict[str, int]]:
    """Per IPU, the call's cycles by TIME_PARTS (see the module docstring)."""
    task_parts = _task_parts(program_steps)
    ipus = trace.num_ipus
    times = [dict.fromkeys(TIME_PARTS, 0) for _ in range(ipus)]
    busy: List[List[Tuple[int, int, int]]] = [[] for _ in range(ipus)]  # (cycle, start, end)
    has_task: List[set] = [set() for _ in range(ipus)]
    waits_on: List[Dict[str, List[Interval]]] = [
        {"host I/O": [], "Streaming Memory": []} for _ in range(ipus)]
    for event in trace.events:
        ipu, kind, cycles = event["ipu"], event["kind"], event["end"] - event["start"]
        part = ("Streaming Memory" if kind == "streaming" else
                "inter-IPU copies" if kind == "copy" else
                None if kind in _TASK_KINDS else "host I/O")
        if not trace.occupies_ipu(event):
            assert part is not None, "tasks occupy their IPU"
            if part != "inter-IPU copies":
                waits_on[ipu][part].append((event["start"], event["end"]))
            continue
        busy[ipu].append((event["cycle"], event["start"], event["end"]))
        if part is None:
            has_task[ipu].add(event["cycle"])
            _split(cycles, task_parts.get((ipu, event["task"]), {}), times[ipu])
        else:
            times[ipu][part] += cycles
    # Outside every pipeline cycle: a step or the call waiting for its last
    # outputs or stores to leave (the same for every IPU).
    outside = trace.total_cycles - sum(end - start for start, end in cycle_spans)
    for ipu in range(ipus):
        time = times[ipu]
        by_cycle: Dict[int, List[Interval]] = {}
        for cycle, start, end in busy[ipu]:
            by_cycle.setdefault(cycle, []).append((start, end))
        gaps: List[Interval] = []
        for cycle, (start, end) in enumerate(cycle_spans):
            sync = min(sync_cycles, end - start)
            time["syncs"] += sync
            if cycle not in has_task[ipu]:
                time["pipeline fill and drain"] += end - start - sync - sum(
                    e - s for s, e in by_cycle.get(cycle, []))
                continue
            gaps += _gaps((start, end - sync), _merged(by_cycle.get(cycle, [])))
        waiting = sum(end - start for start, end in gaps)
        host = _overlap(gaps, _merged(waits_on[ipu]["host I/O"]))
        streaming = min(waiting - host, _overlap(gaps, _merged(waits_on[ipu]["Streaming Memory"])))
        time["host I/O"] += host
        time["Streaming Memory"] += streaming
        time["waiting for other IPUs"] += waiting - host - streaming
        time["host I/O"] += outside
    return times


def _memory_advice(ipu: IpuSizing, chip: str) -> str:
    """What to change for an IPU whose program does not fit, by what fills it."""
    over = ipu.memory_bytes - ipu.capacity_bytes
    sizes = ipu.memory_by_category
    largest = max(sizes, key=lambda name: sizes[name])
    remedies = {
        "activations": "a smaller micro-batch, recomputation (Options.Training"
                       ".recomputation(True) or popsim.recomputationCheckpoint), or more "
                       "pipeline stages",
        "stash": "recomputation checkpoints (fewer stashed activations), fewer pipeline stages "
                 "in flight, or a smaller micro-batch",
        "optimizer state": "optimizer state in Streaming Memory (Options.TensorLocations"
                           ".setOptimizerLocation(popsim.TensorLocationSettings()"
                           ".useOnChipStorage(False))) or sharded over replicas "
                           "(.useReplicatedTensorSharding(True))",
        "gradient accumulators": "an optimizer that combines them with its state (SGD with "
                                 "momentum, accum_type float16) or more IPUs per replica",
        "weights": "more IPUs per replica (popsim.Block and an execution strategy)",
        "code": "fewer distinct ops per IPU (more IPUs per replica)",
        "temporaries": f"a lower availableMemoryProportion for IPU{ipu.ipu} "
                       "(Options.setAvailableMemoryProportion)",
    }
    remedy = remedies.get(largest, "a smaller micro-batch or more IPUs per replica")
    return (f"IPU {ipu.ipu} does not fit: it needs {mib(over)} more than its "
            f"{mib(ipu.capacity_bytes)} ({chip}), mostly {largest} ({mib(sizes[largest])}). "
            f"Try {remedy}.")


def sizing_report(program: "Program", model: str, replicas: int, processes: int,
                  steps_per_call: int, micro_batches_per_step: int, items_per_call: int,
                  stages: List[Dict[str, Any]]) -> SizingReport:
    """The report of `program`'s last call (see SizingReport)."""
    # Imported here: popsim.profiling loads only when used.
    from popsim.profiling._analysis import advice, analyse
    from popsim.profiling._memory_json import memory_document

    trace = ExecutionTrace.of(program)
    memory = program.memory_report().to_dict()
    steps = [step.to_dict() for step in program.program()]
    times = time_breakdown(trace, steps, program.cycle_spans(), program.sync_cycles)
    ipus = []
    for entry, time in zip(memory["ipus"], times):
        ipus.append(IpuSizing(
            ipu=entry["ipu"], memory_bytes=entry["total"], capacity_bytes=entry["capacity"],
            memory_by_category={name: c["bytes"] for name, c in entry["categories"].items()},
            busy_share=trace.utilisation(entry["ipu"]), time_cycles=time))
    report = SizingReport(model=model, chip=memory["chip"], clock_hz=trace.clock_hz,
                          replicas=replicas, ipus_per_replica=trace.num_ipus,
                          processes=processes, steps_per_call=steps_per_call,
                          micro_batches_per_step=micro_batches_per_step,
                          items_per_call=items_per_call, call_cycles=trace.total_cycles,
                          cost_only=program.cost_only, ipus=ipus)
    pipelined = trace.pipeline["schedule"] != "Sequential"
    report.advice = [_memory_advice(ipu, memory["chip"])
                     for ipu in ipus if not ipu.fits]
    report.advice += advice(analyse(trace, stages, memory_document(program, model, "")),
                            pipelined=pipelined)
    return report



def _call_input(tensor: Any, repeats: int, name: str) -> Any:
    """A call's input standing for `repeats` micro-batches like `tensor`: a
    stride-0 view of one element, since a cost-only call never reads it."""
    if not isinstance(tensor, torch.Tensor):
        return tensor
    if tensor.dim() == 0:
        raise InputError(
            f"sizeJob: input {name} is a scalar; every input of a micro-batch needs its batch "
            "dimension first, as the model's inputs are split along it.")
    shape = (tensor.shape[0] * repeats,) + tuple(tensor.shape[1:])
    return torch.zeros((), dtype=tensor.dtype).expand(shape)


@contextlib.contextmanager
def cost_only_call(model: torch.nn.Module, micro_batch: Any, options: Optional["Options"],
                   optimizer: Optional[torch.optim.Optimizer]) -> Iterator["Executor"]:
    """The executor of `model` compiled cost-only with `options`, after one
    call standing for a step of the job (see sizeJob); destroyed afterwards."""
    from popsim._executor import inferenceModel, trainingModel
    from popsim.options import Options

    sizing = (options or Options()).clone()
    sizing.Simulator.costOnly().allowOverCapacity()
    training = optimizer is not None
    replication = _replication.of(sizing, training)
    repeats = (sizing.device_iterations * replication.local
               * (sizing.Training.gradient_accumulation if training else 1))
    inputs = micro_batch if isinstance(micro_batch, tuple) else (micro_batch,)
    call = tuple(_call_input(tensor, repeats, f"{index} ({type(tensor).__name__})")
                 for index, tensor in enumerate(inputs))
    executor = (trainingModel(model, sizing, optimizer) if training
                else inferenceModel(model, sizing))
    try:
        executor(*call)
        yield executor
    finally:
        executor.destroy()


def sizeJob(model: torch.nn.Module, micro_batch: Any, options: Optional["Options"] = None,
            optimizer: Optional[torch.optim.Optimizer] = None) -> SizingReport:
    """Sizes a job without computing it, from popsim's simulation of one call.

    Compiles ``model`` with ``options`` cost-only (``Options.Simulator.costOnly()``), makes one
    call and returns its report. The call stands for deviceIterations x replicationFactor (x
    gradientAccumulation for training) micro-batches without allocating them (stride-0 views),
    so a POD's global batch costs nothing on the host. A job that does not fit its IPUs is
    reported (``fits`` False, with what to change) instead of raising
    :class:`popsim.OutOfMemoryError`. The weights must fit the host in float32: the model is an
    ordinary PyTorch module, traced on the host. The executor is destroyed afterwards.

    Args:
        model: The model to size.
        micro_batch: One micro-batch of one replica's inputs: a tensor, or a tuple of the
            model's positional inputs, each with its batch dimension first (only the
            tensors' shapes and dtypes are read).
        options: The job's options (replication, gradient accumulation, device iterations,
            execution strategy, ...); they are copied, not changed. None: default
            :class:`popsim.Options`.
        optimizer: The optimizer of a training job (as for :func:`popsim.trainingModel`);
            None sizes an inference job (:func:`popsim.inferenceModel`).

    Returns:
        The :class:`popsim.SizingReport` of the call, with memory per IPU against capacity,
        the simulated step time and throughput, where each IPU's time goes, and advice.

    Raises:
        InputError: when an input tensor of ``micro_batch`` is a scalar (it has no batch
            dimension).
    """
    with cost_only_call(model, micro_batch, options, optimizer) as executor:
        return executor.sizingReport()
