"""matplotlib drawings of a profile, for notebooks: the same charts as report.html."""

import os
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple, Union

from popsim.profiling._profile import Profile, load
from popsim.profiling._style import (KIND_COLOURS, KIND_LABELS, TRANSFER_KINDS, categories,
                                     category_colour, category_order)

if TYPE_CHECKING:  # matplotlib loads only when a plot is drawn
    from matplotlib.axes import Axes

# Scale bars to the memory limit only when it is within this factor of the largest total.
_LIMIT_IN_SIGHT = 2.0


def _profile(profile: Union["Profile", str, "os.PathLike[str]"]) -> "Profile":
    if isinstance(profile, (str, os.PathLike)):
        return load(profile)
    return profile


def _axes(ax: Optional["Axes"]) -> "Axes":
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(12, 3))
    return ax


def plot_timeline(profile: Union["Profile", str, "os.PathLike[str]"],
                  ax: Optional["Axes"] = None) -> "Axes":
    """Draws the last call's timeline with matplotlib, as report.html does.

    One row per IPU shows its tasks (forward green, backward red, ...) above its transfers,
    against simulated milliseconds, with a legend of the kinds drawn.

    Args:
        profile: A :class:`popsim.profiling.Profile`, or a directory to read it from with
            :func:`popsim.profiling.load`.
        ax: The matplotlib Axes to draw on. None: a new figure, 12 x 3 inches.

    Returns:
        The Axes drawn on.

    Raises:
        ValueError: when the profile has no execution trace (the model has not run yet), or as
            :func:`popsim.profiling.load` raises it when reading a directory.
        ProfileNotFoundError: when ``profile`` is a directory that holds no profile.
    """
    profile = _profile(profile)
    trace = profile.trace
    if trace is None:
        raise ValueError(f"{profile!r} has no execution trace yet: run the model once.")
    ax = _axes(ax)
    ms_per_cycle = 1e3 / trace.clock_hz
    bars: Dict[Tuple[int, str], List[Tuple[float, float]]] = {}  # (ipu, kind) -> [(start, width)]
    for event in trace.events:
        bars.setdefault((event["ipu"], event["kind"]), []).append(
            (event["start"] * ms_per_cycle, (event["end"] - event["start"]) * ms_per_cycle))
    drawn: Set[str] = set()
    for (ipu, kind), spans in bars.items():
        transfer = kind in TRANSFER_KINDS
        y = ipu + (0.25 if transfer else -0.35)
        height = 0.2 if transfer else 0.55
        ax.broken_barh(spans, (y, height), facecolors=KIND_COLOURS[kind],
                       label=None if kind in drawn else KIND_LABELS[kind])
        drawn.add(kind)
    ax.set_yticks(range(trace.num_ipus))
    ax.set_yticklabels([f"IPU {ipu}" for ipu in range(trace.num_ipus)])
    ax.set_ylim(trace.num_ipus - 0.5, -0.5)
    ax.set_xlim(0, trace.total_cycles * ms_per_cycle)
    ax.set_xlabel("simulated time (ms)")
    ax.set_title(f"{profile.model} ({profile.kind}): {trace.pipeline['schedule']} schedule")
    handles, labels = ax.get_legend_handles_labels()
    order = [KIND_LABELS[k] for k in KIND_COLOURS if KIND_LABELS[k] in labels]
    ax.legend([handles[labels.index(label)] for label in order], order, loc="upper left",
              bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return ax


def plot_memory(profile: Union["Profile", str, "os.PathLike[str]"],
                ax: Optional["Axes"] = None) -> "Axes":
    """Draws memory per IPU with matplotlib, as report.html does.

    Each IPU's memory is a horizontal bar in MiB, stacked by category. Each IPU's limit is a
    dashed line when it is at most twice the largest IPU's total; otherwise the title gives it.

    Args:
        profile: A :class:`popsim.profiling.Profile`, or a directory to read it from with
            :func:`popsim.profiling.load`.
        ax: The matplotlib Axes to draw on. None: a new figure, 12 x 3 inches.

    Returns:
        The Axes drawn on.

    Raises:
        ValueError: when the profile has no memory report (the model has not compiled), or as
            :func:`popsim.profiling.load` raises it when reading a directory.
        ProfileNotFoundError: when ``profile`` is a directory that holds no profile.
    """
    profile = _profile(profile)
    memory = profile.memory
    if memory is None:
        raise ValueError(f"{profile!r} has no memory report: compile the model first.")
    ax = _axes(ax)
    ipus = memory["ipus"]
    sizes_of = {ipu["ipu"]: categories(ipu) for ipu in ipus}
    mib = 2.0**20
    left = [0.0] * len(ipus)
    for name in category_order(ipus):  # stacked as report.html stacks them
        sizes = [sizes_of[ipu["ipu"]].get(name, 0) / mib for ipu in ipus]
        if any(sizes):
            ax.barh([ipu["ipu"] for ipu in ipus], sizes, left=left, color=category_colour(name),
                    label=name)
            left = [a + b for a, b in zip(left, sizes)]
    largest = max((ipu["total"] for ipu in ipus), default=0)
    limit = max((ipu["limit"] for ipu in ipus), default=0)
    title = f"{profile.model} ({profile.kind}): memory per IPU"
    if limit and limit <= _LIMIT_IN_SIGHT * largest:
        for ipu in ipus:
            ax.plot([ipu["limit"] / mib] * 2, [ipu["ipu"] - 0.45, ipu["ipu"] + 0.45], "k--")
    else:
        title += f" (limit {limit / mib:,.0f} MiB, off the scale)"
    ax.set_yticks([ipu["ipu"] for ipu in ipus])
    ax.set_yticklabels([f"IPU {ipu['ipu']}" for ipu in ipus])
    ax.invert_yaxis()
    ax.set_xlabel("MiB")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return ax
