"""The simulated execution trace of a model's last call."""

import json
from typing import Any, Dict, List

from popsim import _C


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
    With ``prefetchDepth`` 2 or more (multibuffering; ``pipeline``'s
    ``inputs_prepared_ahead`` says how many micro-batches ahead) a host input
    runs on the IPU's host link while the IPU works on earlier tasks, so its
    event can overlap them; the IPU waits only for what is still in flight,
    and that wait counts as idle time. At depth 1 (the default) the IPU waits
    for each host input when its task starts. Transfers through IO tiles always
    run beside the compute.
    ``str(trace)`` draws one row per IPU and one column per pipeline cycle,
    with the tasks each IPU ran in that cycle: ``F3`` (forward of micro-batch
    3), ``B0`` (backward), ``FB2`` (the last stage's forward and backward),
    ``U`` (weight update), several separated by commas.
    """

    def __init__(self, events: List[Dict[str, Any]], total_cycles: int, clock_hz: float,
                 pipeline: Dict[str, Any]) -> None:
        """A trace from its parts, as ``events``, ``total_cycles``, ``clock_hz`` and
        ``pipeline`` hold them (a part of a trace can be drawn this way: the events of one
        optimizer step, say).

        Args:
            events: The events, dicts as :attr:`events` holds them.
            total_cycles: The call's cycles on the simulated clock.
            clock_hz: The chip's clock.
            pipeline: The pipeline, a dict as :attr:`pipeline` holds it.
        """
        self._trace = _C.execution_trace_from_records(json.dumps(events), total_cycles,
                                                      clock_hz, json.dumps(pipeline))
        self.events = events
        self.total_cycles = total_cycles
        self.clock_hz = clock_hz
        self.pipeline = pipeline

    @classmethod
    def of(cls, executable: _C.Executable) -> "ExecutionTrace":
        """The last call of a compiled C++ executable."""
        return cls._wrap(_C.execution_trace(executable))

    @classmethod
    def _wrap(cls, trace: _C.ExecutionTrace) -> "ExecutionTrace":
        """Wraps the core's trace of a call (its statistics are the core's,
        csrc/profile/call_trace.cpp, which profiles and sizing reports read too)."""
        wrapped = cls.__new__(cls)
        wrapped._trace = trace
        wrapped.events = [event.to_dict() for event in trace.events]
        wrapped.total_cycles = trace.total_cycles
        wrapped.clock_hz = trace.clock_hz
        wrapped.pipeline = trace.pipeline.to_dict()
        return wrapped

    @property
    def seconds(self) -> float:
        """Simulated time of the call."""
        return self._trace.seconds

    @property
    def num_ipus(self) -> int:
        return self._trace.num_ipus

    def occupies_ipu(self, event: Dict[str, Any]) -> bool:
        """Whether the IPU's compute tiles are busy during `event`: always, except for
        host inputs prefetched on the host link and transfers through the IO tiles."""
        return self._trace.occupies_ipu(event["kind"], bool(event.get("io_tiles", False)))

    def busy_cycles(self, ipu: int) -> int:
        """Cycles `ipu` spent on its tasks and transfers (the rest of the call it waited)."""
        return self._trace.busy_cycles(ipu)

    def micro_batch_cycles(self) -> List[float]:
        """Per IPU, the median cycles it spends on one micro-batch: its forward and
        backward tasks with the transfers that occupy it (updates left out). The median
        leaves out one-off transfers, such as a final output streamed to the host."""
        return self._trace.micro_batch_cycles()

    def host_link_cycles(self) -> List[float]:
        """Per IPU, the median cycles its host link spends streaming one micro-batch's
        inputs (0 for an IPU that streams none), through the compute tiles or the IO
        tiles, whichever is longer. With prefetching (and through IO tiles), the link
        works beside the IPU, so it is a pipeline stage of its own: the slowest of these
        and of micro_batch_cycles() sets the pace of the pipeline."""
        return self._trace.host_link_cycles()

    def utilisation(self, ipu: int) -> float:
        return self._trace.utilisation(ipu)

    def render(self) -> str:
        """The text timeline (see the class docstring)."""
        return self._trace.render()

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return (f"ExecutionTrace({len(self.events)} events, {self.total_cycles} cycles, "
                f"{self.num_ipus} IPU(s))")
