"""The figures the docs draw from popsim's own runs when they build (the ``popsim-figure``
directive of popsim_docs.py): the same three-block model trained pipelined, sharded and in
phases, drawn from its profile as ``popsim.profiling`` draws it, its memory per IPU, and how
a call's combined batch splits into micro-batches (from a run whose model reports, for each
sample, its replica and micro-batch step). Each is a function returning a matplotlib
Figure; a run that several figures draw is made once per process."""

import functools
import tempfile
from typing import Any, Callable, Dict, List

import torch

import popsim
from doc_examples import ThreeBlocks
from popsim import profiling


def _strategy(kind: str) -> Any:
    stages = [popsim.Stage(f"B{index + 1}").ipu(index) for index in range(3)]
    if kind == "pipelined":
        return popsim.PipelinedExecution(*stages)
    if kind == "sharded":
        return popsim.ShardedExecution(*stages)
    if kind == "phased":  # one block per phase, each on IPU 0 (stage k of a phase on IPU k)
        return popsim.SerialPhasedExecution(*[popsim.Phase(f"B{index + 1}")
                                              for index in range(3)])
    raise ValueError(f"no strategy {kind!r}")


@functools.lru_cache(maxsize=None)
def profile_of(kind: str) -> profiling.Profile:
    """One training call of ThreeBlocks (micro-batch 4, gradientAccumulation 6), profiled."""
    torch.manual_seed(0)
    model = ThreeBlocks()
    opts = popsim.Options()
    opts.Training.gradientAccumulation(6)
    opts.setExecutionStrategy(_strategy(kind))
    with tempfile.TemporaryDirectory() as directory:
        opts.enableProfiling(directory)
        trainer = popsim.trainingModel(model, opts,
                                       popsim.optim.SGD(model.parameters(), lr=0.01))
        trainer(torch.randn(24, 1, 28, 28), torch.randint(0, 10, (24,)))
        trainer.destroy()
        return profiling.load(directory)


def _timeline(kind: str) -> Any:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9.0, 2.4))
    profiling.plot_timeline(profile_of(kind), ax=axes)
    figure.tight_layout()
    return figure


def memory() -> Any:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9.0, 2.6))
    profiling.plot_memory(profile_of("pipelined"), ax=axes)
    figure.tight_layout()
    return figure


class _Tagger(torch.nn.Module):
    """Returns, for each sample it takes, the sample (its input), the replica that took it (a
    parameter with one value per replica) and the micro-batch step it ran in (a buffer counting
    the model's runs); trains nothing."""

    def __init__(self, replicas: int) -> None:
        super().__init__()
        self.replica = torch.nn.Parameter(torch.arange(float(replicas)).reshape(replicas, 1))
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, x: torch.Tensor) -> Any:
        count = x.shape[0]
        tags = torch.stack([x[:, 0], self.replica.expand(count), self.steps.expand(count)], 1)
        self.steps.add_(1)
        return tags, popsim.identity_loss((self.weight * x).sum(), reduction="none")


def _combined_batch_tags(micro_batch: int, replicas: int, accumulation: int,
                         iterations: int) -> torch.Tensor:
    """A training call's (sample, replica, step) rows, one per sample of its combined batch, as
    popsim ran it."""
    opts = popsim.Options().deviceIterations(iterations).replicationFactor(replicas)
    opts.outputMode(popsim.OutputMode.All).Training.gradientAccumulation(accumulation)
    model = _Tagger(replicas)
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.0))
    trainer.replica.replicaGrouping(popsim.CommGroupType.NoGrouping, 0,
                                    popsim.VariableRetrievalMode.AllReplicas)
    samples = micro_batch * replicas * accumulation * iterations
    tags, _ = trainer(torch.arange(float(samples)).reshape(samples, 1))
    return tags.reshape(samples, 3)


def combined_batch() -> Any:
    """A call's 48 samples (micro-batch 4, replicas 2, gradientAccumulation 3,
    deviceIterations 2): which replica took each sample and at which micro-batch step, from a
    training run whose model reports them."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    micro_batch, replicas, accumulation, iterations = 4, 2, 3, 2
    tags = _combined_batch_tags(micro_batch, replicas, accumulation, iterations)
    colours = ["tab:blue", "tab:orange"]
    figure, axes = plt.subplots(figsize=(9.0, 2.2))
    # Runs of samples that one replica took at one step: [start, end, replica, step].
    runs: List[List[int]] = []
    for sample, replica, step in tags.long().tolist():
        if runs and runs[-1][1:] == [sample, replica, step]:
            runs[-1][1] = sample + 1
        else:
            runs.append([sample, sample + 1, replica, step])
    for start, end, replica, step in runs:
        axes.add_patch(Rectangle((start, 0), end - start, 1, facecolor=colours[replica],
                                 edgecolor="white", linewidth=1.5))
        axes.text((start + end) / 2, 0.5, f"r{replica}", ha="center", va="center",
                  color="white", fontsize=8)
    for step in sorted({run[3] for run in runs}):
        first = min(run[0] for run in runs if run[3] == step)
        last = max(run[1] for run in runs if run[3] == step)
        axes.annotate("", (first, -0.15), (last, -0.15),
                      arrowprops={"arrowstyle": "|-|", "color": "0.3", "shrinkA": 0,
                                  "shrinkB": 0})
        axes.text((first + last) / 2, -0.45, f"step {step}", ha="center", fontsize=8)
    for iteration in range(iterations):  # each device iteration: `accumulation` steps
        steps = range(iteration * accumulation, (iteration + 1) * accumulation)
        begin = min(run[0] for run in runs if run[3] in steps)
        end = max(run[1] for run in runs if run[3] in steps)
        axes.annotate("", (begin, 1.2), (end, 1.2),
                      arrowprops={"arrowstyle": "|-|", "color": "0.3", "shrinkA": 0,
                                  "shrinkB": 0})
        axes.text((begin + end) / 2, 1.35, f"device iteration {iteration}: "
                  f"{accumulation} micro-batch steps, then an optimizer step", ha="center",
                  fontsize=8)
    axes.set_xlim(0, len(tags))
    axes.set_ylim(-0.7, 1.7)
    axes.set_yticks([])
    axes.set_xlabel("sample of the combined batch (dimension 0)")
    for side in ("left", "right", "top"):
        axes.spines[side].set_visible(False)
    figure.tight_layout()
    return figure


FIGURES: Dict[str, Callable[[], Any]] = {
    "pipelined-timeline": lambda: _timeline("pipelined"),
    "sharded-timeline": lambda: _timeline("sharded"),
    "phased-timeline": lambda: _timeline("phased"),
    "pipelined-memory": memory,
    "combined-batch": combined_batch,
}
