"""popsim.plan: chooses how to pipeline a model over IPUs from popsim's own
cost-only simulation.

The model is split at module boundaries a person can read: the children of
its largest Sequential or ModuleList, or the modules the caller names (the
*candidates*, in the order the model calls them). A split gives each IPU a
run of consecutive candidates; IPU 0 also takes everything the model does
before its second run starts, and the last IPU everything after its first
candidate (heads, losses), unless a tail is named: then the model's last
part runs as a final stage on IPU 0 (heads tied to the first IPU's weights).

The search has three steps:

1. **Profile.** One cost-only compilation puts each candidate in a pipeline
   stage of its own, on its own IPU, and reads each stage's cycles per
   micro-batch (ExecutionTrace's stage loads) and memory.
2. **Rank splits.** Every split into the asked number of IPUs (or, when
   there are too many, the min-max splits of time and of memory and their
   neighbours) is ranked twice, and the rankings alternate: by its slowest
   IPU's summed cycles (the pipeline's pace) and by its fullest IPU's
   estimated memory.
3. **Verify.** The best-ranked splits are compiled cost-only as the user
   would run them (the same BeginBlock annotations that ``apply`` writes). A
   split that does not fit is tried again with the settings that trade time
   for memory: recomputation, the optimizer state off chip, the Sequential
   schedule. The fastest plan that fits is then tried with its IPUs' spare
   memory given to the temporaries of matmuls that ran in passes
   (availableMemoryProportion) and with the Grouped schedule. Each verified
   plan's throughput and memory are the simulated clock's and the memory
   plan's, so a plan's prediction is what a run of the annotated model
   reports.

The chosen plan is the fastest verified one that fits every IPU.
"""

import copy
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from popsim import _C
from popsim.frontend.blocks import BeginBlock, _BlockStart, removeBlocks
from popsim.reports.sizing import SizingReport, cost_only_call, mib
from popsim.api.errors import CompilationError, OptionError
from popsim.api.options import Options, TensorLocationSettings
from popsim.api.strategies import PipelinedExecution, PipelineSchedule, Stage

# Beyond this many splits, only the min-max split and its neighbours are ranked.
_ENUMERATED_SPLITS = 20000


@dataclass
class PlannedIpu:
    """One IPU of a verified plan: the candidates it runs, its memory and busy share.

    :meth:`popsim.PipelinePlan.planned_ipus` makes them.

    Attributes:
        ipu: The IPU's index in its replica.
        modules: The names of the candidate modules the IPU runs, in order; with a tail, IPU
            0's end with the tail's module, as ``"<name> (tail)"``.
        memory_bytes: The bytes the plan's program needs on the IPU, by the memory plan.
        capacity_bytes: The bytes the IPU holds for the program.
        busy_share: The share of the simulated call the IPU spent on its tasks and transfers.
    """
    ipu: int
    modules: List[str]
    memory_bytes: int
    capacity_bytes: int
    busy_share: float

    @property
    def fits(self) -> bool:
        """Whether the IPU's program fits its memory (``memory_bytes <= capacity_bytes``)."""
        return self.memory_bytes <= self.capacity_bytes


@dataclass
class PipelinePlan:
    """A split of the candidates over IPUs, its pipeline settings and its simulated figures.

    :func:`popsim.plan` verifies each plan it keeps by compiling it cost-only as the user would
    run it, so ``report`` is what a run of the annotated model reports. :meth:`apply` annotates
    a model and gives the options to run it with; :meth:`annotations` and
    :meth:`option_lines` write the same as code.

    Attributes:
        split: For each IPU in turn, the names of the consecutive candidate modules it runs.
        schedule: The pipeline's schedule (a :class:`popsim.PipelineSchedule`).
        recomputation: Whether recomputation is on (``Options.Training.recomputation``).
        optimizer_off_chip: Whether the optimizer state is kept off chip, in Streaming Memory.
        report: The :class:`popsim.SizingReport` of the plan's cost-only run.
        tail: The module where the model's tail starts, run as a last pipeline stage on IPU 0;
            None without a tail.
        tail_after: Whether the tail starts after ``tail`` returns rather than with it.
        memory_proportions: For each IPU the plan gives an available memory proportion, that
            proportion (``Options.setAvailableMemoryProportion``).
        passes_budgets: For each IPU with a matmul or convolution split into serial passes by
            its budget for temporaries, that budget as a share of the IPU's memory.
    """
    split: List[List[str]]
    schedule: PipelineSchedule
    recomputation: bool
    optimizer_off_chip: bool
    report: SizingReport
    # The module where the model's tail starts, run as a last stage on IPU 0
    # (after the module returns, with tail_after).
    tail: Optional[str] = None
    tail_after: bool = False
    # Per IPU, setAvailableMemoryProportion's value where the plan sets one.
    memory_proportions: Dict[int, float] = field(default_factory=dict)
    # Per IPU with a matmul or convolution split into serial passes by its
    # budget for temporaries: that budget as a share of the IPU's memory.
    passes_budgets: Dict[int, float] = field(default_factory=dict)

    @property
    def ipus(self) -> int:
        """The number of IPUs the plan pipelines over."""
        return len(self.split)

    @property
    def fits(self) -> bool:
        """Whether the plan's program fits the memory of every IPU (the report's)."""
        return self.report.fits

    @property
    def throughput(self) -> float:
        """Simulated items/s over all replicas (the report's)."""
        return self.report.throughput

    @property
    def step_seconds(self) -> float:
        """The simulated seconds of one step (the report's)."""
        return self.report.step_seconds

    @property
    def layout(self) -> List[int]:
        """How many candidates each IPU runs (Graphcore's ``layers_per_ipu``)."""
        return [len(modules) for modules in self.split]

    def planned_ipus(self) -> List[PlannedIpu]:
        """Describes the plan's IPUs.

        Returns:
            One :class:`popsim.PlannedIpu` per IPU, in order, with the candidates it runs (the
            tail too on IPU 0), its memory against its capacity and its busy share.
        """
        tail = [f"{self.tail} (tail)"] if self.tail is not None else []
        return [PlannedIpu(ipu.ipu, self.split[ipu.ipu] + (tail if ipu.ipu == 0 else []),
                           ipu.memory_bytes, ipu.capacity_bytes, ipu.busy_share)
                for ipu in self.report.ipus]

    def settings(self) -> str:
        """Describes the plan's pipeline settings.

        Returns:
            The schedule, whether recomputation is on and, where the plan sets them, the
            optimizer state off chip and the available memory proportions, as one line such as
            ``"schedule Interleaved, recomputation off"``.
        """
        parts = [f"schedule {self.schedule.value}",
                 f"recomputation {'on' if self.recomputation else 'off'}"]
        if self.optimizer_off_chip:
            parts.append("optimizer state off chip")
        if self.memory_proportions:
            parts.append("available memory proportion " + ", ".join(
                f"IPU{ipu} {value:.2f}" for ipu, value in sorted(self.memory_proportions.items())))
        return ", ".join(parts)

    def options(self, base: Optional[Options] = None) -> Options:
        """Makes the options that run the annotated model with this plan's strategy and settings.

        The execution strategy is a :class:`popsim.PipelinedExecution` of one stage per IPU
        (stage ``"IPU<k>"`` on IPU k, then a ``"tail"`` stage on IPU 0 with a tail) with the
        plan's schedule. Where the plan turns them on, recomputation and the optimizer state
        off chip are set too, and its available memory proportions are merged into the
        options' own. The other options are kept.

        Args:
            base: The options to start from; they are copied, not changed. None: new
                :class:`popsim.Options`.

        Returns:
            A copy of ``base`` with the plan's execution strategy and settings.
        """
        return _plan_options(self.ipus, self.schedule, self.recomputation,
                             self.optimizer_off_chip, base, self.tail is not None,
                             self.memory_proportions)

    def annotations(self) -> List[str]:
        """Writes the annotations that :meth:`apply` makes as code.

        Returns:
            The :func:`popsim.BeginBlock` calls, one line each, for a model named ``model``.
        """
        lines = ['popsim.BeginBlock(model, "IPU0", ipu_id=0)']
        for ipu, modules in enumerate(self.split[1:], start=1):
            lines.append(f'popsim.BeginBlock(model.get_submodule("{modules[0]}"), "IPU{ipu}", '
                         f'ipu_id={ipu})')
        if self.tail is not None:
            lines.append(f'popsim.BeginBlock(model.get_submodule("{self.tail}"), "tail", '
                         f'ipu_id=0{", after=True" if self.tail_after else ""})')
        return lines

    def option_lines(self) -> List[str]:
        """Writes the options that :meth:`apply` sets as code.

        Returns:
            The calls on an :class:`popsim.Options` named ``opts``, one line each, that set
            the execution strategy, then recomputation, the optimizer's location and the
            available memory proportions where the plan sets them.
        """
        stages = [f'popsim.Stage("IPU{ipu}").ipu({ipu})' for ipu in range(self.ipus)]
        if self.tail is not None:
            stages.append('popsim.Stage("tail").ipu(0)')
        lines = [f"opts.setExecutionStrategy(popsim.PipelinedExecution({', '.join(stages)}, "
                 f"schedule=popsim.PipelineSchedule.{self.schedule.value}))"]
        if self.recomputation:
            lines.append("opts.Training.recomputation(True)")
        if self.optimizer_off_chip:
            lines.append("opts.TensorLocations.setOptimizerLocation("
                         "popsim.TensorLocationSettings().useOnChipStorage(False))")
        if self.memory_proportions:
            lines.append("opts.setAvailableMemoryProportion({" + ", ".join(
                f'"IPU{ipu}": {value}' for ipu, value in sorted(self.memory_proportions.items()))
                + "})")
        return lines

    def apply(self, model: torch.nn.Module, options: Optional[Options] = None) -> Options:
        """Annotates a model with this plan's blocks and makes the options to run it with.

        The model's :func:`popsim.BeginBlock` annotations are removed first. Then block
        ``"IPU0"`` starts with the model, block ``"IPU<k>"`` with IPU k's first candidate, and
        with a tail, block ``"tail"`` (on IPU 0) with the tail's module, or after it with
        ``tail_after``.

        Args:
            model: The model the plan was made for; it is annotated in place.
            options: The options to start from; they are copied, not changed. None: new
                :class:`popsim.Options`.

        Returns:
            The options with the plan's strategy and settings (see :meth:`options`), ready for
            :func:`popsim.trainingModel` or :func:`popsim.inferenceModel`.
        """
        _annotate(model, self.split, self.tail, self.tail_after)
        return self.options(options)

    def summary(self) -> str:
        """Describes the plan in one line.

        Returns:
            The candidates per IPU, the settings, the simulated throughput and step time, and
            whether the plan fits.
        """
        return (f"[{', '.join(str(n) for n in self.layout)}] {self.settings()}: "
                f"{self.throughput:,.0f} items/s, step {self.step_seconds * 1e3:,.3f} ms, "
                + ("fits" if self.fits else "does NOT fit"))


@dataclass
class Plan:
    """What :func:`popsim.plan` found: the chosen plan, the runners-up and the profile.

    The chosen plan is None when no plan fits; the advice then says what would. ``str(plan)``
    prints it all; :meth:`apply` applies the chosen plan to the model.

    Attributes:
        model: The model's class name.
        ipus: The number of IPUs planned for.
        training: Whether the job is a training job (an optimizer was given).
        candidates: The names of the modules to split at, in the order the model calls them.
        candidate_cycles: Each candidate's simulated cycles per micro-batch, from the profile.
        candidate_memory: Each candidate's memory in bytes, alone on an IPU in the profile.
        capacity_bytes: The memory of one IPU for the program, in bytes.
        chosen: The fastest verified plan that fits every IPU; None when no plan fits.
        runners_up: Up to three other verified plans, those that fit first, the fastest first.
        evaluated: How many plans were simulated after the profile.
        seconds: How long the planning took, in wall-clock seconds.
        advice: When no plan fits, what would make one fit, one line each.
        automatic_tail: The module after which the planner ran the model's tail on IPU 0 by
            itself (no tail was given, and a later part of the model shares the first IPU's
            weights); None otherwise.
    """
    model: str
    ipus: int
    training: bool
    candidates: List[str]
    candidate_cycles: List[float]
    candidate_memory: List[int]
    capacity_bytes: int
    chosen: Optional[PipelinePlan]
    runners_up: List[PipelinePlan] = field(default_factory=list)
    evaluated: int = 0
    seconds: float = 0.0
    advice: List[str] = field(default_factory=list)
    # The module after which the planner ran the model's tail on IPU 0 by
    # itself (no tail given, and a later part shares the first IPU's weights).
    automatic_tail: Optional[str] = None

    @property
    def fits(self) -> bool:
        """Whether a plan fits every IPU (``chosen`` is not None)."""
        return self.chosen is not None

    def apply(self, model: torch.nn.Module, options: Optional[Options] = None) -> Options:
        """Applies the chosen plan: see :meth:`popsim.PipelinePlan.apply`.

        Args:
            model: The model the plan was made for; it is annotated in place.
            options: The options to start from; they are copied, not changed. None: new
                :class:`popsim.Options`.

        Returns:
            The options to run the annotated model with.

        Raises:
            OptionError: when no plan fits; the message carries the plan's advice.
        """
        if self.chosen is None:
            raise OptionError(f"popsim.plan found no split of {self.model} over {self.ipus} IPUs "
                              "that fits: " + " ".join(self.advice))
        return self.chosen.apply(model, options)

    def __str__(self) -> str:
        job = "training" if self.training else "inference"
        lines = [f"Pipeline plan for {self.model} over {self.ipus} IPUs ({job}): "
                 f"{len(self.candidates)} candidate modules, {self.evaluated} plans simulated "
                 f"cost-only in {self.seconds:.1f} s"]
        if self.automatic_tail is not None:
            lines.append(f"What follows {self.automatic_tail} shares weights with the first "
                         f"IPU's layers, so it runs there as a last stage (as with "
                         f"tail_after={self.automatic_tail!r}).")
        if self.chosen is None:
            lines.append("No plan fits.")
        else:
            plan = self.chosen
            lines += [f"Chosen: {plan.summary()}",
                      f"  simulated step {plan.report.step_cycles:,.0f} cycles = "
                      f"{plan.step_seconds * 1e3:,.3f} ms; {plan.throughput:,.0f} items/s over "
                      f"{plan.report.total_ipus} IPUs"]
            for ipu in plan.planned_ipus():
                share = ipu.memory_bytes / ipu.capacity_bytes if ipu.capacity_bytes else 0.0
                runs = _span(plan.split[ipu.ipu])
                if ipu.ipu == 0 and plan.tail is not None:
                    runs += (f", then the tail {'after' if plan.tail_after else 'from'} "
                             f"{plan.tail}")
                lines.append(f"  IPU {ipu.ipu}: {runs}; {mib(ipu.memory_bytes)} of "
                             f"{mib(ipu.capacity_bytes)} ({share:.0%}), busy {ipu.busy_share:.0%}")
            lines.append("  Apply it with plan.apply(model, opts), which does:")
            lines += [f"    {line}" for line in plan.annotations() + plan.option_lines()]
        if self.runners_up:
            lines.append("Runners-up:")
            lines += [f"  {plan.summary()}" for plan in self.runners_up]
        if self.advice:
            lines += ["Advice:"] + [f"- {line}" for line in self.advice]
        return "\n".join(lines)


def _plan_options(ipus: int, schedule: PipelineSchedule, recomputation: bool, off_chip: bool,
                  base: Optional[Options], tail: bool = False,
                  proportions: Optional[Dict[int, float]] = None) -> Options:
    opts = (base or Options()).clone()
    if proportions:
        merged = {**opts.available_memory_proportion, **proportions}
        opts.setAvailableMemoryProportion({f"IPU{ipu}": value for ipu, value in merged.items()})
    stages = [Stage(f"IPU{ipu}").ipu(ipu) for ipu in range(ipus)]
    if tail:
        stages.append(Stage("tail").ipu(0))
    opts.setExecutionStrategy(PipelinedExecution(*stages, schedule=schedule))
    if recomputation:
        opts.Training.recomputation(True)
    if off_chip:
        location = copy.copy(opts.TensorLocations.optimizer_location)
        opts.TensorLocations.setOptimizerLocation(location.useOnChipStorage(False))
    return opts


def _span(modules: List[str]) -> str:
    return modules[0] if len(modules) == 1 else f"{modules[0]} .. {modules[-1]}"


def _default_candidates(model: torch.nn.Module) -> List[str]:
    """The children of the model's Sequential or ModuleList with the most
    children (the first such, in module order)."""
    best: Tuple[int, str] = (0, "")
    for name, module in model.named_modules():
        if isinstance(module, (torch.nn.Sequential, torch.nn.ModuleList)):
            if len(module) > best[0]:
                best = (len(module), name)
    if best[0] < 2:
        raise OptionError(
            f"popsim.plan: {type(model).__name__} has no Sequential or ModuleList of 2 or more "
            "modules to split at; name the modules to split at with candidates=[...] (module "
            "names as model.named_modules() gives them, in the order forward() calls them).")
    prefix = f"{best[1]}." if best[1] else ""
    return [f"{prefix}{name}" for name, _ in model.get_submodule(best[1]).named_children()]


def _check_candidates(model: torch.nn.Module, candidates: Sequence[str],
                      what: str = "candidate") -> List[str]:
    names = list(candidates)
    known = dict(model.named_modules())
    for name in names:
        if not isinstance(name, str) or name not in known or name == "":
            raise OptionError(
                f"popsim.plan: {what} {name!r} is not a submodule of {type(model).__name__}; "
                "name modules as model.named_modules() gives them (e.g. "
                "'encoder.layers.3').")
    if len(set(names)) != len(names):
        raise OptionError(f"popsim.plan: candidates {names} name a module twice.")
    return names


def _annotate(model: torch.nn.Module, split: List[List[str]], tail: Optional[str],
              tail_after: bool = False) -> None:
    removeBlocks(model)
    BeginBlock(model, "IPU0", ipu_id=0)
    for ipu, modules in enumerate(split[1:], start=1):
        BeginBlock(model.get_submodule(modules[0]), f"IPU{ipu}", ipu_id=ipu)
    if tail is not None:
        BeginBlock(model.get_submodule(tail), "tail", ipu_id=0, after=tail_after)


def _enclosing_modules(model: torch.nn.Module, names: List[str]) -> List[str]:
    """The modules that hold every candidate, innermost first, that forward()
    calls (not the model itself, nor ModuleList and ModuleDict containers,
    which are never called)."""
    common: List[str] = []
    for level in zip(*(name.split(".") for name in names)):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    enclosing = []
    for depth in range(len(common), 0, -1):
        name = ".".join(common[:depth])
        module = model.get_submodule(name)
        if name not in names and not isinstance(module, (torch.nn.ModuleList,
                                                         torch.nn.ModuleDict)):
            enclosing.append(name)
    return enclosing


def _has_blocks(model: torch.nn.Module) -> bool:
    return any(isinstance(hook, _BlockStart) for module in model.modules()
               for hooks in (module._forward_pre_hooks, module._forward_hooks)
               for hook in hooks.values())


def _splits(count: int, parts: int) -> Iterator[Tuple[int, ...]]:
    """Every split of `count` consecutive items into `parts` non-empty runs, as run lengths."""
    for cuts in itertools.combinations(range(1, count), parts - 1):
        bounds = (0,) + cuts + (count,)
        yield tuple(bounds[i + 1] - bounds[i] for i in range(parts))


def _min_max_split(cycles: List[float], parts: int) -> Tuple[int, ...]:
    """The split whose largest run sum is smallest (dynamic programming)."""
    count = len(cycles)
    prefix = [0.0]
    for c in cycles:
        prefix.append(prefix[-1] + c)
    # best[k][i]: the smallest largest sum of the first i items in k runs.
    best = [[math.inf] * (count + 1) for _ in range(parts + 1)]
    cut = [[0] * (count + 1) for _ in range(parts + 1)]
    best[0][0] = 0.0
    for k in range(1, parts + 1):
        for i in range(k, count + 1):
            for j in range(k - 1, i):
                value = max(best[k - 1][j], prefix[i] - prefix[j])
                if value < best[k][i]:
                    best[k][i], cut[k][i] = value, j
    lengths = []
    i = count
    for k in range(parts, 0, -1):
        j = cut[k][i]
        lengths.append(i - j)
        i = j
    return tuple(reversed(lengths))


def _neighbours(lengths: Tuple[int, ...]) -> Iterator[Tuple[int, ...]]:
    """Splits that move one boundary by one candidate."""
    for i in range(len(lengths) - 1):
        for move in (-1, 1):
            moved = list(lengths)
            moved[i] += move
            moved[i + 1] -= move
            if min(moved) >= 1:
                yield tuple(moved)


def _ranked_splits(cycles: List[float], memory: List[Dict[str, int]], capacity: int, parts: int,
                   keep: int) -> List[Tuple[int, ...]]:
    """The `keep` most promising splits, alternately the fastest and the
    leanest: the fastest are those with the smallest slowest IPU (its
    candidates' summed cycles, within 1%: the profile's precision), those
    estimated to fit first; the leanest have the least memory on the fullest
    IPU (_group_memory's estimate, which only orders splits: verification
    decides)."""
    def sums(values: Sequence[float], lengths: Tuple[int, ...]) -> List[float]:
        result, start = [], 0
        for length in lengths:
            result.append(sum(values[start:start + length]))
            start += length
        return result

    def pace(lengths: Tuple[int, ...]) -> int:
        slowest = max(sums(cycles, lengths))
        return int(math.log(slowest) / math.log(1.01)) if slowest > 0 else 0

    def peak(lengths: Tuple[int, ...]) -> float:
        starts = [sum(lengths[:g]) for g in range(len(lengths))]
        return max(_group_memory(memory, start, length, g, len(lengths))
                   for g, (start, length) in enumerate(zip(starts, lengths)))

    def evenness(lengths: Tuple[int, ...]) -> float:
        return sum(s * s for s in sums(cycles, lengths))

    if math.comb(len(cycles) - 1, parts - 1) <= _ENUMERATED_SPLITS:
        pool = set(_splits(len(cycles), parts))
    else:
        best = _min_max_split(cycles, parts)
        pool = {best} | set(_neighbours(best))
        pool |= {n2 for n in list(pool) for n2 in _neighbours(n)}
        totals = [float(sum(categories.values())) for categories in memory]
        leanest = _min_max_split(totals, parts)
        pool |= {leanest} | set(_neighbours(leanest))
    fastest = sorted(pool, key=lambda s: (peak(s) > capacity, pace(s), peak(s), evenness(s)))
    leanest_first = sorted(pool, key=lambda s: (peak(s), pace(s), evenness(s)))
    ranked: List[Tuple[int, ...]] = []
    for pair in zip(fastest, leanest_first):
        for lengths in pair:
            if lengths not in ranked:
                ranked.append(lengths)
    return ranked[:keep]


def _group(candidates: List[str], lengths: Sequence[int]) -> List[List[str]]:
    split, start = [], 0
    for length in lengths:
        split.append(candidates[start:start + length])
        start += length
    return split


def _profile(model: torch.nn.Module, candidates: List[str], tail: Optional[str],
             tail_after: bool, micro_batch: Any, options: Options,
             optimizer: Optional[torch.optim.Optimizer]
             ) -> Tuple[List[float], List[Dict[str, int]], int]:
    """Each candidate's cycles per micro-batch and memory by category, from a cost-only
    run with every candidate a pipeline stage of its own, on its own IPU
    (the tail's stage on IPU 0, counted with the first candidate)."""
    split = [[name] for name in candidates]
    profile = _plan_options(len(split), PipelineSchedule.Interleaved, False, False, options,
                            tail is not None)
    # Enough micro-batches to fill the profile's longer pipeline (its figures are per micro-batch).
    stages = len(split) + (tail is not None)
    if optimizer is not None:
        profile.Training.gradientAccumulation(
            max(profile.Training.gradient_accumulation, 2 * stages - 1))
    else:
        profile.deviceIterations(max(profile.device_iterations, stages))
    _annotate(model, split, tail, tail_after)
    with cost_only_call(model, micro_batch, profile, optimizer) as executor:
        loads = _C.stage_loads(executor._program.first, executor._stages)
        report = executor.sizingReport()
    cycles = [0.0] * len(candidates)
    for load in loads:
        cycles[load["ipu"]] += load["cycles"]
    return cycles, [ipu.memory_by_category for ipu in report.ipus], report.ipus[0].capacity_bytes


# Memory that grows with each candidate an IPU holds; the stash also grows
# with how early the IPU's stage is (_stash_depth); the other categories
# (code, activations, temporaries) are mostly the IPU's largest candidate's.
_ADDITIVE = ("weights", "gradient accumulators", "optimizer state", "random state", "constants",
             "input streams", "prefetch buffers", "streamed in")


def _stash_depth(stage: int, stages: int) -> float:
    """How many micro-batches' stash stage `stage` of `stages` holds, relative
    to the others, in an interleaved (1F1B) pipeline: the micro-batches it
    has started and not finished, about stages - stage (measured: the
    profile's stash per candidate follows stages - stage + 1/2)."""
    return stages - stage + 0.5


def _group_memory(memory: List[Dict[str, int]], start: int, length: int, stage: int,
                  stages: int) -> float:
    """An IPU's memory estimated from its candidates' profile (each candidate
    stage `i` of len(memory)): the additive categories summed, the stash
    rescaled to the IPU's stage, and the largest candidate's code,
    activations and temporaries (a lower bound: it only orders splits)."""
    members = memory[start:start + length]
    total = 0.0
    for offset, categories in enumerate(members):
        total += sum(categories.get(name, 0) for name in _ADDITIVE)
        total += (categories.get("stash", 0) * _stash_depth(stage, stages)
                  / _stash_depth(start + offset, len(memory)))
    for name in ("code", "activations", "temporaries"):
        total += max(categories.get(name, 0) for categories in members)
    return total


def plan(model: torch.nn.Module, micro_batch: Any, options: Optional[Options] = None,
         optimizer: Optional[torch.optim.Optimizer] = None, *, ipus: int,
         candidates: Optional[Sequence[str]] = None, tail: Optional[str] = None,
         tail_after: Optional[str] = None, max_evaluations: int = 8) -> Plan:
    """Chooses a pipeline split of a model over IPUs, with its schedule and memory settings.

    The plan chosen gives the most simulated throughput among those that fit every IPU. The
    model is split at module boundaries (the candidates): each IPU runs a run of consecutive
    candidates, IPU 0 also what the model does before the second IPU's first candidate, and
    the last IPU what follows its first candidate (heads, losses) unless a tail is named. The
    search profiles the candidates cost-only, ranks the splits by their slowest IPU's cycles
    and by their fullest IPU's estimated memory, then compiles the best-ranked cost-only as the
    user would run them. In training, a split that does not fit is tried again with
    recomputation, the optimizer state off chip and the Sequential schedule. The fastest plan
    that fits is then tried with its spare memory given to the temporaries of the matmuls and
    convolutions that ran in passes and, in training, with the Grouped schedule. The model is
    left without annotations.

    Args:
        model: The model to plan for; it must have no :func:`popsim.BeginBlock` annotations.
        micro_batch: One micro-batch of one replica's inputs, as for :func:`popsim.sizeJob`: a
            tensor, or a tuple of the model's positional inputs, each with its batch dimension
            first.
        options: The job's options (replication, gradient accumulation, device iterations,
            precision, ... are kept; their execution strategy is replaced); they are copied,
            not changed. None: default :class:`popsim.Options`.
        optimizer: The optimizer of a training job; None plans an inference job.
        ipus: The number of IPUs to pipeline over, 2 or more.
        candidates: The names of the modules to split at, as ``model.named_modules()`` gives
            them, in the order forward() calls them. None: the children of the model's largest
            Sequential or ModuleList.
        tail: The module where the model's last part starts when that part must run on IPU
            0, as a last pipeline stage beside the first candidates: a head that shares weights
            with the first IPU's layers (BERT's MLM decoder, tied to the word embeddings), as
            in Graphcore's BERT examples. Without ``tail`` or ``tail_after``, when a later part
            of the model shares weights with the first IPU's (no IPU but the first can run
            it), the planner runs what follows the innermost module holding every candidate as
            that tail by itself, and says so.
        tail_after: Instead of ``tail``, the module after which the tail starts (BERT's
            encoder: the heads, their gather included).
        max_evaluations: How many plans may be simulated after the profile (when more than 4,
            two of them are kept for the fastest fitting plan's memory proportions and
            schedule).

    Returns:
        A :class:`popsim.Plan`. ``str(plan)`` prints the chosen plan (predicted step time,
        throughput, per-IPU memory and busy share, and the :func:`popsim.BeginBlock`
        annotations it stands for), the runners-up and, when nothing fits, what would.
        ``plan.apply(model, options)`` annotates the model and returns the options to run it
        with.

    Raises:
        OptionError: when ``model`` is not a ``torch.nn.Module``; ``ipus`` is not an int of 2
            or more; the model already has BeginBlock annotations; a candidate, ``tail`` or
            ``tail_after`` is not a submodule, a candidate is named twice, or the tail is a
            candidate; no candidates are given and the model has no Sequential or ModuleList
            of 2 or more modules; both ``tail`` and ``tail_after`` are given; there are fewer
            candidates than IPUs; training's gradientAccumulation is below
            ``2 * stages - 1`` or inference's deviceIterations below the stages (the IPUs,
            plus one with a tail); or a later part of the model shares weights with the first
            IPU's and no tail is named nor found.
        CompilationError: when a cost-only compilation of the model fails, other than for
            weights shared with the first IPU's when no tail is named.
        InputError: when an input tensor of ``micro_batch`` is a scalar.
    """
    started = time.monotonic()
    if not isinstance(model, torch.nn.Module):
        raise OptionError(f"popsim.plan expects a torch.nn.Module, got {type(model).__name__}.")
    if isinstance(ipus, bool) or not isinstance(ipus, int) or ipus < 2:
        raise OptionError(f"popsim.plan: ipus must be an int of 2 or more (the IPUs to "
                          f"pipeline over), got {ipus!r}.")
    if _has_blocks(model):
        raise OptionError(
            f"popsim.plan: {type(model).__name__} already has BeginBlock annotations; the "
            "planner writes its own. Remove them with popsim.removeBlocks(model) first.")
    names = (_check_candidates(model, candidates) if candidates is not None
             else _default_candidates(model))
    if tail is not None and tail_after is not None:
        raise OptionError("popsim.plan takes tail or tail_after, not both: the tail starts at "
                          "one place.")
    after = tail_after is not None
    tail = tail_after if after else tail
    if tail is not None:
        _check_candidates(model, [tail], "tail_after" if after else "tail")
        if tail in names:
            raise OptionError(f"popsim.plan: the tail {tail!r} is also a candidate; the tail "
                              "runs on IPU 0 after every candidate.")
    if len(names) < ipus:
        raise OptionError(
            f"popsim.plan: {len(names)} candidate modules cannot fill {ipus} IPUs (each IPU "
            "runs one or more of them); name more candidates, or plan for fewer IPUs.")
    base = (options or Options()).clone()
    training = optimizer is not None
    stages = ipus + (tail is not None)
    if training and base.Training.gradient_accumulation < 2 * stages - 1:
        raise OptionError(
            f"popsim.plan: pipelined training over {ipus} IPUs"
            + (" with a tail stage" if tail is not None else "")
            + f" needs Training.gradientAccumulation of at least {2 * stages - 1} (each of its "
            f"{stages} stages but the last runs its backward pass as a stage of its own), got "
            f"{base.Training.gradient_accumulation}.")
    if not training and base.device_iterations < stages:
        raise OptionError(
            f"popsim.plan: pipelined inference over {stages} stages needs deviceIterations of at "
            f"least {stages}, got {base.device_iterations}.")
    automatic_tail = None
    try:
        try:
            cycles, memory, capacity = _profile(model, names, tail, after, micro_batch, base,
                                                optimizer)
        except CompilationError as error:
            if "share weights" not in str(error) or tail is not None:
                raise
            # A later part shares weights with the first IPU's: try running what
            # follows the module that holds the candidates as a tail on IPU 0.
            found = None
            enough = not training or base.Training.gradient_accumulation >= 2 * (ipus + 1) - 1
            for enclosing in (_enclosing_modules(model, names) if enough else []):
                try:
                    found = (enclosing, _profile(model, names, enclosing, True, micro_batch, base,
                                                 optimizer))
                    break
                except CompilationError as again:
                    if "share weights" not in str(again):
                        raise
            if found is None:
                raise OptionError(
                    f"popsim.plan: {error} The planner puts consecutive candidates on "
                    "consecutive IPUs; a later part of the model that shares weights with the "
                    "first IPU's (such as a decoder tied to the embeddings) can run there as a "
                    "last stage: name the module where that part starts with tail='...' (or "
                    "the module after which it starts with tail_after='...')"
                    + ("" if enough else ", with Training.gradientAccumulation of at least "
                       f"{2 * (ipus + 1) - 1} for the extra stage") + ".") from error
            tail, after = found[0], True
            automatic_tail = tail
            cycles, memory, capacity = found[1]
        totals = [sum(categories.values()) for categories in memory]
        result = Plan(type(model).__name__, ipus, training, names, cycles, totals, capacity,
                      chosen=None, automatic_tail=automatic_tail)
        verified: List[PipelinePlan] = []

        def evaluate(lengths: Tuple[int, ...], schedule: PipelineSchedule, recompute: bool,
                     off_chip: bool, proportions: Optional[Dict[int, float]] = None
                     ) -> PipelinePlan:
            split = _group(names, lengths)
            _annotate(model, split, tail, after)
            with cost_only_call(model, micro_batch,
                                _plan_options(ipus, schedule, recompute, off_chip, base,
                                              tail is not None, proportions),
                                optimizer) as executor:
                program = executor._program
                steps = [step.to_dict() for step in program.program()]
                in_passes = {step["ipu"] for step in steps if step["passes"] > 1}
                budgets = {entry["ipu"]: entry["temporary_budget"] / entry["capacity"]
                           for entry in program.first.memory_report().to_dict()["ipus"]
                           if entry["ipu"] in in_passes}
                candidate = PipelinePlan(
                    split, schedule, recompute, off_chip, executor.sizingReport(), tail, after,
                    dict(proportions or {}), budgets)
            result.evaluated += 1
            verified.append(candidate)
            return candidate

        recompute = base.Training.recomputation_enabled
        on_chip = base.TensorLocations.optimizer_location.on_chip
        # Settings that trade time for memory, tried in turn on a split that does
        # not fit: recomputation, the optimizer state off chip, and at last the
        # Sequential schedule (one micro-batch at a time: no stash).
        interleaved, sequential = PipelineSchedule.Interleaved, PipelineSchedule.Sequential
        savings: List[Tuple[PipelineSchedule, bool, bool]] = []
        if training and not recompute:
            savings.append((interleaved, True, False))
        if training and on_chip:
            savings.append((interleaved, True, True))
        if training:
            savings.append((sequential, True, on_chip))
        # Two evaluations are kept for the fastest fitting plan's memory
        # proportions and schedule.
        for_splits = max_evaluations - 2 if max_evaluations > 4 else max_evaluations
        for lengths in _ranked_splits(cycles, memory, capacity, ipus, keep=for_splits):
            if result.evaluated >= for_splits:
                break
            attempt = evaluate(lengths, PipelineSchedule.Interleaved, recompute, False)
            for saving in savings:
                if attempt.fits or result.evaluated >= for_splits:
                    break
                attempt = evaluate(lengths, *saving)
        # On the fastest plan that fits: more memory for the temporaries of the
        # IPUs whose matmuls or convolutions run in passes (fewer passes), as
        # much as the IPU has spare; then the other schedule.
        fitting = [p for p in verified if p.fits]
        if fitting and result.evaluated < max_evaluations:
            best = max(fitting, key=lambda p: p.throughput)
            raised = {}
            for ipu in best.report.ipus:
                if ipu.ipu in best.passes_budgets:
                    spare = (ipu.capacity_bytes - ipu.memory_bytes) / ipu.capacity_bytes
                    raised[ipu.ipu] = round(min(1.0, best.passes_budgets[ipu.ipu] + 0.9 * spare),
                                            2)
            if any(value > best.passes_budgets[ipu] for ipu, value in raised.items()):
                evaluate(tuple(best.layout), best.schedule, best.recomputation,
                         best.optimizer_off_chip, raised)
        fitting = [p for p in verified if p.fits]
        if training and fitting and result.evaluated < max_evaluations:
            best = max(fitting, key=lambda p: p.throughput)
            evaluate(tuple(best.layout), PipelineSchedule.Grouped, best.recomputation,
                     best.optimizer_off_chip, best.memory_proportions)
    finally:
        removeBlocks(model)
    fitting = sorted((p for p in verified if p.fits), key=lambda p: -p.throughput)
    result.chosen = fitting[0] if fitting else None
    others = [p for p in sorted(verified, key=lambda p: (not p.fits, -p.throughput))
              if p is not result.chosen]
    result.runners_up = others[:3]
    if result.chosen is None:
        result.advice = _advice(result, base, training)
    result.seconds = time.monotonic() - started
    return result


def _advice(result: Plan, options: Options, training: bool) -> List[str]:
    """What would make a plan fit, from the profile's memory."""
    total = sum(result.candidate_memory)
    needed = max(result.ipus + 1, math.ceil(total / result.capacity_bytes))
    largest = max(range(len(result.candidates)), key=lambda i: result.candidate_memory[i])
    lines = [f"The candidates need about {mib(total)} in all (each alone on an IPU), against "
             f"{mib(result.capacity_bytes)} per IPU: about {needed} IPUs would hold them."]
    if result.candidate_memory[largest] > result.capacity_bytes:
        lines.append(f"{result.candidates[largest]} alone needs "
                     f"{mib(result.candidate_memory[largest])}, more than an IPU holds: split it "
                     "into smaller candidates, or use a smaller micro-batch.")
    if training:
        lines.append("Recomputation, the optimizer state off chip and the Sequential schedule "
                     "were tried on the best-ranked splits; a smaller micro-batch (with more "
                     "gradient accumulation) lowers the activations and stash of every IPU.")
    else:
        lines.append("A smaller micro-batch lowers the activations of every IPU.")
    return lines
