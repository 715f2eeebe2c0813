"""popsim.planJob: chooses a whole job's configuration on a POD from popsim's
own cost-only simulation: how many replicas and how many IPUs each (with the
pipeline split), the micro-batch, gradient accumulation and device
iterations that give the asked global batch, recomputation, the optimizer
state's location and sharding, the memory proportions and the host
processes.

The search, for each micro-batch size (the example's first, then the larger,
then the smaller; then doublings of the largest while it gives the best):

1. **Profile** (planner.py): one cost-only run with every candidate module a
   pipeline stage of its own gives each candidate's cycles per micro-batch
   and memory. Every later compilation at this micro-batch reuses the same
   trace (trace_reuse), so it costs the import and the cost-only compile
   only, a fraction of a second. Default candidates are first refined by
   time at the example's micro-batch (planner.refined_by_time), against the
   deepest pipeline they allow, before the shapes are listed.
2. **Shapes.** For each number of IPUs per replica dividing the POD (1 up to
   the candidates' count), the replicas fill the POD and the gradient
   accumulation (training) or device iterations (inference) make up the
   global batch. A shape whose upper bound (its replicas x micro-batch over
   the profile's best split's slowest IPU) cannot beat the fastest fitting
   configuration found so far is skipped.
3. **Memory ladder.** The best-ranked splits of each shape are compiled with
   settings that trade more and more time for memory until one fits:
   nothing, the optimizer state sharded over the replicas (replicated
   tensor sharding), recomputation, both, the state off chip as well, and
   the Sequential schedule. When none of a shape's ranked splits fits with a
   pipelined schedule, up to _REPAIRS more splits are compiled, each moving
   one candidate off the IPU that overflowed most in the closest miss, then,
   once one fits, off the busiest IPU of the best that fits: the profile's
   estimates rank splits, compiled ones correct them.

The fastest configurations that fit, the best of the two fastest shapes, are
then tried with their spare memory given to matmuls that ran in passes, the
Grouped schedule and more device iterations, each kept if it is faster, and
with the fewest host processes that lose nothing (each process streams its
replicas' inputs in turn).
Every figure is a cost-only run's, so a plan's prediction is what a
cost-only run of its options reports.
"""

import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from popsim.api.errors import OptionError
from popsim.api.options import Options
from popsim.api.strategies import PipelineSchedule
from popsim.compile.progress import delay as progress_delay
from popsim.frontend import structure as _structure
from popsim.frontend.blocks import removeBlocks
from popsim.frontend.trace_reuse import reusing_traces
from popsim.reports.job_plan import REFINED_SHAPES, JobCandidate, JobPlan
from popsim.reports.plan_report import WHOLE_MODEL, PipelinePlan
from popsim.reports.candidate_modules import (Profiled, _check_candidates, _default_candidates,
                                              refined_by_time)
from popsim.reports.planner import (_annotate_candidates, _group, _has_blocks,
                                    _on_candidate_stages, _profile_finding_tail, _ranked_splits,
                                    run_sums)
from popsim.reports.profile_recorder import not_profiling
from popsim.reports.raised_proportions import passes_budgets, raised_proportions
from popsim.reports.size_job import cost_only_call
from popsim.reports.sizing import mib

# The most micro-batch sizes tried by default: the example's 4, and up to 2
# doublings of the largest while it gives the best configuration.
_MOST_SIZES = 6
# Splits compiled per shape (the fastest-ranked and the leanest-ranked).
_SPLITS_PER_SHAPE = 2
# Further splits compiled for a shape none of whose ranked splits fits with a
# pipelined (not Sequential) schedule: each moves a candidate off the fullest
# IPU of the closest miss until one fits, then off the busiest IPU of the
# best that fits (_shifted).
_REPAIRS = 4
# A refinement (device iterations, processes) is kept only when this much faster.
_GAIN = 1.005


def _tensors(micro_batch: Any) -> List[Any]:
    """The example micro-batch's leaves, nested ones (in dicts, lists, tuples) too."""
    inputs = micro_batch if isinstance(micro_batch, tuple) else (micro_batch,)
    return _structure.flatten(inputs, "")[0]


def _batch_size(micro_batch: Any) -> int:
    sizes = {t.shape[0] for t in _tensors(micro_batch)
             if isinstance(t, torch.Tensor) and t.dim() > 0}
    if len(sizes) != 1:
        raise OptionError(
            "popsim.planJob: the example micro-batch's tensors must share one batch size (their "
            f"first dimension) to be resized; got sizes {sorted(sizes)}.",
            option="planJob.micro_batch")
    return sizes.pop()


def _resized(micro_batch: Any, size: int) -> Any:
    """The example micro-batch with `size` samples: its rows, repeated in turn."""
    def resize(value: Any) -> Any:
        if not isinstance(value, torch.Tensor) or value.dim() == 0:
            return value
        return value[torch.arange(size) % value.shape[0]]

    inputs = micro_batch if isinstance(micro_batch, tuple) else (micro_batch,)
    leaves, _, structure = _structure.flatten(inputs, "")
    resized = _structure.unflatten([resize(leaf) for leaf in leaves], structure)
    return resized if isinstance(micro_batch, tuple) else resized[0]


def _divisors(count: int) -> List[int]:
    return [d for d in range(1, count + 1) if count % d == 0]


# A rung of the memory ladder: recomputation, state off chip, sharded state, schedule.
Rung = Tuple[bool, bool, bool, PipelineSchedule]


def _ladder(training: bool, replicas: int) -> List[Rung]:
    """(recomputation, state off chip, sharded state, schedule), cheapest in time first."""
    interleaved = PipelineSchedule.Interleaved
    if not training:
        return [(False, False, False, interleaved)]
    shard = replicas > 1
    steps = [(False, False, False, interleaved)]
    if shard:
        steps.append((False, False, True, interleaved))
    steps.append((True, False, False, interleaved))
    if shard:
        steps.append((True, False, True, interleaved))
    steps.append((True, True, shard, interleaved))
    steps.append((True, True, shard, PipelineSchedule.Sequential))
    return steps


def _fullness(candidate: JobCandidate) -> List[float]:
    """Each IPU's memory as a share of its capacity: group i runs on IPU i."""
    return [ipu.memory_bytes / ipu.capacity_bytes for ipu in candidate.pipeline.report.ipus]


def _busy(candidate: JobCandidate) -> List[float]:
    """Each IPU's busy share of the call: group i runs on IPU i."""
    return [ipu.busy_share for ipu in candidate.pipeline.report.ipus]


def _shifted(lengths: Sequence[int], load: Sequence[float]) -> Optional[Tuple[int, ...]]:
    """The split with one candidate moved from the most loaded IPU's group to
    its less loaded neighbour. The profile ranks splits by estimates; a
    compiled split says which IPU overflows (load: memory) or holds the
    pipeline back (load: busy share). None when that group has one candidate
    left or no neighbour is less loaded."""
    groups = len(lengths)
    heaviest = max(range(groups), key=lambda g: load[g])
    neighbours = [g for g in (heaviest - 1, heaviest + 1) if 0 <= g < groups]
    if lengths[heaviest] < 2 or not neighbours:
        return None
    lighter = min(neighbours, key=lambda g: load[g])
    if load[lighter] >= load[heaviest]:
        return None
    moved = list(lengths)
    moved[heaviest] -= 1
    moved[lighter] += 1
    return tuple(moved)


def _climb(ladder: List[Rung], evaluate: Callable[[Rung], JobCandidate]) -> List[JobCandidate]:
    """The ladder's rungs evaluated: the leanest Interleaved rung first (when
    even it does not fit, only the Sequential rung is left to try); when it
    fits, the rungs from the cheapest up until one fits."""
    if len(ladder) == 1:
        return [evaluate(ladder[0])]
    leanest = evaluate(ladder[-2])
    if not leanest.fits:
        return [leanest, evaluate(ladder[-1])]
    tried = [leanest]
    for rung in ladder[:-2]:
        tried.append(evaluate(rung))
        if tried[-1].fits:
            break
    return tried


def _splits_tried(splits: Sequence[Tuple[int, ...]],
                  climb: Callable[[Tuple[int, ...]], List[JobCandidate]]) -> List[JobCandidate]:
    """Every candidate that climbing the memory ladder (`climb`) on a shape's
    ranked splits compiled, in order; then on up to _REPAIRS splits that each
    move one candidate, while none fits with a pipelined schedule, off the
    IPU that overflowed most in the leanest rung's closest miss; once one
    fits only thanks to repairs, off the busiest IPU of the best that fits."""
    tried = set(splits)
    queue = list(splits)
    climbed: List[JobCandidate] = []
    closest: Optional[JobCandidate] = None  # the leanest rung's closest miss
    while queue:
        these = climb(queue.pop(0))
        climbed += these
        leanest = these[0]
        if not leanest.fits and (closest is None or
                                 max(_fullness(leanest)) < max(_fullness(closest))):
            closest = leanest
        if queue or len(tried) >= len(splits) + _REPAIRS:
            continue
        fitting = [c for c in climbed if c.fits]
        following: Optional[Tuple[int, ...]] = None
        if not any(c.pipeline.schedule != PipelineSchedule.Sequential for c in fitting):
            if closest is not None:
                following = _shifted(closest.pipeline.layout, _fullness(closest))
        elif len(tried) > len(splits):  # the repairs made it fit: balance the best
            fastest = max(fitting, key=lambda c: c.throughput)
            following = _shifted(fastest.pipeline.layout, _busy(fastest))
        if following is not None and following not in tried:
            tried.add(following)
            queue.append(following)
    return climbed


def _difference(candidate: JobCandidate, chosen: JobCandidate) -> str:
    mine, best = candidate.config(), chosen.config()
    labels = {"replicas": "replicas", "ipus_per_replica": "IPUs per replica",
              "layout": "split", "micro_batch": "micro-batch",
              "gradient_accumulation": "accumulation", "device_iterations": "device iterations",
              "recomputation": "recomputation", "optimizer_off_chip": "state off chip",
              "replicated_tensor_sharding": "sharded state", "processes": "processes",
              "schedule": "schedule", "memory_proportions": "memory proportions"}
    def text(value: Any) -> str:
        return ("on" if value else "off") if isinstance(value, bool) else str(value)

    parts = [f"{label} {text(mine[key])} (chosen {text(best[key])})"
             for key, label in labels.items() if mine[key] != best[key]]
    return ", ".join(parts) if parts else "nothing"


def _why_lost(candidate: JobCandidate, chosen: JobCandidate) -> str:
    if not candidate.fits:
        ipu = max(candidate.pipeline.report.ipus,
                  key=lambda i: i.memory_bytes / i.capacity_bytes)
        return (f"does not fit: IPU{ipu.ipu} needs {mib(ipu.memory_bytes)} of "
                f"{mib(ipu.capacity_bytes)} even with {candidate.pipeline.settings()}; "
                f"differs in {_difference(candidate, chosen)}")
    slower = 1.0 - candidate.throughput / chosen.throughput
    busiest = max(candidate.pipeline.report.ipus, key=lambda i: i.busy_share)
    return (f"{slower:.1%} slower (its busiest IPU, IPU{busiest.ipu}, is busy "
            f"{busiest.busy_share:.0%} of the step); differs in "
            f"{_difference(candidate, chosen)}")


def planJob(model: torch.nn.Module, micro_batch: Any,
            optimizer: Optional[torch.optim.Optimizer] = None, *, ipus: int,
            global_batch: int, options: Optional[Options] = None,
            micro_batch_sizes: Optional[Sequence[int]] = None, tolerance: float = 0.05,
            candidates: Optional[Sequence[str]] = None, tail: Optional[str] = None,
            tail_after: Optional[str] = None, progress: bool = True) -> JobPlan:
    """Chooses a whole job's configuration on a POD: replicas, IPUs per replica and their
    split, micro-batch, gradient accumulation, device iterations, memory settings, processes.

    Every configuration is simulated cost-only (the same figures as :func:`popsim.sizeJob`);
    the model is traced once per micro-batch size, and each configuration after the first
    costs the import and the cost-only compile only. The plan chosen gives the most simulated
    throughput among those that fit every IPU. The model is left without annotations.

    Example:
        >>> model = torch.nn.Sequential(*(torch.nn.Linear(256, 256) for _ in range(4)))
        >>> job = popsim.planJob(model, torch.zeros(8, 256), ipus=4, global_batch=64, progress=False)
        >>> job.chosen.fits, job.chosen.global_batch
        (True, 64)
        >>> print(job)  # doctest: +ELLIPSIS
        Job plan for Sequential on 4 IPUs (inference), global batch 64 (within 5%): ...
        >>> opts = job.apply(model, popsim.Options())  # the chosen split's blocks and options

    Args:
        model: The model to plan for; it must have no :func:`popsim.BeginBlock` annotations.
        micro_batch: An example micro-batch of one replica's inputs (a tensor, or a tuple of
            the model's positional inputs, each with its batch dimension first). Other
            micro-batch sizes are made by repeating its rows.
        optimizer: The optimizer of a training job; None plans an inference job.
        ipus: The IPUs of the POD (16 for a Bow Pod16, 64 for a Bow Pod64).
        global_batch: In training, the samples per weight update (replicas x micro-batch x
            gradient accumulation); in inference, the samples per call (replicas x
            micro-batch x device iterations).
        options: The job's other options (precision, memory proportions, ...); they are
            copied, not changed. Their replication, gradient accumulation, device iterations,
            recomputation, optimizer location, processes and execution strategy are the
            planner's to choose. None: default :class:`popsim.Options`.
        micro_batch_sizes: The micro-batch sizes to try. None: the example's size, a half and
            a quarter of it, and twice it; then, while the largest size tried gives the best
            configuration, twice that (6 sizes at most).
        tolerance: How far (relative) a configuration's global batch may be from
            ``global_batch``.
        candidates: The modules to split a replica at, as for :func:`popsim.plan`. None:
            the planner's own; when no module of the model has 2 or more children holding
            parameters, the model runs whole on replicas of one IPU
            (``plan.candidates == [""]``).
        tail: The module where a last part that shares the first IPU's weights starts, as for
            :func:`popsim.plan` (found by itself when not given).
        tail_after: Instead of ``tail``, the module after which that part starts.
        progress: Whether to show the search's progress bar.

    Returns:
        A :class:`popsim.JobPlan`. ``str(plan)`` prints the chosen configuration (throughput,
        per-IPU memory bars and busy shares, the annotations and options that run it), the
        runners-up with why each lost and, when nothing fits, what would; ``plan.to_json()``
        gives the same as JSON; ``plan.apply(model, options)`` annotates the model and returns
        the options.

    Raises:
        OptionError: when ``model`` is not a ``torch.nn.Module`` or has BeginBlock
            annotations; ``ipus`` or ``global_batch`` is not a positive int; ``tolerance`` is
            not in [0, 1); a micro-batch size is not a positive int; the example's tensors do
            not share a batch size; candidates or tail are wrong (as for :func:`popsim.plan`);
            or no configuration's global batch is within the tolerance.
        CompilationError: when a cost-only compilation of the model fails.
    """
    started = time.monotonic()
    if not isinstance(model, torch.nn.Module):
        raise OptionError(f"popsim.planJob expects a torch.nn.Module, got "
                          f"{type(model).__name__}.", option="planJob.model")
    for name, value in (("ipus", ipus), ("global_batch", global_batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OptionError(f"popsim.planJob: {name} must be a positive int, got {value!r}.",
                              option=f"planJob.{name}")
    if not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise OptionError(f"popsim.planJob: tolerance is the relative distance a global batch "
                          f"may be from {global_batch}, in [0, 1); got {tolerance!r}.",
                          option="planJob.tolerance")
    if _has_blocks(model):
        raise OptionError(
            f"popsim.planJob: {type(model).__name__} already has BeginBlock annotations; the "
            "planner writes its own. Remove them with popsim.removeBlocks(model) first.",
            option="planJob.model")
    example = _batch_size(micro_batch)
    sizes = sorted(set(micro_batch_sizes) if micro_batch_sizes is not None else
                   {max(1, example // 4), max(1, example // 2), example, 2 * example})
    for size in sizes:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise OptionError(f"popsim.planJob: micro-batch sizes must be positive ints, got "
                              f"{size!r}.", option="planJob.micro_batch_sizes")
    # A model with no module to split at runs whole on replicas of one IPU.
    names = (_check_candidates(model, candidates) if candidates is not None
             else _default_candidates(model, whole_if_none=True))
    if tail is not None and tail_after is not None:
        raise OptionError("popsim.planJob takes tail or tail_after, not both.",
                          option="planJob.tail")
    after = tail_after is not None
    tail = tail_after if after else tail
    if tail is not None:
        _check_candidates(model, [tail], "tail_after" if after else "tail")
    training = optimizer is not None
    base = (options or Options()).clone()
    base.showCompilationProgressBar(False)
    base.Training.recomputation(False)  # the planner's to choose (and the profile's is off)

    def per_step(replicas: int, size: int) -> Optional[int]:
        """Gradient accumulation (training) or device iterations (inference) making up the
        global batch within the tolerance; None if none does."""
        count = max(1, round(global_batch / (replicas * size)))
        made = replicas * size * count
        return count if abs(made - global_batch) <= tolerance * global_batch else None

    def fills_pipeline(count: int, stages: int) -> bool:
        """Whether `count` micro-batches a step fill a replica's pipeline of `stages`
        (a training pipeline needs 2 x stages - 1, an inference one `stages`)."""
        return stages == 1 or count >= (2 * stages - 1 if training else stages)

    def runs(size: int, k: int, replicas: int) -> bool:
        """Whether micro-batch `size` on `replicas` of `k` IPUs makes up the global batch
        with enough micro-batches a step to fill the replica's pipeline."""
        count = per_step(replicas, size)
        return count is not None and fills_pipeline(count, k)

    def feasible_shapes(deepest: int) -> List[Tuple[int, int, int]]:
        """(micro-batch, IPUs per replica, replicas) of each configuration making up the
        global batch with enough micro-batches a step to fill its pipeline (the tail's
        stage, known only once profiled, may still need more), with at most `deepest` IPUs
        per replica (one per candidate)."""
        shapes_ = [(k, ipus // k) for k in _divisors(ipus) if k <= deepest]
        found = [(size, k, r) for size in sizes for k, r in shapes_
                 if runs(size, k, r)]
        if not found:
            raise OptionError(
                f"popsim.planJob: no configuration of {ipus} IPUs makes a global batch within "
                f"{tolerance:.0%} of {global_batch} with micro-batches {sizes} (replicas x "
                "micro-batch must not exceed it, and a replica pipelined over k IPUs needs "
                f"{'2k - 1' if training else 'k'} micro-batches a step); ask for a larger "
                "global batch, smaller micro-batches or a larger tolerance.",
                option="planJob.global_batch")
        return found

    # Before any compilation: the batch may be impossible (default candidates may be
    # refined into more, so any depth counts until then).
    feasible = feasible_shapes(len(names) if candidates is not None or names == [WHOLE_MODEL]
                               else ipus)
    batches: Dict[int, Any] = {}  # the example micro-batch resized, by size
    profiles: Dict[int, Profiled] = {}  # the candidates' profile, by micro-batch size
    spans: Optional[List[int]] = None  # how many candidates each default one became

    def profiled(size: int, names_: List[str], tail_: Optional[str], after_: bool) -> Profiled:
        """The candidates' profile at micro-batch `size`, each candidate a stage."""
        if size not in batches:
            batches[size] = _resized(micro_batch, size)
        profile_options = base.clone()
        if training:  # room for every candidate's stage and a tail's
            profile_options.Training.gradientAccumulation(2 * len(names_) + 1)
        return _profile_finding_tail("popsim.planJob", model, names_, tail_, after_,
                                     batches[size], profile_options, optimizer, True, "")

    def evaluate(size: int, lengths: Sequence[int], replicas: int, count: int,
                 recompute: bool, off_chip: bool, shard: bool, schedule: PipelineSchedule,
                 tail_: Optional[str], after_: bool, proportions: Optional[Dict[int, float]],
                 device_iterations: int, processes: int) -> JobCandidate:
        accumulation = count if training else 1
        iterations = device_iterations if training else count
        candidate = JobCandidate(
            PipelinePlan(_group(names, lengths), schedule, recompute, off_chip,
                         None, tail_, after_, dict(proportions or {})),  # type: ignore[arg-type]
            replicas, size, accumulation, iterations, shard, processes, training)
        # The candidate's own options, with its stages as groups of the candidate blocks.
        opts = _on_candidate_stages(candidate.options(base), lengths, schedule, tail_ is not None)
        _annotate_candidates(model, names, tail_, after_)
        with cost_only_call(model, batches[size], opts, optimizer) as executor:
            candidate.pipeline.passes_budgets = passes_budgets(executor)
            candidate.pipeline.report = executor.sizingReport()
        result.searched.append(candidate)
        return candidate

    best: Optional[JobCandidate] = None
    best_of_shape: Dict[Tuple[int, int], JobCandidate] = {}
    # IPUs per replica -> the smallest micro-batch at which nothing fitted.
    dead: Dict[int, float] = {}
    bar = _progress_bar(len(feasible), progress)

    def skip(reason: str) -> None:
        result.skipped[reason] = result.skipped.get(reason, 0) + 1
        bar.update(1)
    clock_hz: Optional[float] = None
    with reusing_traces(), not_profiling():
        try:
            if candidates is None:
                # Default candidates come from parameter counts: refined by their time at
                # the example's micro-batch against the deepest pipeline they allow.
                profiles[example] = profiled(example, names, tail, after)
                names, profiles[example], spans = refined_by_time(
                    model, names, profiles[example],
                    lambda names_, tail_, after_: profiled(example, names_, tail_, after_),
                    lambda names_: max(k for k in _divisors(ipus) if k <= len(names_)))
                tail, after = profiles[example][1:3]
                feasible = feasible_shapes(len(names))
                bar.total = len(feasible)
                bar.refresh()
            result = JobPlan(type(model).__name__, ipus, global_batch, float(tolerance),
                             training, names,
                             given_options=options.clone() if options is not None else None)
            shapes = [(k, ipus // k) for k in _divisors(ipus) if k <= len(names)]
            # The example's size first (a good configuration early makes the
            # bound prune more), then the larger sizes, then the smaller.
            order = ([size for size in sizes if size >= example]
                     + [size for size in reversed(sizes) if size < example])
            index = 0
            while True:
                if index == len(order):  # every size so far searched
                    if not (micro_batch_sizes is None and best is not None
                            and best.micro_batch == max(sizes) and len(sizes) < _MOST_SIZES):
                        break
                    # The largest size gave the best configuration: twice it next.
                    larger = 2 * max(sizes)
                    more = [(larger, k, r) for k, r in shapes
                            if runs(larger, k, r)]
                    if not more:
                        break
                    sizes.append(larger)
                    order.append(larger)
                    feasible += more
                    bar.total += len(more)
                    bar.refresh()
                size = order[index]
                index += 1
                shapes_here = [(k, r) for s, k, r in feasible if s == size]
                if not shapes_here:
                    continue
                if size not in profiles:
                    profiles[size] = profiled(size, names, tail, after)
                (cycles, memory, capacity, copies), tail, after, _ = profiles[size]
                for k, replicas in shapes_here:
                    if size >= dead.get(k, math.inf):
                        skip("did not fit at a smaller micro-batch")
                        continue
                    made_up = per_step(replicas, size)
                    assert made_up is not None, "only feasible shapes are listed"
                    count: int = made_up
                    if not fills_pipeline(count, k + (tail is not None)):
                        skip("too few micro-batches to fill the pipeline")
                        continue
                    splits: List[Tuple[int, ...]] = (
                        [(len(names),)] if k == 1 else
                        _ranked_splits(cycles, memory, capacity, k, _SPLITS_PER_SHAPE, spans))
                    if best is not None and clock_hz is not None:
                        # A lower bound on the shape's cycles per micro-batch: its splits'
                        # slowest stage without the profile's inter-IPU copies, which
                        # candidates sharing an IPU do not make (each candidate was a
                        # stage of its own in the profile).
                        computing = [c - copy for c, copy in zip(cycles, copies)]
                        pace = min(max(run_sums(computing, s)) for s in splits)
                        bound = replicas * size * clock_hz / pace if pace > 0 else math.inf
                        if bound < best.throughput:
                            skip("cannot beat the best even at its profile's pace")
                            continue

                    def climbing(lengths: Tuple[int, ...]) -> List[JobCandidate]:
                        def rung_of(rung: Rung) -> JobCandidate:
                            recompute, off_chip, shard, schedule = rung
                            # A process streams its replicas' inputs one replica after
                            # another (popsim's host threads, as Poplar's single-threaded
                            # stream callbacks), so shapes are compared with a process per
                            # replica; _refine then takes the fewest that lose nothing.
                            # Inference runs in one process (popdist spreads training jobs).
                            return evaluate(size, lengths, replicas, count, recompute, off_chip,
                                            shard, schedule, tail, after, None, 1,
                                            replicas if training else 1)
                        return _climb(_ladder(training, replicas), rung_of)

                    fitted = False
                    for candidate in _splits_tried(splits, climbing):
                        clock_hz = candidate.pipeline.report.clock_hz
                        kept = best_of_shape.get((k, size))
                        if kept is None or _better(candidate, kept):
                            best_of_shape[(k, size)] = candidate
                        if candidate.fits:
                            fitted = True
                            if best is None or candidate.throughput > best.throughput:
                                best = candidate
                    if not fitted:  # nor will it with larger micro-batches
                        dead[k] = min(dead.get(k, size), size)
                    bar.update(1)
            # The best configurations of the two fastest shapes are refined,
            # so that refinement cannot reverse the ranking of the two best.
            finalists = sorted((c for c in best_of_shape.values() if c.fits),
                               key=lambda c: -c.throughput)[:REFINED_SHAPES]
            refined = [_refine(c, evaluate, training) for c in finalists]
            for before, after_refining in zip(finalists, refined):
                best_of_shape[(before.ipus_per_replica, before.micro_batch)] = after_refining
            best = max(refined, key=lambda c: c.throughput) if refined else None
        finally:
            bar.close()
            removeBlocks(model)
    result.chosen = best
    if best is not None:
        others = [c for c in best_of_shape.values() if c is not best]
        others.sort(key=lambda c: (not c.fits, -c.throughput))
        for candidate in others:
            candidate.lost = _why_lost(candidate, best)
        result.runners_up = others[:5]
    else:
        smallest = min(profiles) if profiles else None
        memory = profiles[smallest][0][1] if smallest is not None else []
        result.advice = _advice(result, sizes, training, memory)
    result.seconds = time.monotonic() - started
    return result


def _better(candidate: JobCandidate, other: JobCandidate) -> bool:
    return (candidate.fits, candidate.throughput) > (other.fits, other.throughput)


def _refine(best: JobCandidate, evaluate: Any, training: bool) -> JobCandidate:
    """The best configuration with more memory for the matmuls that ran in passes,
    the Grouped schedule and more device iterations, each kept if it fits and
    is faster; then with the fewest processes that are as fast (within _GAIN)."""
    pipeline = best.pipeline
    lengths = pipeline.layout
    replicas, size = best.replicas, best.micro_batch
    count = best.gradient_accumulation if training else best.device_iterations

    def again(**changes: Any) -> JobCandidate:
        settings = dict(recompute=pipeline.recomputation, off_chip=pipeline.optimizer_off_chip,
                        shard=best.replicated_tensor_sharding, schedule=pipeline.schedule,
                        proportions=pipeline.memory_proportions or None,
                        device_iterations=best.device_iterations if training else 1,
                        processes=best.processes)
        settings.update(changes)
        return evaluate(size, lengths, replicas, count, settings["recompute"],
                        settings["off_chip"], settings["shard"], settings["schedule"],
                        pipeline.tail, pipeline.tail_after, settings["proportions"],
                        settings["device_iterations"], settings["processes"])

    raised = raised_proportions(pipeline)
    if raised is not None:
        best = _faster(best, again(proportions=raised))
        pipeline = best.pipeline
    if training and best.ipus_per_replica > 1:
        best = _faster(best, again(schedule=PipelineSchedule.Grouped))
        pipeline = best.pipeline
    if training:
        for iterations in (4, 16):
            best = _faster(best, again(device_iterations=iterations))
    for processes in range(1, best.processes):  # the fewest processes that lose nothing
        if best.processes % processes == 0:
            fewer = again(processes=processes)
            if fewer.fits and fewer.throughput * _GAIN >= best.throughput:
                return fewer
    return best


def _faster(best: JobCandidate, candidate: JobCandidate) -> JobCandidate:
    return candidate if candidate.fits and candidate.throughput > best.throughput * _GAIN \
        else best


def _progress_bar(total: int, show: bool) -> Any:
    """The search's bar on stderr, one step per shape; POPSIM_PROGRESS=0 hides it as it
    hides the compilation bar (and "1" or unset shows it, after SHOW_AFTER seconds unset)."""
    from tqdm.auto import tqdm  # popsim's dependency for its compile bar too

    delay = progress_delay()
    return tqdm(total=total, desc="Planning the job", unit="shape",
                disable=not show or delay is None, delay=delay or 0.0, leave=False)


# The memory the planner's ladder can take off a candidate's IPU: the optimizer state
# (off chip) and the stash (recomputation keeps only a stage's inputs).
_LADDER_MOVES = ("optimizer state", "stash")


def _advice(result: JobPlan, sizes: List[int], training: bool,
            candidate_memory: List[Dict[str, int]]) -> List[str]:
    """What would make a configuration fit, from the leanest one tried and the
    candidates' memory by category, each alone on an IPU, at the smallest micro-batch
    profiled (with the state on chip and no recomputation)."""
    if not result.searched:
        if "too few micro-batches to fill the pipeline" in result.skipped:
            return ["The shapes that make up the global batch have too few micro-batches a "
                    "step to fill their pipelines (with the tail's stage): ask for a larger "
                    "global batch or smaller micro-batches."]
        return ["No shape of the POD could run the global batch with these micro-batch sizes."]
    leanest = min(result.searched,
                  key=lambda c: max(i.memory_bytes / i.capacity_bytes
                                    for i in c.pipeline.report.ipus))
    fullest = max(leanest.pipeline.report.ipus, key=lambda i: i.memory_bytes / i.capacity_bytes)
    total = sum(i.memory_bytes for i in leanest.pipeline.report.ipus)
    needed = math.ceil(total / fullest.capacity_bytes)
    lines = [f"The leanest configuration tried ({leanest.summary()}) still needs "
             f"{mib(fullest.memory_bytes)} on IPU{fullest.ipu} of {mib(fullest.capacity_bytes)}."]
    # A candidate too large for an IPU even without what the ladder moves off it.
    too_large = [(name, lean) for name, categories in zip(result.candidates, candidate_memory)
                 for lean in [sum(bytes_ for category, bytes_ in categories.items()
                                  if category not in _LADDER_MOVES)]
                 if lean > fullest.capacity_bytes]
    if too_large:
        name, memory = max(too_large, key=lambda entry: entry[1])
        lines.append(f"{name} alone needs {mib(memory)} without its optimizer state and stash, "
                     "more than an IPU holds, so no number of IPUs per replica helps: split "
                     "it into smaller candidates (candidates=[...] naming modules inside it), "
                     "or use a smaller micro-batch.")
    elif needed > result.ipus:
        lines.append(f"Its replica needs about {mib(total)} in all, so about {needed} IPUs per "
                     "replica would hold it: plan on a larger POD.")
    else:
        lines.append(f"Its replica needs about {mib(total)} in all, which {needed} IPUs hold, "
                     f"but no split of the {len(result.candidates)} candidates over the POD's "
                     "shapes fit: name more, smaller candidates (candidates=[...]).")
    if min(sizes) > 1:
        lines.append(f"Smaller micro-batches than {min(sizes)} (micro_batch_sizes=[...]) lower "
                     "every IPU's activations and stash.")
    if training:
        lines.append("Recomputation, the optimizer state off chip and sharded, and the "
                     "Sequential schedule were all tried.")
    return lines
