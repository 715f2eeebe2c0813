"""The sizing report: what a job needs and how long it takes on the simulated
IPUs, from a compiled program and its last call (usually a cost-only one,
popsim.sizeJob).

The core computes it (csrc/profile/sizing_report.h): every figure comes from
the memory plan and the simulated clock, none is measured on the host, and
where each IPU's time goes is read off the call's timeline. This module holds
the report as Python data and its printout (from the core, so that profiles
and the report print alike); popsim.sizeJob is in size_job.py.
"""

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List

from popsim import _C


# Where an IPU's time goes, in the order the report lists the parts.
TIME_PARTS = tuple(_C.sizing_time_parts())


def mib(size: float) -> str:
    """`size` bytes in MiB, as the profile's summary writes them."""
    return f"{size / 2**20:,.2f} MiB"


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
        replicas_per_host_thread: The replicas that take turns for their host transfers on
            each host thread of a process (Poplar runs a process's stream callbacks on one
            thread unless its engine options give them more).
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
    replicas_per_host_thread: int = 1

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
        fields = {name: entry[name] for name in cls.__dataclass_fields__
                  if name != "replicas_per_host_thread"}
        # Profiles written before the turns were recorded had none.
        fields["replicas_per_host_thread"] = entry.get("replicas_per_host_thread", 1)
        fields["ipus"] = [IpuSizing(**{name: ipu[name] for name in IpuSizing.__dataclass_fields__})
                          for ipu in entry["ipus"]]
        return cls(**fields)

    def __str__(self) -> str:
        lines = self._lines()  # one trip to the core for every part
        return "\n".join(lines["overview"] + [""] + lines["memory"] + [""] + lines["time"]
                         + lines["advice"])

    def overview_lines(self) -> List[str]:
        """The overview that ``str(report)`` starts with, one line each.

        Returns:
            Lines for the model and chip, the job's replicas, IPUs and items per call, the
            simulated step time, the throughput and whether the job fits (which IPUs do not).
        """
        return self._lines()["overview"]

    def memory_lines(self) -> List[str]:
        """The memory part of ``str(report)``.

        Returns:
            A heading, then one line per IPU of one replica with its memory against its
            capacity and its four largest categories.
        """
        return self._lines()["memory"]

    def time_lines(self) -> List[str]:
        """The table of where each IPU's time goes, as ``str(report)`` prints it.

        Returns:
            A heading, then a table with one row per IPU of one replica, giving its busy share
            and the share of the call of each part of its time that any IPU spends time on.
        """
        return self._lines()["time"]

    def advice_lines(self) -> List[str]:
        """The advice part of ``str(report)``.

        Returns:
            A blank line, the heading and one bulleted line per piece of advice; no lines
            without advice.
        """
        return self._lines()["advice"]

    def _lines(self) -> Dict[str, List[str]]:
        """The printout's parts, as the core prints them (csrc/profile/sizing_report.h)."""
        return _C.sizing_report_lines(json.dumps(self.to_dict()))
