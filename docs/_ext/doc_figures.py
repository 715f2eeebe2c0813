"""The figures the docs draw from popsim's own runs when they build (the ``popsim-figure``
directive of popsim_docs.py): the same three-block model trained pipelined, sharded and in
phases, drawn from its profile as ``popsim.profiling`` draws it, its memory per IPU, and how
a call's combined batch splits into micro-batches. Each is a function returning a matplotlib
Figure; a run that several figures draw is made once per process."""

import functools
import tempfile
from typing import Any, Callable, Dict

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


def combined_batch() -> Any:
    """A call's 48 samples (micro-batch 4, replicas 2, gradientAccumulation 3,
    deviceIterations 2) as the model takes them: for each micro-batch step, one micro-batch
    per replica."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    micro_batch, replicas, accumulation, iterations = 4, 2, 3, 2
    colours = ["tab:blue", "tab:orange"]
    figure, axes = plt.subplots(figsize=(9.0, 2.2))
    sample = 0
    for iteration in range(iterations):
        for step in range(accumulation):
            for replica in range(replicas):
                start = sample
                sample += micro_batch
                axes.add_patch(Rectangle((start, 0), micro_batch, 1, facecolor=colours[replica],
                                         edgecolor="white", linewidth=1.5))
                axes.text(start + micro_batch / 2, 0.5, f"r{replica}", ha="center",
                          va="center", color="white", fontsize=8)
            first = sample - replicas * micro_batch
            axes.annotate("", (first, -0.15), (sample, -0.15),
                          arrowprops={"arrowstyle": "|-|", "color": "0.3", "shrinkA": 0,
                                      "shrinkB": 0})
            axes.text((first + sample) / 2, -0.45,
                      f"step {iteration * accumulation + step}", ha="center", fontsize=8)
        end = sample
        begin = end - accumulation * replicas * micro_batch
        axes.annotate("", (begin, 1.2), (end, 1.2),
                      arrowprops={"arrowstyle": "|-|", "color": "0.3", "shrinkA": 0,
                                  "shrinkB": 0})
        axes.text((begin + end) / 2, 1.35, f"device iteration {iteration}: "
                  f"{accumulation} micro-batch steps, then an optimizer step", ha="center",
                  fontsize=8)
    axes.set_xlim(0, sample)
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
