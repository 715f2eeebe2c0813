"""The simulated execution trace of a model's last call."""

import statistics
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Tuple

from popsim import _C

if TYPE_CHECKING:
    from popsim._executor import Program

# Event kinds of transfers around a task (the others are the tasks themselves).
TRANSFER_KINDS = tuple(_C.profile_style()["transfer_kinds"])


class ExecutionTrace:
    """What each simulated IPU did during the last call, on the simulated clock.

    ``events`` holds one dict per task run: ``ipu``, ``task`` ("F0", "B1",
    "FB3" for the last stage's forward and backward, "U2" for IPU 2's weight
    update), ``kind`` ("forward", "backward", "forward+backward", "update"; or,
    around a task's own event, "host_input" for the host's part of streaming
    its micro-batch of the inputs in, "stream_copy" for the part its compute
    tiles do (receiving the inputs' bytes, or copying inputs and outputs from
    and to the IO tiles), "copy" for the inter-IPU copies it receives,
    "host_output" for outputs it streams to the host, and "streaming" for
    off-chip tensors streamed in from Streaming Memory before its ops and back
    out after them),
    ``step``, ``micro_batch`` (-1 for updates), ``cycle`` (the pipeline
    cycle), ``start`` and ``end`` in IPU clock cycles; "copy" events also have
    ``from_ipus``, the IPUs the copies come from, "host_output" events have
    ``output``, the index of the graph output they carry, and host transfers
    through the IO tiles (popsim.set_overlap_for_input / _output) have
    ``io_tiles``.
    With ``prefetchDepth`` 1 or more (the default) a host input runs on the
    IPU's host link while the IPU works on earlier tasks, so its event can
    overlap them; the IPU waits only for what is still in flight, and that
    wait counts as idle time. Transfers through IO tiles always run beside
    the compute.
    ``str(trace)`` draws one row per IPU and one column per pipeline cycle,
    with the tasks each IPU ran in that cycle: ``F3`` (forward of micro-batch
    3), ``B0`` (backward), ``FB2`` (the last stage's forward and backward),
    ``U`` (weight update), several separated by commas.
    """

    def __init__(self, events: List[Dict[str, Any]], total_cycles: int, clock_hz: float,
                 pipeline: Dict[str, Any]) -> None:
        self.events = events
        self.total_cycles = total_cycles
        self.clock_hz = clock_hz
        self.pipeline = pipeline

    @classmethod
    def of(cls, executable: "Program") -> "ExecutionTrace":
        """The last call of a compiled C++ executable."""
        return cls([event.to_dict() for event in executable.timeline()],
                   executable.last_run_cycles, executable.clock_hz,
                   executable.pipeline().to_dict())

    @property
    def seconds(self) -> float:
        """Simulated time of the call."""
        return self.total_cycles / self.clock_hz

    @property
    def num_ipus(self) -> int:
        return self.pipeline["ipus"]

    def occupies_ipu(self, event: Dict[str, Any]) -> bool:
        """Whether the IPU's compute tiles are busy during `event`: always, except for
        host inputs prefetched on the host link and transfers through the IO tiles."""
        if event.get("io_tiles"):
            return False
        return event["kind"] != "host_input" or self.pipeline["prefetch_depth"] == 0

    def busy_cycles(self, ipu: int) -> int:
        """Cycles `ipu` spent on its tasks and transfers (the rest of the call it waited)."""
        return sum(e["end"] - e["start"] for e in self.events
                   if e["ipu"] == ipu and self.occupies_ipu(e))

    def micro_batch_cycles(self) -> List[float]:
        """Per IPU, the median cycles it spends on one micro-batch: its forward and
        backward tasks with the transfers that occupy it (updates left out). The median
        leaves out one-off transfers, such as a final output streamed to the host."""
        return self._median_per_micro_batch(
            lambda e: e["kind"] != "update" and self.occupies_ipu(e))

    def host_link_cycles(self) -> List[float]:
        """Per IPU, the median cycles its host link spends streaming one micro-batch's
        inputs (0 for an IPU that streams none), through the compute tiles or the IO
        tiles, whichever is longer. With prefetching (and through IO tiles), the link
        works beside the IPU, so it is a pipeline stage of its own: the slowest of these
        and of micro_batch_cycles() sets the pace of the pipeline."""
        return [max(plain, io) for plain, io in zip(
            self._median_per_micro_batch(
                lambda e: e["kind"] == "host_input" and not e.get("io_tiles")),
            self._median_per_micro_batch(
                lambda e: e["kind"] == "host_input" and e.get("io_tiles", False)))]

    def _median_per_micro_batch(self, counts: Callable[[Dict[str, Any]], bool]
                                ) -> List[float]:
        """Per IPU, the median over micro-batches of the cycles of the events `counts`
        accepts (0 for an IPU with none)."""
        work: Dict[Tuple[int, int, int], int] = {}
        for event in self.events:
            if counts(event):
                key = (event["ipu"], event["step"], event["micro_batch"])
                work[key] = work.get(key, 0) + event["end"] - event["start"]
        return [statistics.median([c for (i, _, _), c in work.items() if i == ipu] or [0])
                for ipu in range(self.num_ipus)]

    def utilisation(self, ipu: int) -> float:
        return self.busy_cycles(ipu) / self.total_cycles if self.total_cycles else 0.0

    def render(self) -> str:
        """The text timeline (see the class docstring)."""
        cycles = 1 + max((e["cycle"] for e in self.events), default=-1)
        cells = [[""] * cycles for _ in range(self.num_ipus)]
        for event in self.events:
            if event["kind"] in TRANSFER_KINDS:
                continue
            prefix = {"forward": "F", "backward": "B", "forward+backward": "FB"}
            mark = "U" if event["kind"] == "update" else (
                f"{prefix[event['kind']]}{event['micro_batch']}")
            cell = cells[event["ipu"]][event["cycle"]]
            cells[event["ipu"]][event["cycle"]] = f"{cell},{mark}" if cell else mark
        width = max((len(c) for row in cells for c in row), default=1)
        lines = []
        for ipu, row in enumerate(cells):
            line = " ".join((cell or ".").ljust(width) for cell in row)
            lines.append(f"IPU{ipu} | {line}")
        header = (f"{self.pipeline['schedule']} schedule, {self.pipeline['stages']} stage(s) on "
                  f"{self.num_ipus} IPU(s): {self.total_cycles:,} cycles "
                  f"({self.seconds * 1e3:.3f} ms simulated)")
        return "\n".join([header] + lines)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return (f"ExecutionTrace({len(self.events)} events, {self.total_cycles} cycles, "
                f"{self.num_ipus} IPU(s))")
