"""popsim.plan: chooses how to pipeline a model over IPUs from popsim's own
cost-only simulation.

The model is split at module boundaries a person can read: the children of
the model or of one of its modules (the one whose children hold most of its
parameters between them), or the modules the caller names (the
*candidates*, in the order the model calls them). A split gives each IPU a
run of consecutive candidates; IPU 0 also takes everything the model does
before its second run starts, and the last IPU everything after its first
candidate (heads, losses), unless a tail is named: then the model's last
part runs as a final stage on IPU 0 (heads tied to the first IPU's weights).

The search has three steps:

1. **Profile.** One cost-only compilation puts each candidate in a pipeline
   stage of its own, on its own IPU, and reads each stage's cycles per
   micro-batch (ExecutionTrace's stage loads) and memory. Default candidates
   (chosen by parameters) slower than an IPU's share of the time are split
   into the modules they call, and profiled again.
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

import functools
import itertools
import math
import re
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from popsim import _C
from popsim.api.errors import CompilationError, OptionError
from popsim.api.options import Options
from popsim.api.strategies import PipelinedExecution, PipelineSchedule, Stage
from popsim.frontend.blocks import BeginBlock, _BlockStart, opened_by_forward, removeBlocks
from popsim.frontend.blocks import reset_for_trace as reset_blocks_for_trace
from popsim.frontend.trace_reuse import reusing_traces
from popsim.reports.candidate_modules import (Profiled, _check_candidates, _default_candidates,
                                              _enclosing_modules, refined_by_time)
from popsim.reports.plan_report import WHOLE_MODEL, PipelinePlan, Plan, _plan_options
from popsim.reports.profile_recorder import not_profiling
from popsim.reports.raised_proportions import passes_budgets, raised_proportions
from popsim.reports.size_job import cost_only_call
from popsim.reports.sizing import mib

# Beyond this many splits, only the min-max split and its neighbours are ranked.
_ENUMERATED_SPLITS = 20000


def _has_blocks(model: torch.nn.Module) -> bool:
    return any(isinstance(hook, _BlockStart) for module in model.modules()
               for hooks in (module._forward_pre_hooks, module._forward_hooks)
               for hook in hooks.values())


def _splits(count: int, parts: int) -> Iterator[Tuple[int, ...]]:
    """Every split of `count` consecutive items into `parts` non-empty runs, as run lengths."""
    for cuts in itertools.combinations(range(1, count), parts - 1):
        bounds = (0,) + cuts + (count,)
        yield tuple(bounds[i + 1] - bounds[i] for i in range(parts))


def run_sums(values: Sequence[float], lengths: Sequence[int]) -> List[float]:
    """The sums of `values` over consecutive runs of `lengths` (a split's per-IPU totals)."""
    result, start = [], 0
    for length in lengths:
        result.append(sum(values[start:start + length]))
        start += length
    return result


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
                   keep: int, spans: Optional[Sequence[int]] = None) -> List[Tuple[int, ...]]:
    """The `keep` most promising splits, alternately the fastest and the
    leanest: the fastest are those with the smallest slowest IPU (its
    candidates' summed cycles, within 1%: the profile's precision), those
    estimated to fit first; the leanest have the least memory on the fullest
    IPU (_group_memory's estimate, which only orders splits: verification
    decides).

    When the candidates refine coarser ones (refined_by_time; `spans`: how
    many candidates each coarse one became), the coarse candidates' `keep`
    most promising splits are interleaved with them, in the candidates'
    lengths: the profile's sums miss what a boundary inside a module costs
    (a larger activation crossing to the next IPU), so refining must add
    splits to try, not displace the ones the coarse candidates had."""
    ranked = _ranked_fine_splits(cycles, memory, capacity, parts, keep)
    if spans is None or len(spans) < parts or len(spans) == len(cycles):
        return ranked
    assert sum(spans) == len(cycles), "spans cover the candidates"
    coarse = [tuple(int(n) for n in run_sums(spans, lengths)) for lengths in _ranked_fine_splits(
        run_sums(cycles, spans), _merged_memory(memory, spans), capacity, parts, keep)]
    interleaved: List[Tuple[int, ...]] = []
    for pair in itertools.zip_longest(ranked, coarse):
        interleaved += [lengths for lengths in pair if lengths and lengths not in interleaved]
    return interleaved


def _merged_memory(memory: List[Dict[str, int]], spans: Sequence[int]) -> List[Dict[str, int]]:
    """The profile's memory of runs of `spans` candidates as one candidate each, as
    _group_memory reads an IPU's: the code, activations and temporaries of the
    largest, the other categories summed."""
    merged: List[Dict[str, int]] = []
    start = 0
    for span in spans:
        members = memory[start:start + span]
        run: Dict[str, int] = {}
        for name in {name for categories in members for name in categories}:
            values = [categories.get(name, 0) for categories in members]
            run[name] = max(values) if name in _LARGEST else sum(values)
        merged.append(run)
        start += span
    return merged


def _ranked_fine_splits(cycles: List[float], memory: List[Dict[str, int]], capacity: int,
                        parts: int, keep: int) -> List[Tuple[int, ...]]:
    """_ranked_splits over the candidates as they are."""
    @functools.lru_cache(maxsize=None)  # a run of candidates recurs in many splits
    def group_memory(start: int, length: int, group: int) -> float:
        return _group_memory(memory, start, length, group, parts)

    def pace(lengths: Tuple[int, ...]) -> int:
        slowest = max(run_sums(cycles, lengths))
        return int(math.log(slowest) / math.log(1.01)) if slowest > 0 else 0

    def peak(lengths: Tuple[int, ...]) -> float:
        starts = itertools.accumulate(lengths[:-1], initial=0)
        return max(group_memory(start, length, group)
                   for group, (start, length) in enumerate(zip(starts, lengths)))

    def evenness(lengths: Tuple[int, ...]) -> float:
        return sum(s * s for s in run_sums(cycles, lengths))

    if math.comb(len(cycles) - 1, parts - 1) <= _ENUMERATED_SPLITS:
        pool = set(_splits(len(cycles), parts))
    else:
        best = _min_max_split(cycles, parts)
        pool = {best} | set(_neighbours(best))
        pool |= {n2 for n in list(pool) for n2 in _neighbours(n)}
        totals = [float(sum(categories.values())) for categories in memory]
        leanest = _min_max_split(totals, parts)
        pool |= {leanest} | set(_neighbours(leanest))
    # Each split's figures once (the two orders read them all).
    figures = {s: (peak(s), pace(s), evenness(s)) for s in pool}
    fastest = sorted(pool, key=lambda s: (figures[s][0] > capacity, figures[s][1],
                                          figures[s][0], figures[s][2]))
    leanest_first = sorted(pool, key=lambda s: figures[s])
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


def _annotate_candidates(model: torch.nn.Module, candidates: List[str], tail: Optional[str],
                         tail_after: bool) -> None:
    """One block per candidate: block "c0" starts with the model (and its first
    candidate), block "c<i>" with candidate i, and "tail" with (or after) the tail. Every split the
    planner compiles groups these blocks into stages (_on_candidate_stages), so the
    model's trace is the same for all of them and is traced once
    (trace_reuse)."""
    removeBlocks(model)
    BeginBlock(model, "c0")
    # The first candidate begins "c0" again (already open when it runs first), so that a
    # first candidate forward() calls after another one reopens "c0" after "c1", which the
    # compiler refuses (_profile names the two).
    for index, name in enumerate(candidates):
        if name != WHOLE_MODEL:  # (the model itself begins "c0" above)
            BeginBlock(model.get_submodule(name), f"c{index}")
    if tail is not None:
        BeginBlock(model.get_submodule(tail), "tail", after=tail_after)


def _on_candidate_stages(opts: Options, lengths: Sequence[int], schedule: PipelineSchedule,
                         tail: bool) -> Options:
    """`opts` (changed and returned) running a split over the candidates' blocks
    (_annotate_candidates): IPU k's stage groups its run of candidate blocks,
    then the tail's stage runs on IPU 0. The same op placement as the plan's
    own annotations and options (PipelinePlan.apply), which the tests check."""
    stages, start = [], 0
    for ipu, length in enumerate(lengths):
        stages.append(Stage(*[f"c{index}" for index in range(start, start + length)]).ipu(ipu))
        start += length
    if tail:
        stages.append(Stage("tail").ipu(0))
    opts.setExecutionStrategy(PipelinedExecution(*stages, schedule=schedule))
    return opts


def _profile(model: torch.nn.Module, candidates: List[str], tail: Optional[str],
             tail_after: bool, micro_batch: Any, options: Options,
             optimizer: Optional[torch.optim.Optimizer]
             ) -> Tuple[List[float], List[Dict[str, int]], int, List[float]]:
    """Each candidate's cycles per micro-batch and memory by category, an IPU's capacity,
    and each candidate's cycles receiving inter-IPU copies (which candidates on one IPU
    do not spend), from a cost-only run with every candidate a pipeline stage of its own,
    on its own IPU (the tail's stage on IPU 0, counted with the first candidate)."""
    _annotate_candidates(model, candidates, tail, tail_after)
    reset_blocks_for_trace()  # (what a previous model's forward() opened is not this one's)
    profile = _on_candidate_stages(options.clone(), [1] * len(candidates),
                                   PipelineSchedule.Interleaved, tail is not None)
    # Enough micro-batches to fill the profile's longer pipeline (its figures are per micro-batch).
    stages = len(candidates) + (tail is not None)
    if optimizer is not None:
        profile.Training.gradientAccumulation(
            max(profile.Training.gradient_accumulation, 2 * stages - 1))
    else:
        profile.deviceIterations(max(profile.device_iterations, stages))
    try:
        with cost_only_call(model, micro_batch, profile, optimizer) as executor:
            loads = _C.stage_loads(executor._program.first, executor._stages)
            report = executor.sizingReport()
    except CompilationError as error:
        # Candidates listed out of the order forward() calls them: their stages (block
        # "c<i>" is candidate i) would not ascend.
        order = re.findall(r"\(block 'c(\d+)'\) is in stage \d+ but runs after .*?"
                           r"\(block 'c(\d+)'\)", str(error))
        if not order:
            raise
        later, earlier = (candidates[int(index)] for index in order[0])
        raise OptionError(
            f"popsim.plan: the candidates must be listed in the order forward() calls them: "
            f"{earlier!r} is listed after {later!r} but runs before it ({candidates}).",
            option="plan.candidates") from error
    except OptionError as error:
        # The model opens blocks of its own inside forward() (popsim.Block, BlockFunction),
        # which hooks do not show (_has_blocks), and the profile's strategy does not place
        # them: say so in the planner's words.
        own = opened_by_forward()
        if not own or error.option != "setExecutionStrategy":
            raise
        raise OptionError(
            f"{type(model).__name__} opens pipeline blocks of its own inside forward() "
            f"(popsim.Block or BlockFunction: {', '.join(repr(b) for b in dict.fromkeys(own))}"
            f"): {error} The planners write their own blocks; build the model without its "
            "blocks (a reference model without layers_per_ipu) and plan that.",
            option="plan.model") from error
    # When the host exchanges held up every IPU (SyncPattern.Full, the simulated clock's
    # rule), they lengthen every pipeline cycle whatever the split: the splits are
    # balanced on the rest of each stage's time.
    cycles = [0.0] * len(candidates)
    copies = [0.0] * len(candidates)
    for load in loads:
        stalls_all = load["host_exchanges_stall_every_ipu"]
        cycles[load["ipu"]] += load["cycles"] - (load["host_cycles"] if stalls_all else 0)
        copies[load["ipu"]] += load["copy_cycles"]
    return (cycles, [ipu.memory_by_category for ipu in report.ipus],
            report.ipus[0].capacity_bytes, copies)


def _profile_finding_tail(caller: str, model: torch.nn.Module, names: List[str],
                          tail: Optional[str], after: bool, micro_batch: Any, options: Options,
                          optimizer: Optional[torch.optim.Optimizer], room_for_tail: bool,
                          tail_accumulation: str) -> Profiled:
    """_profile's figures, the tail and whether it starts after its module, and
    the tail the planner found by itself (or None). When no tail is named and
    a later part of the model shares weights with the first IPU's, what
    follows each module enclosing the candidates is tried as a tail on IPU 0
    (innermost first), then what follows the last candidate (for candidates
    that forward() calls one by one from a ModuleList, as GPT-2's blocks),
    if the pipeline has room for its stage (room_for_tail; else the error asks
    for `tail_accumulation` micro-batches)."""
    try:
        return (_profile(model, names, tail, after, micro_batch, options, optimizer), tail, after,
                None)
    except CompilationError as error:
        if "share weights" not in str(error) or tail is not None:
            raise
        for before_tail in (_enclosing_modules(model, names) + names[-1:] if room_for_tail
                            else []):
            try:
                return (_profile(model, names, before_tail, True, micro_batch, options, optimizer),
                        before_tail, True, before_tail)
            except CompilationError as again:
                if "share weights" not in str(again):
                    raise
        raise OptionError(
            f"{caller}: {error} The planner puts consecutive candidates on consecutive IPUs; a "
            "later part of the model that shares weights with the first IPU's (such as a "
            "decoder tied to the embeddings) can run there as a last stage: name the module "
            "where that part starts with tail='...' (or the module after which it starts with "
            "tail_after='...')"
            + ("" if room_for_tail else ", with Training.gradientAccumulation of at least "
               f"{tail_accumulation} for the extra stage") + ".",
            option=error.option) from error


# Memory that grows with each candidate an IPU holds; the stash also grows
# with how early the IPU's stage is (_stash_depth); the other categories
# (code, activations, temporaries) are mostly the IPU's largest candidate's.
_ADDITIVE = ("weights", "gradient accumulators", "optimizer state", "random state", "constants",
             "input streams", "prefetch buffers", "streamed in")


# The categories an IPU's largest candidate sets (they are not summed).
_LARGEST = ("code", "activations", "temporaries")


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
    for name in _LARGEST:
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

    Example:
        >>> model = torch.nn.Sequential(*(torch.nn.Linear(256, 256) for _ in range(4)))
        >>> split = popsim.plan(model, torch.zeros(8, 256), popsim.Options().deviceIterations(8),
        ...                     ipus=2)
        >>> print(split)  # doctest: +ELLIPSIS
        Pipeline plan for Sequential over 2 IPUs (inference): ...
        >>> opts = split.apply(model, popsim.Options().deviceIterations(8))
        >>> popsim.inferenceModel(model, opts)(torch.zeros(64, 256)).shape
        torch.Size([64, 256])

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
            them, in the order forward() calls them. None: the children of the model or of
            one of its modules: the one whose count of children holding parameters, times
            its share of the model's parameters, is largest (a transformer's layers, a
            UNet's top-level blocks, an EfficientNet's stages); a child the profile finds
            slower than an IPU's share of the time is split into the modules it calls.
        tail: The module where the model's last part starts when that part must run on IPU
            0, as a last pipeline stage beside the first candidates: a head that shares weights
            with the first IPU's layers (BERT's MLM decoder, tied to the word embeddings), as
            in Graphcore's BERT examples. Without ``tail`` or ``tail_after``, when a later part
            of the model shares weights with the first IPU's (no IPU but the first can run
            it), the planner runs what follows the innermost module holding every candidate
            (or, when forward() calls the candidates one by one from a ModuleList, as GPT-2's
            blocks, what follows the last candidate) as that tail by itself, and says so.
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
            candidate; no candidates are given and neither the model nor a module in it has
            2 or more children; both ``tail`` and ``tail_after`` are given; there are fewer
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
        raise OptionError(f"popsim.plan expects a torch.nn.Module, got {type(model).__name__}.",
                          option="plan.model")
    if isinstance(ipus, bool) or not isinstance(ipus, int) or ipus < 2:
        raise OptionError(f"popsim.plan: ipus must be an int of 2 or more (the IPUs to "
                          f"pipeline over), got {ipus!r}.", option="plan.ipus")
    if _has_blocks(model):
        raise OptionError(
            f"popsim.plan: {type(model).__name__} already has BeginBlock annotations; the "
            "planner writes its own. Remove them with popsim.removeBlocks(model) first.",
            option="plan.model")
    names = (_check_candidates(model, candidates) if candidates is not None
             else _default_candidates(model))
    if tail is not None and tail_after is not None:
        raise OptionError("popsim.plan takes tail or tail_after, not both: the tail starts at "
                          "one place.", option="plan.tail")
    after = tail_after is not None
    tail = tail_after if after else tail
    if tail is not None:
        _check_candidates(model, [tail], "tail_after" if after else "tail")
        if tail in names:
            raise OptionError(f"popsim.plan: the tail {tail!r} is also a candidate; the tail "
                              "runs on IPU 0 after every candidate.", option="plan.tail")
    def check_enough(names_: List[str]) -> None:
        if len(names_) < ipus:
            raise OptionError(
                f"popsim.plan: {len(names_)} candidate modules cannot fill {ipus} IPUs (each "
                "IPU runs one or more of them); name more candidates, or plan for fewer IPUs.",
                option="plan.ipus")

    if candidates is not None:  # (default ones are refined by time first)
        check_enough(names)
    base = (options or Options()).clone()
    training = optimizer is not None
    stages = ipus + (tail is not None)
    if training and base.Training.gradient_accumulation < 2 * stages - 1:
        raise OptionError(
            f"popsim.plan: pipelined training over {ipus} IPUs"
            + (" with a tail stage" if tail is not None else "")
            + f" needs Training.gradientAccumulation of at least {2 * stages - 1} (each of its "
            f"{stages} stages but the last runs its backward pass as a stage of its own), got "
            f"{base.Training.gradient_accumulation}.", option="Training.gradientAccumulation")
    if not training and base.device_iterations < stages:
        raise OptionError(
            f"popsim.plan: pipelined inference over {stages} stages needs deviceIterations of at "
            f"least {stages}, got {base.device_iterations}.", option="deviceIterations")
    automatic_tail = None
    spans: Optional[List[int]] = None  # how many candidates each default one became
    # Every split is a Stage grouping of the same candidate blocks: the
    # model is traced once, at the profile, and each later compilation reuses it.
    with reusing_traces(), not_profiling():
        try:
            enough = not training or base.Training.gradient_accumulation >= 2 * (ipus + 1) - 1
            (cycles, memory, capacity, copies), tail, after, automatic_tail = _profile_finding_tail(
                "popsim.plan", model, names, tail, after, micro_batch, base, optimizer,
                enough, f"{2 * (ipus + 1) - 1}")
            if candidates is None:
                def profile(names_: List[str], tail_: Optional[str], after_: bool) -> Profiled:
                    return _profile_finding_tail("popsim.plan", model, names_, tail_, after_,
                                                 micro_batch, base, optimizer, enough,
                                                 f"{2 * (ipus + 1) - 1}")
                names, ((cycles, memory, capacity, copies), tail, after, _), spans = \
                    refined_by_time(model, names,
                                    ((cycles, memory, capacity, copies), tail, after, None),
                                    profile, lambda _: ipus)
                check_enough(names)
            totals = [sum(categories.values()) for categories in memory]
            result = Plan(type(model).__name__, ipus, training, names, cycles, totals, capacity,
                          chosen=None, automatic_tail=automatic_tail)
            verified: List[PipelinePlan] = []

            def evaluate(lengths: Tuple[int, ...], schedule: PipelineSchedule, recompute: bool,
                         off_chip: bool, proportions: Optional[Dict[int, float]] = None
                         ) -> PipelinePlan:
                split = _group(names, lengths)
                _annotate_candidates(model, names, tail, after)
                opts = _on_candidate_stages(
                    _plan_options(len(lengths), schedule, recompute, off_chip, base,
                                  tail is not None, proportions),
                    lengths, schedule, tail is not None)
                with cost_only_call(model, micro_batch, opts, optimizer) as executor:
                    candidate = PipelinePlan(
                        split, schedule, recompute, off_chip, executor.sizingReport(), tail, after,
                        dict(proportions or {}), passes_budgets(executor))
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
            for lengths in _ranked_splits(cycles, memory, capacity, ipus, keep=for_splits,
                                          spans=spans):
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
                raised = raised_proportions(best)
                if raised is not None:
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
