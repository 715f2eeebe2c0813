"""What popsim.plan gives: the plans it verified (PipelinePlan, each IPU's
PlannedIpu), ranked in a Plan, with their printout and how to apply one to
the model (planner.py searches for them)."""

import copy
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch

from popsim.api.errors import OptionError
from popsim.api.options import Options
from popsim.api.strategies import PipelinedExecution, PipelineSchedule, Stage
from popsim.frontend.blocks import BeginBlock, removeBlocks
from popsim.reports.sizing import SizingReport, mib

# The planners' name for the model itself as the one candidate of a model with no module
# to split at (popsim.planJob runs it whole on replicas of one IPU).
WHOLE_MODEL = ""


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
                              "that fits: " + " ".join(self.advice), option="plan.ipus")
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
    if modules == [WHOLE_MODEL]:
        return "the whole model"
    return modules[0] if len(modules) == 1 else f"{modules[0]} .. {modules[-1]}"


def _annotate(model: torch.nn.Module, split: List[List[str]], tail: Optional[str],
              tail_after: bool = False) -> None:
    removeBlocks(model)
    BeginBlock(model, "IPU0", ipu_id=0)
    for ipu, modules in enumerate(split[1:], start=1):
        BeginBlock(model.get_submodule(modules[0]), f"IPU{ipu}", ipu_id=ipu)
    if tail is not None:
        BeginBlock(model.get_submodule(tail), "tail", ipu_id=0, after=tail_after)
