"""What a profile says: utilisation and idle time per IPU, the load of each
pipeline stage, memory headroom, and the advice that follows.

A stage's load is the median, over the call's micro-batches, of the cycles its
tasks (F<s>, B<s>, FB<s>) spend on one micro-batch, their incoming copies and
the host transfers that occupy its IPU included: ExecutionTrace.
micro_batch_cycles() per stage rather than per IPU. The median leaves out
one-off transfers such as the final output. With prefetching, inputs stream
on each IPU's host link beside the IPU, and the link is a stage of its own
(ExecutionTrace.host_link_cycles()). In a pipeline every cycle waits for the
slowest stage, so the stage or link with the largest load is the bottleneck.
"""

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, cast

from popsim.profiling._style import TASK_KINDS, categories

if TYPE_CHECKING:
    from popsim._trace import ExecutionTrace

_STAGE_TASK = re.compile(r"^(?:FB|F|B)([0-9]+)$")

# Stages within this fraction of each other count as balanced.
BALANCED_WITHIN = 0.10
# An IPU idle for more than this share of the call is worth an advice line.
IDLE_WORTH_NOTING = 0.30
# A bottleneck spending more than this share on host transfers gets an advice line.
HOST_BOUND = 0.30


def stage_of_task(task: str) -> Optional[int]:
    """Stage number of a stage task ("F2", "B0", "FB3"); None for updates ("U1")."""
    match = _STAGE_TASK.match(task)
    return int(match.group(1)) if match else None


@dataclass
class StageLoad:
    stage: int
    ipu: int
    blocks: List[str]
    cycles: float          # per micro-batch: compute + copies + host transfers
    compute_cycles: float
    host_cycles: float     # streaming inputs and outputs from and to the host
    copy_cycles: float     # inter-IPU copies received
    output_cycles: float = 0.0  # the outputs' share of host_cycles


@dataclass
class IpuLoad:
    ipu: int
    busy_fraction: float     # share of the call spent on its tasks and transfers
    compute_fraction: float  # share spent computing
    idle_fraction: float     # share spent waiting for other IPUs (pipeline bubbles, syncs)


@dataclass
class HostLinkLoad:
    ipu: int
    cycles: float  # per micro-batch: streaming its inputs in, prefetched beside the IPU


@dataclass
class IpuMemory:
    ipu: int
    total: int
    limit: int
    largest_category: str
    # availableMemoryProportion's budget for one op's temporaries, and the ops it
    # splits into serial passes (memory.json's "split_ops").
    temporary_budget: int = 0
    split_ops: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def fraction(self) -> float:
        return self.total / self.limit if self.limit else 0.0


@dataclass
class Analysis:
    stages: List[StageLoad] = field(default_factory=list)
    ipus: List[IpuLoad] = field(default_factory=list)
    memory: List[IpuMemory] = field(default_factory=list)
    # Prefetching links that carry inputs.
    host_links: List[HostLinkLoad] = field(default_factory=list)

    @property
    def slowest_link(self) -> Optional[HostLinkLoad]:
        return max(self.host_links, key=lambda link: link.cycles) if self.host_links else None

    @property
    def link_bound(self) -> bool:
        """Whether a host link is slower than every stage."""
        link, stage = self.slowest_link, self.bottleneck
        return link is not None and (stage is None or link.cycles > stage.cycles)

    @property
    def bottleneck(self) -> Optional[StageLoad]:
        return max(self.stages, key=lambda s: s.cycles) if self.stages else None

    @property
    def fastest(self) -> Optional[StageLoad]:
        return min(self.stages, key=lambda s: s.cycles) if self.stages else None

    @property
    def idle_fraction(self) -> float:
        """Share of the IPUs' time spent waiting, over all IPUs."""
        return statistics.mean(i.idle_fraction for i in self.ipus) if self.ipus else 0.0

    @property
    def tightest_memory(self) -> Optional[IpuMemory]:
        return max(self.memory, key=lambda m: m.fraction) if self.memory else None


def stage_loads(trace: "ExecutionTrace", stages: List[Dict[str, Any]]) -> List[StageLoad]:
    """Per stage, its median cycles per micro-batch (see the module docstring)."""
    # (stage, step, micro_batch) -> [compute, host, copy, host output]
    parts: Dict[Tuple[int, int, int], List[int]] = {}
    ipu_of_stage = {}
    for event in trace.events:
        stage = stage_of_task(event["task"])
        if stage is None or not trace.occupies_ipu(event):
            continue
        ipu_of_stage[stage] = event["ipu"]
        cycles = event["end"] - event["start"]
        column = (0 if event["kind"] in TASK_KINDS else
                  2 if event["kind"] == "copy" else 1)
        part = parts.setdefault((stage, event["step"], event["micro_batch"]), [0, 0, 0, 0])
        part[column] += cycles
        if event["kind"] == "host_output":
            part[3] += cycles
    blocks = {s["stage"]: s["blocks"] for s in stages}
    loads = []
    for stage in sorted(ipu_of_stage):
        runs = [p for (s, _, _), p in parts.items() if s == stage]
        loads.append(StageLoad(
            stage=stage, ipu=ipu_of_stage[stage], blocks=blocks.get(stage, []),
            cycles=statistics.median(sum(p[:3]) for p in runs),
            compute_cycles=statistics.median(p[0] for p in runs),
            host_cycles=statistics.median(p[1] for p in runs),
            copy_cycles=statistics.median(p[2] for p in runs),
            output_cycles=statistics.median(p[3] for p in runs)))
    return loads


def ipu_loads(trace: "ExecutionTrace") -> List[IpuLoad]:
    loads = []
    for ipu in range(trace.num_ipus):
        busy = trace.utilisation(ipu)
        compute = sum(e["end"] - e["start"] for e in trace.events
                      if e["ipu"] == ipu and e["kind"] in TASK_KINDS)
        loads.append(IpuLoad(ipu=ipu, busy_fraction=busy,
                             compute_fraction=compute / trace.total_cycles
                             if trace.total_cycles else 0.0,
                             idle_fraction=1.0 - busy))
    return loads


def memory_loads(memory: Dict[str, Any]) -> List[IpuMemory]:
    result = []
    for ipu in memory["ipus"]:
        sizes = categories(ipu)
        # (type: ignore: the stubs' dict.get returns an Optional; every key here has a value.)
        largest = max(sizes, key=sizes.get) if sizes else ""  # type: ignore[arg-type]
        temporaries = ipu.get("temporaries", {})  # absent from older profiles
        result.append(IpuMemory(ipu=ipu["ipu"], total=ipu["total"], limit=ipu["limit"],
                                largest_category=largest,
                                temporary_budget=temporaries.get("budget", 0),
                                split_ops=temporaries.get("split_ops", [])))
    return result


def analyse(trace: Optional["ExecutionTrace"], stages: List[Dict[str, Any]],
            memory: Optional[Dict[str, Any]]) -> Analysis:
    """An Analysis of a call (`trace` may be None before the first call) and memory
    (memory.json's content, or None)."""
    analysis = Analysis()
    if trace is not None:
        analysis.stages = stage_loads(trace, stages)
        analysis.ipus = ipu_loads(trace)
        if trace.pipeline.get("prefetch_depth", 0):
            analysis.host_links = [HostLinkLoad(ipu, cycles) for ipu, cycles
                                   in enumerate(trace.host_link_cycles()) if cycles]
    if memory is not None:
        analysis.memory = memory_loads(memory)
    return analysis


def mib(size: float) -> str:
    """`size` bytes as text in MiB."""
    return f"{size / 2**20:,.2f} MiB"


def _stage_name(stage: StageLoad) -> str:
    blocks = f" (blocks {', '.join(stage.blocks)})" if stage.blocks else ""
    return f"stage {stage.stage}{blocks} on IPU {stage.ipu}"


def advice(analysis: Analysis, pipelined: bool = True) -> List[str]:
    """The advice lines that follow from an analysis, most important first.
    `pipelined` is False for sharded (sequential) execution, where stages take turns."""
    lines = []
    slowest, fastest = analysis.bottleneck, analysis.fastest
    if analysis.link_bound:
        link = cast(HostLinkLoad, analysis.slowest_link)  # not None: link_bound
        work = f", more than any stage's ({slowest.cycles:,.0f})" if slowest else ""
        lines.append(
            f"Bottleneck: IPU {link.ipu}'s host link takes {link.cycles:,.0f} cycles to stream "
            f"a micro-batch's inputs in{work}, so the IPUs wait for their data. Each transfer "
            "pays the host's fixed latency (and through IO tiles its bytes): larger "
            "micro-batches amortise the latency, and spreading the model over more IPUs cannot "
            "help.")
    if slowest is not None and len(analysis.stages) > 1:
        fastest = cast(StageLoad, fastest)  # not None: there are stages
        spread = (slowest.cycles - fastest.cycles) / slowest.cycles if slowest.cycles else 0.0
        if spread <= BALANCED_WITHIN:
            lines.append(f"Stages are balanced: the slowest, {_stage_name(slowest)}, is within "
                         f"{spread:.0%} of the fastest.")
        elif analysis.link_bound:
            lines.append(
                f"Slowest stage: {_stage_name(slowest)}, {slowest.cycles:,.0f} cycles per "
                f"micro-batch, {slowest.cycles / max(fastest.cycles, 1):.1f}x the fastest; it "
                "sets the pace only once the host link is faster.")
        elif pipelined:
            lines.append(
                f"Bottleneck: {_stage_name(slowest)} takes {slowest.cycles:,.0f} cycles per "
                f"micro-batch, {slowest.cycles / max(fastest.cycles, 1):.1f}x the fastest "
                f"({_stage_name(fastest)}, {fastest.cycles:,.0f}). Every pipeline cycle waits "
                f"for it: move layers or blocks from stage {slowest.stage} to other stages.")
        else:
            share = slowest.cycles / sum(s.cycles for s in analysis.stages)
            lines.append(
                f"Slowest stage: {_stage_name(slowest)} takes {slowest.cycles:,.0f} cycles per "
                f"micro-batch, {share:.0%} of the stages' time. Sharded execution runs the "
                "stages one after another, so their times add up; PipelinedExecution overlaps "
                "them, limited by the slowest stage.")
    if slowest is not None and slowest.cycles and slowest.host_cycles / slowest.cycles > HOST_BOUND:
        outputs = (" Most of it streams outputs back: return fewer of them "
                   "(OutputMode.Final or EveryN) if the host does not need every micro-batch's."
                   if slowest.output_cycles > slowest.host_cycles / 2 else "")
        lines.append(
            f"{slowest.host_cycles / slowest.cycles:.0%} of stage {slowest.stage}'s time is "
            "host transfers on its compute tiles: fewer, larger transfers (a larger "
            f"micro-batch) amortise their fixed latency.{outputs} Through IO tiles "
            "(Options.TensorLocations.numIOTiles, popsim.set_overlap_for_input / "
            "set_overlap_for_output, with ShardedExecution) the bytes cross beside the compute.")
    if analysis.link_bound and analysis.ipus and analysis.idle_fraction > IDLE_WORTH_NOTING:
        lines.append(
            f"The IPUs wait {analysis.idle_fraction:.0%} of the call on average, mostly for "
            "their inputs from the host link.")
    elif pipelined and analysis.ipus and analysis.idle_fraction > IDLE_WORTH_NOTING:
        lines.append(
            f"The IPUs wait {analysis.idle_fraction:.0%} of the call on average (pipeline ramp-up "
            "and ramp-down, and faster stages waiting for the slowest). More micro-batches per "
            "step (gradientAccumulation, or deviceIterations for inference) shrink the ramps' "
            "share.")
    for memory in analysis.memory:
        if memory.split_ops:
            op = memory.split_ops[0]
            needed = max(s["bytes_in_one_pass"] for s in memory.split_ops)
            proportion = min(1.0, math.ceil(needed / memory.limit * 1000) / 1000)  # rounded up
            lines.append(
                f"IPU {memory.ipu}: availableMemoryProportion caps each matmul or convolution's "
                f"temporaries at {mib(memory.temporary_budget)}, so {len(memory.split_ops)} "
                f"op(s) run in serial passes (most: {op['op']} at {op['location']}, "
                f"{op['passes']} passes). setAvailableMemoryProportion({{'IPU{memory.ipu}': "
                f"{proportion:g}}}) runs them in one pass if the IPU has the room; the passes "
                "cost cycles, the proportion memory.")
    tightest = analysis.tightest_memory
    if tightest is not None:
        lines.append(
            f"IPU {tightest.ipu} is closest to its memory limit: {mib(tightest.total)} of "
            f"{mib(tightest.limit)} ({tightest.fraction:.1%}), mostly {tightest.largest_category}.")
    return lines
