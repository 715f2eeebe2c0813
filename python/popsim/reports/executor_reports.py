"""What a wrapped model reports, as PopTorch's executor methods: each simulated
IPU's memory, the last call's cycles, simulated time, execution trace,
performance counters and latencies, its sizing report, anchored tensors and
the names it can anchor, the compilation's time and the profile directory.
popsim.Executor takes them from ExecutorReports, whose narrow contract is
the attributes it declares: the compiled model, its calls and weight flow,
the options and the last call's batch."""

from typing import Any, Dict, List, Optional, Tuple

import torch

from popsim import _C
from popsim.api.errors import InputError, NotCompiledError
from popsim.api.options import Options
from popsim.compile.compiled_model import CompiledModel
from popsim.device import replication as _replication
from popsim.device.calls import Calls
from popsim.reports.profile_recorder import ProfileRecorder
from popsim.reports.sizing import SizingReport
from popsim.reports.trace import ExecutionTrace
from popsim.training.weight_flow import WeightFlow


class ExecutorReports:
    """popsim.Executor's reporting methods (documented there)."""

    _compiled: Optional[CompiledModel]
    _calls: Optional[Calls]
    _flow: WeightFlow
    _profile: ProfileRecorder
    _options: Options
    _training: bool
    _user_model: torch.nn.Module
    _last_call_items: Optional[int]
    _compilation_seconds: float

    @property
    def _program(self) -> _C.DeviceProgram:
        assert self._compiled is not None, "the model has compiled"
        return self._compiled.program

    @property
    def _stages(self) -> List[Tuple[str, int, int]]:
        return self._compiled.stages if self._compiled is not None else []

    def _require_compiled(self, what: str) -> None:
        if self._compiled is None:
            raise NotCompiledError(f"{what}() needs a compiled model: this one has not been "
                                   "compiled or has been destroyed. Call the model or "
                                   "compile() first.")

    def memoryReport(self) -> Dict[str, Any]:
        """Gives the memory of each simulated IPU, by category, from the compiled plan.

        Returns:
            A dict with the ``"chip"`` simulated and ``"ipus"``, one dict per IPU with its
            ``"capacity"``, ``"total"`` bytes, the bytes of each category under
            ``"categories"``, ``"streaming_memory"``, ``"largest_tensors"`` and more.

        Raises:
            NotCompiledError: when the model has not compiled (an InputError).
        """
        self._require_compiled("memoryReport")
        return self._program.first.memory_report().to_dict()

    def cycleCount(self) -> int:
        """Gives the simulated IPU cycles of the last call (compute and host transfers).

        Returns:
            The number of cycles the last call took on the simulated clock.

        Raises:
            NotCompiledError: when the model has not compiled (an InputError).
        """
        self._require_compiled("cycleCount")
        return self._program.first.last_run_cycles

    def executionTrace(self) -> ExecutionTrace:
        """Gives the last call as it ran on the simulated clock.

        Returns:
            An execution trace whose ``events`` list every task each IPU ran and whose ``str()``
            draws the pipeline, one row per IPU.

        Raises:
            NotCompiledError: when the model has not compiled (an InputError).
        """
        self._require_compiled("executionTrace")
        return ExecutionTrace.of(self._program.first)

    def simulatedTime(self) -> float:
        """Gives the simulated duration of the last call on the IPUs.

        Returns:
            The last call's seconds on the simulated IPUs: its cycles at the chip's clock.

        Raises:
            NotCompiledError: when the model has not compiled (an InputError).
        """
        self._require_compiled("simulatedTime")
        return self._program.first.last_run_cycles / self._program.first.clock_hz

    def getPerfCounters(self) -> Dict[str, List[List[float]]]:
        """Gives PopTorch's performance counters of the last call, on the simulated clock.

        Times are in seconds from the start of the call. As in PopTorch, each input or output
        has one time per transfer of each replica of this process, replica by replica (so
        ``deviceIterations`` x ``gradientAccumulation`` x ``replicationFactor`` inputs, and the
        output mode's share of them for outputs). popsim streams a micro-batch's inputs
        together, so every input has the same times, and replicas run alike, so each
        replica's times are the same.

        Returns:
            A dict whose keys are the events ``"input"`` (the IPU asks the host for an input),
            ``"input_complete"`` (the input has arrived), ``"output"`` (an output starts to
            stream to the host) and ``"output_complete"`` (it has arrived). Each value is a list
            per input or output (by index) of the event's times, one per transfer of the call
            (per micro-batch and replica for inputs; per returned output and replica for
            outputs). Before the model's first call, each value is ``[[]]``.
        """
        counters = self._perf_counters()
        if counters is None:
            return {"input": [[]], "input_complete": [[]], "output": [[]], "output_complete": [[]]}
        return {"input": counters.input, "input_complete": counters.input_complete,
                "output": counters.output, "output_complete": counters.output_complete}


    def _perf_counters(self) -> Optional[_C.PerfCounters]:
        """The core's counters of the last call (csrc/profile/call_trace.cpp); None before
        the model compiles."""
        if self._compiled is None:
            return None
        trace = _C.execution_trace(self._program.first)
        return trace.perf_counters(len(self._compiled.signature.tensor_names),
                                   self._options.replication_factor)

    def getHostIpuLatency(self) -> Tuple[float, float, float]:
        """Gives the last call's host-to-IPU latency, as PopTorch's function of that name.

        Each transfer's latency runs from the first of its inputs requested to the last of them
        arrived, on the simulated clock.

        Returns:
            ``(min, max, mean)`` of those latencies in seconds over the last call's transfers;
            ``(0.0, 0.0, 0.0)`` before the model's first call.
        """
        counters = self._perf_counters()
        return counters.host_ipu_latency() if counters is not None else (0.0, 0.0, 0.0)

    def getComputeLatency(self) -> Tuple[float, float, float]:
        """Gives the last call's compute latency on the simulated clock.

        Each transfer's latency runs from the last of its inputs arrived to the last of its
        outputs ready to stream to the host, on the simulated clock.

        Returns:
            ``(min, max, mean)`` of those latencies in seconds over the last call's transfers;
            ``(0.0, 0.0, 0.0)`` before the model's first call.
        """
        counters = self._perf_counters()
        return counters.compute_latency() if counters is not None else (0.0, 0.0, 0.0)

    def getIpuHostLatency(self) -> Tuple[float, float, float]:
        """Gives the last call's IPU-to-host latency on the simulated clock.

        Each transfer's latency runs from the first of its outputs ready to stream to the last
        of them arrived on the host, on the simulated clock.

        Returns:
            ``(min, max, mean)`` of those latencies in seconds over the last call's transfers;
            ``(0.0, 0.0, 0.0)`` before the model's first call.
        """
        counters = self._perf_counters()
        return counters.ipu_host_latency() if counters is not None else (0.0, 0.0, 0.0)

    def getLatency(self) -> Tuple[float, float, float]:
        """Gives the last call's round-trip latency on the simulated clock.

        Each transfer's latency runs from the first of its inputs requested to the last of its
        outputs arrived on the host, on the simulated clock.

        Returns:
            ``(min, max, mean)`` of those latencies in seconds over the last call's transfers;
            ``(0.0, 0.0, 0.0)`` before the model's first call.
        """
        counters = self._perf_counters()
        return counters.round_trip_latency() if counters is not None else (0.0, 0.0, 0.0)

    def sizingReport(self) -> "SizingReport":
        """Sizes the job as the last call ran it on the simulated IPUs.

        :func:`popsim.sizeJob` makes the same report without computing anything
        (``Simulator.costOnly``).

        Returns:
            A :class:`popsim.SizingReport`: each IPU's memory by category against its capacity,
            the step's simulated cycles and time, throughput in items/s over all replicas and
            processes (items: the length of the call's batched inputs), each IPU's busy share
            and where its time goes, and advice. ``str()`` prints it.

        Raises:
            InputError: when the model has not compiled or has not been called since it
                compiled.
        """
        self._require_compiled("sizingReport")
        if self._last_call_items is None:
            raise InputError("sizingReport() needs a call: the simulated clock times the "
                             "last call. Call the model once (with Simulator.costOnly() it "
                             "computes nothing), or use popsim.sizeJob.")
        return SizingReport.from_dict(_C.sizing_report(
            self._program.first, self._stages, self._sizing_job()))


    def _sizing_job(self) -> Dict[str, Any]:
        """How the job runs a call, for the sizing report: what the program alone
        does not say."""
        replication = _replication.of(self._options, self._training)
        return {"model": type(self._user_model).__name__, "replicas": replication.job,
                "processes": replication.processes,
                "steps_per_call": self._options.device_iterations,
                "micro_batches_per_step": (self._options.Training.gradient_accumulation
                                           if self._training else 1),
                "items_per_call": (self._last_call_items or 0) * replication.processes}

    def compilationTime(self) -> float:
        """Gives how long the last compilation took.

        Returns:
            The seconds the last compilation took, tracing included.

        Raises:
            NotCompiledError: when the model has not compiled (an InputError).
        """
        self._require_compiled("compilationTime")
        return self._compilation_seconds

    def getAnchoredTensor(self, short_name: str) -> torch.Tensor:
        """Gives the value of an anchored tensor from the last call.

        Args:
            short_name: The name the tensor was anchored under with
                ``Options.anchorTensor(short_name, long_name)``.

        Returns:
            The tensor's value from the last call, in the output mode it was anchored with.

        Raises:
            OptionError: when the options anchor no tensor named ``short_name``, or the model
                has not run since it compiled.
        """
        anchored = self._calls.anchored if self._calls is not None else {}
        if short_name not in anchored:
            _C.refuse_missing_anchor(self._options._session, short_name)
        return anchored[short_name]

    def getTensorNames(self) -> List[str]:
        """Lists the long names :meth:`popsim.Options.anchorTensor` accepts for this model.

        Returns:
            Every parameter and buffer the program uses (``"<name>"``), and for a training
            model also ``"UpdatedVar___<name>"`` for each of them, each trained parameter's
            ``"Gradient___<name>"``, ``"finalLossScale"`` (the loss scaling factor after the
            call) and the optimizer's state and compound hyper-parameters by PopTorch's names
            (``"Accl1___model.<name>"``, ``"scaledLearningRate0___specific___model.<name>"``:
            the keys of its ``state_dict()``'s ``"ipu_state"`` and ``"ipu_param"``).

        Raises:
            NotCompiledError: when the model has not compiled (an InputError).
        """
        if self._compiled is None:
            raise NotCompiledError("Model must be compiled before calling getTensorNames: call "
                                   "the model or compile() first.")
        trained = self._flow.binding.trained_names() if self._training else []
        return _C.anchorable_names(list(self._program.weight_names()), self._training, trained,
                                   list(self._compiled.anchors.optimizer_state))

    def profileDirectory(self) -> Optional[str]:
        """Gives the directory this model writes its profile into.

        Returns:
            The profile directory, or None when the model is not profiled or has not compiled
            yet.
        """
        return self._profile.directory
