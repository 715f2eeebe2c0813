"""What popsim.planJob gives: the whole-job configurations it simulated
(JobCandidate: replicas, IPUs per replica and split, micro-batch, gradient
accumulation, device iterations, memory settings, host processes), ranked in
a JobPlan, with its printout, its JSON and how to run the chosen one
(job_planner.py searches for them)."""

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import torch

from popsim.api.errors import OptionError
from popsim.api.options import Options
from popsim.reports.plan_page import job_plan_page, job_plan_section
from popsim.reports.plan_report import PipelinePlan, _span
from popsim.reports.sizing import mib


# How many shapes (IPUs per replica at a micro-batch size) planJob refines the
# best configuration of, the fastest first (job_planner._refine).
REFINED_SHAPES = 2


@dataclass
class JobCandidate:
    """One configuration of a whole job, as :func:`popsim.planJob` simulated it cost-only.

    Attributes:
        pipeline: The split over the IPUs of a replica, its schedule, recomputation, optimizer
            location and memory proportions, with the cost-only run's report (a
            :class:`popsim.PipelinePlan`; one IPU per replica is a split of one part).
        replicas: The replicas of the whole job (over all host processes).
        micro_batch: The micro-batch size of one replica.
        gradient_accumulation: Micro-batches per weight update (training; 1 for inference).
        device_iterations: Steps per call from the host.
        replicated_tensor_sharding: Whether the optimizer state is sharded over the replicas.
        processes: The host processes (PopRun instances) the replicas are streamed by.
        training: Whether the job trains.
        lost: For a runner-up, why the chosen configuration beat it; empty otherwise.
    """
    pipeline: PipelinePlan
    replicas: int
    micro_batch: int
    gradient_accumulation: int
    device_iterations: int
    replicated_tensor_sharding: bool
    processes: int
    training: bool
    lost: str = ""

    @property
    def ipus_per_replica(self) -> int:
        """The IPUs one replica is pipelined over."""
        return self.pipeline.ipus

    @property
    def global_batch(self) -> int:
        """Samples per weight update in training (replicas x micro-batch x gradient
        accumulation); samples per call in inference (replicas x micro-batch x device
        iterations)."""
        per_step = self.gradient_accumulation if self.training else self.device_iterations
        return self.replicas * self.micro_batch * per_step

    @property
    def fits(self) -> bool:
        """Whether every IPU's memory holds the program (the cost-only run's report)."""
        return self.pipeline.fits

    @property
    def throughput(self) -> float:
        """Simulated items/s of the whole job (the cost-only run's report)."""
        return self.pipeline.throughput

    def config(self) -> Dict[str, Any]:
        """Describes the configuration as plain values.

        Returns:
            The JSON's ``config``: replicas, IPUs per replica, layout (candidates per IPU),
            micro-batch, gradient accumulation, device iterations, global batch, schedule,
            recomputation, optimizer state off chip, replicated tensor sharding, processes
            and the memory proportions the plan raised.
        """
        return {
            "replicas": self.replicas,
            "ipus_per_replica": self.ipus_per_replica,
            "layout": self.pipeline.layout,
            "micro_batch": self.micro_batch,
            "gradient_accumulation": self.gradient_accumulation,
            "device_iterations": self.device_iterations,
            "global_batch": self.global_batch,
            "schedule": self.pipeline.schedule.value,
            "recomputation": self.pipeline.recomputation,
            "optimizer_off_chip": self.pipeline.optimizer_off_chip,
            "replicated_tensor_sharding": self.replicated_tensor_sharding,
            "processes": self.processes,
            "memory_proportions": {f"IPU{ipu}": value for ipu, value
                                   in sorted(self.pipeline.memory_proportions.items())},
        }

    def options(self, base: Optional[Options] = None) -> Options:
        """Makes the options that run the annotated model (:meth:`apply`) as this configuration.

        With several processes they are process 0's: each process sets its own id with
        ``opts.Distributed.configureProcessId(process, processes)`` (or runs under PopRun,
        whose popdist options set it), and ``replicationFactor`` counts one process's
        replicas, as in PopTorch.

        Args:
            base: The options to start from; they are copied, not changed. None: new
                :class:`popsim.Options`.

        Returns:
            A copy of ``base`` with the configuration's strategy, replication, gradient
            accumulation, device iterations, recomputation and optimizer location (and
            without ``base``'s memory proportions for IPUs beyond a replica's).
        """
        opts = self.pipeline.options(base)
        # Proportions set for IPUs the replica does not have (the base options'
        # own split's) are dropped; the others are kept.
        proportions = opts.available_memory_proportion
        if any(ipu >= self.ipus_per_replica for ipu in proportions):
            opts.setAvailableMemoryProportion({f"IPU{ipu}": value
                                               for ipu, value in proportions.items()
                                               if ipu < self.ipus_per_replica})
        opts.replicationFactor(self.replicas // self.processes)
        opts.deviceIterations(self.device_iterations)
        if self.training:  # (an inference job's options keep base's training settings)
            opts.Training.gradientAccumulation(self.gradient_accumulation)
            opts.Training.recomputation(self.pipeline.recomputation)
            location = copy.copy(opts.TensorLocations.optimizer_location)
            location.useOnChipStorage(not self.pipeline.optimizer_off_chip)
            location.useReplicatedTensorSharding(self.replicated_tensor_sharding)
            opts.TensorLocations.setOptimizerLocation(location)
        opts.Distributed.configureProcessId(0, self.processes)  # (base's own is replaced)
        return opts

    def option_lines(self) -> List[str]:
        """Writes the options that :meth:`options` sets as code.

        Returns:
            The calls on an :class:`popsim.Options` named ``opts``, one line each.
        """
        lines = [line for line in self.pipeline.option_lines()
                 if not line.startswith(("opts.Training.recomputation",
                                         "opts.TensorLocations.setOptimizerLocation"))]
        lines += [f"opts.replicationFactor({self.replicas // self.processes})",
                  f"opts.deviceIterations({self.device_iterations})"]
        if self.training:
            lines += [f"opts.Training.gradientAccumulation({self.gradient_accumulation})",
                      f"opts.Training.recomputation({self.pipeline.recomputation})",
                      "opts.TensorLocations.setOptimizerLocation(popsim.TensorLocationSettings()"
                      f".useOnChipStorage({not self.pipeline.optimizer_off_chip})"
                      f".useReplicatedTensorSharding({self.replicated_tensor_sharding}))"]
        if self.processes > 1:
            lines.append(f"opts.Distributed.configureProcessId(process, {self.processes})  "
                         "# or run under poprun")
        return lines

    def apply(self, model: torch.nn.Module, options: Optional[Options] = None) -> Options:
        """Annotates a model with this configuration's blocks and makes the options to run it.

        Args:
            model: The model the plan was made for; it is annotated in place (see
                :meth:`popsim.PipelinePlan.apply`).
            options: The options to start from; they are copied, not changed.

        Returns:
            The options of :meth:`options`.
        """
        self.pipeline.apply(model, None)
        return self.options(options)

    def summary(self) -> str:
        """Describes the configuration in one line.

        Returns:
            The replicas and IPUs per replica with the split, the settings, the simulated
            throughput and whether it fits (or its fullest IPU when it does not).
        """
        settings = [f"micro-batch {self.micro_batch}"]
        if self.training:
            settings += [f"accumulation {self.gradient_accumulation}",
                         f"device iterations {self.device_iterations}",
                         f"recomputation {'on' if self.pipeline.recomputation else 'off'}",
                         "optimizer state " + ("off" if self.pipeline.optimizer_off_chip
                                               else "on")
                         + " chip" + (", sharded" if self.replicated_tensor_sharding else "")]
        else:
            settings.append(f"device iterations {self.device_iterations}")
        if self.processes > 1:
            settings.append(f"{self.processes} processes")
        if self.pipeline.schedule.value != "Interleaved":
            settings.append(f"schedule {self.pipeline.schedule.value}")
        if self.pipeline.memory_proportions:
            settings.append("memory proportion " + "/".join(
                f"{value:.2f}" for _, value in sorted(self.pipeline.memory_proportions.items())))
        return (f"{self.replicas} x {self.ipus_per_replica} IPUs "
                f"{self.pipeline.layout}, " + ", ".join(settings) + ": "
                + f"{self.throughput:,.0f} items/s, "
                + ("fits" if self.fits else f"does NOT fit ({_fullest(self)})"))


def _fullest(candidate: JobCandidate) -> str:
    ipu = max(candidate.pipeline.report.ipus, key=lambda i: i.memory_bytes / i.capacity_bytes)
    return (f"IPU{ipu.ipu} needs {mib(ipu.memory_bytes)} of {mib(ipu.capacity_bytes)}, "
            f"{ipu.memory_bytes / ipu.capacity_bytes:.0%}")


@dataclass
class JobPlan:
    """What :func:`popsim.planJob` found: the chosen configuration, the runners-up and every
    configuration simulated.

    Attributes:
        model: The model's class name.
        ipus: The IPUs of the POD planned for.
        global_batch: The global batch asked for.
        tolerance: How far (relative) a configuration's global batch may be from it.
        training: Whether the job trains (an optimizer was given).
        candidates: The modules the replicas' pipelines were split at; ``[""]`` when the
            model had no module to split at and runs whole on replicas of one IPU.
        chosen: The fastest configuration that fits; None when none fits.
        runners_up: The best configuration of each other replica shape and micro-batch, the
            fastest first, each with why it lost.
        searched: Every configuration simulated, in the order simulated.
        seconds: The planner's wall-clock seconds.
        advice: When nothing fits, what would.
        given_options: The options given to :func:`popsim.planJob` (None: its defaults),
            where :meth:`apply` starts by default.
        skipped: How many shapes (IPUs per replica at a micro-batch size) were not simulated,
            by reason: one that did not fit at a smaller micro-batch, one with too few
            micro-batches per step to fill its pipeline, one whose upper bound (its replicas x
            micro-batch at its best split's profiled pace, inter-IPU copies left out) is below
            the best found.
    """
    model: str
    ipus: int
    global_batch: int
    tolerance: float
    training: bool
    candidates: List[str]
    chosen: Optional[JobCandidate] = None
    runners_up: List[JobCandidate] = field(default_factory=list)
    searched: List[JobCandidate] = field(default_factory=list)
    seconds: float = 0.0
    advice: List[str] = field(default_factory=list)
    skipped: Dict[str, int] = field(default_factory=dict)
    given_options: Optional[Options] = field(default=None, repr=False, compare=False)

    @property
    def fits(self) -> bool:
        """Whether a configuration fits (``chosen`` is not None)."""
        return self.chosen is not None

    def _require_chosen(self) -> JobCandidate:
        if self.chosen is None:
            raise OptionError(f"popsim.planJob found no configuration of {self.model} on "
                              f"{self.ipus} IPUs that fits: " + " ".join(self.advice),
                              option="planJob.ipus")
        return self.chosen

    def apply(self, model: torch.nn.Module, options: Optional[Options] = None) -> Options:
        """Applies the chosen configuration: see :meth:`popsim.JobCandidate.apply`.

        A model profiled with the options returned (:meth:`popsim.Options.enableProfiling`)
        shows this plan in its ``report.html``, after the summary: the chosen configuration's
        memory per IPU, the throughput of every configuration searched and the printed report.

        Args:
            model: The model the plan was made for; it is annotated in place.
            options: The options to start from; they are copied, not changed. None: the
                options given to :func:`popsim.planJob` (which its figures assumed).

        Returns:
            The options that run the chosen configuration.

        Raises:
            OptionError: when nothing fits; the message carries the plan's advice.
        """
        opts = self._require_chosen().apply(
            model, options if options is not None else self.given_options)
        object.__setattr__(opts, "_plan_section", job_plan_section(self))
        return opts

    def to_dict(self) -> Dict[str, Any]:
        """Describes the plan as JSON values.

        Returns:
            The request (model, IPUs, global batch, tolerance), the chosen configuration with
            its figures, split, annotations and option calls, the runners-up, every
            configuration simulated, the shapes skipped and the advice.
        """
        def entry(candidate: JobCandidate) -> Dict[str, Any]:
            return {"config": candidate.config(), "throughput": candidate.throughput,
                    "step_seconds": candidate.pipeline.step_seconds, "fits": candidate.fits,
                    "ipus": [{"ipu": ipu.ipu, "memory_bytes": ipu.memory_bytes,
                              "capacity_bytes": ipu.capacity_bytes,
                              "busy_share": ipu.busy_share}
                             for ipu in candidate.pipeline.report.ipus],
                    "lost": candidate.lost}

        chosen = None
        if self.chosen is not None:
            chosen = {**entry(self.chosen), "split": self.chosen.pipeline.split,
                      "tail": self.chosen.pipeline.tail,
                      "tail_after": self.chosen.pipeline.tail_after,
                      "annotations": self.chosen.pipeline.annotations(),
                      "options": self.chosen.option_lines()}
        return {"model": self.model, "ipus": self.ipus, "global_batch": self.global_batch,
                "tolerance": self.tolerance, "training": self.training,
                "seconds": self.seconds, "chosen": chosen,
                "runners_up": [entry(c) for c in self.runners_up],
                "searched": [entry(c) for c in self.searched], "skipped": self.skipped,
                "advice": self.advice}

    def to_json(self) -> str:
        """Writes the plan as JSON.

        Returns:
            :meth:`to_dict` as indented JSON text.
        """
        return json.dumps(self.to_dict(), indent=1)

    def to_html(self) -> str:
        """Draws the plan as a self-contained HTML page (nothing fetched).

        Returns:
            The page's text: each IPU's memory for the chosen configuration by category
            (report.html's colours) against its capacity, the simulated throughput of every
            configuration searched (the chosen one, those that fit, those that do not), and
            the printed report.
        """
        return job_plan_page(self)

    def __str__(self) -> str:
        job = "training" if self.training else "inference"
        lines = [f"Job plan for {self.model} on {self.ipus} IPUs ({job}), global batch "
                 f"{self.global_batch:,} (within {self.tolerance:.0%}): "
                 f"{len(self.searched)} configurations simulated cost-only in "
                 f"{self.seconds:.1f} s"]
        if self.skipped:
            lines.append("Shapes not simulated: " + "; ".join(
                f"{count} {reason}" for reason, count in self.skipped.items()))
        if self.chosen is None:
            lines.append("Nothing fits.")
        else:
            chosen = self.chosen
            report = chosen.pipeline.report
            step = chosen.pipeline.step_seconds
            lines += [f"Chosen: {chosen.summary()}",
                      f"  global batch {chosen.global_batch:,}; simulated step "
                      + (f"{step:,.3f} s" if step >= 1 else f"{step * 1e3:,.3f} ms")]
            pipeline = chosen.pipeline
            for ipu in pipeline.planned_ipus():
                share = ipu.memory_bytes / ipu.capacity_bytes if ipu.capacity_bytes else 0.0
                bar = "#" * round(20 * min(share, 1.0))
                runs = _span(pipeline.split[ipu.ipu])
                if ipu.ipu == 0 and pipeline.tail is not None:
                    runs += (f", then the tail {'after' if pipeline.tail_after else 'from'} "
                             f"{pipeline.tail}")
                lines.append(f"  IPU {ipu.ipu} [{bar:<20}] {mib(ipu.memory_bytes)} of "
                             f"{mib(ipu.capacity_bytes)} ({share:.0%}), busy "
                             f"{ipu.busy_share:.0%}: {runs}")
            replicas = "replica" if chosen.replicas == 1 else "replicas"
            per_replica = "IPU" if chosen.ipus_per_replica == 1 else "IPUs"
            lines.append(f"  ({chosen.replicas} {replicas} of {chosen.ipus_per_replica} "
                         f"{per_replica}: {report.total_ipus} IPUs in all)")
            lines.append("  Run it with plan.apply(model, opts), which does:")
            lines += [f"    {line}" for line in chosen.pipeline.annotations()
                      + chosen.option_lines()]
        if self.runners_up:
            lines.append(f"Runners-up (the best of each other shape and micro-batch; the "
                         f"best {REFINED_SHAPES} shapes' refined as the chosen one was):")
            for candidate in self.runners_up:
                lines += [f"  {candidate.summary()}", f"    lost: {candidate.lost}"]
        if self.advice:
            lines += ["Advice:"] + [f"- {line}" for line in self.advice]
        return "\n".join(lines)
