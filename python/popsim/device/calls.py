"""A compiled model's calls on the host's side: the caller's tensors in (float64 as
float32, narrow integers widened, synthetic data, cost-only calls reading only types),
the device program's call, and the outputs back in the caller's terms (inputs the model
wrote in place copied back, anchored tensors split off, narrow outputs narrowed)."""

import warnings
from typing import Callable, Dict, List, Optional, Set, Tuple

import torch

from popsim.api.errors import InputError
from popsim.api.log import LOGGER
from popsim.api.options import Options
from popsim.compile import anchors as _anchors
from popsim.compile import compilation as _compilation
from popsim.compile.compiled_model import CompiledModel
from popsim.frontend import tracing as _tracing


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors share an element of memory."""
    if a.numel() == 0 or b.numel() == 0 or a.storage().data_ptr() != b.storage().data_ptr():
        return False
    spans = []
    for t in (a, b):
        first = t.data_ptr()
        extent = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
        spans.append((first, first + (extent + 1) * t.element_size()))
    if not (spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]):
        return False
    if a.dtype != b.dtype:
        return True
    # Interleaved but maybe disjoint (x[:, :2] and x[:, 2:]): compare positions.
    positions = torch.arange(a.storage().size())
    at = [positions.as_strided(t.shape, t.stride(), t.storage_offset()).reshape(-1)
          for t in (a, b)]
    return bool(torch.isin(at[0], at[1]).any())


class Calls:
    """The calls of one compiled model (it lives as long as the compilation)."""

    def __init__(self, compiled: CompiledModel, options: Options) -> None:
        self._compiled = compiled
        self._options = options
        # enableSyntheticData: drawn at the first call.
        self._synthetic_inputs: Optional[List[torch.Tensor]] = None
        # getAnchoredTensor's values from the last call.
        self.anchored: Dict[str, torch.Tensor] = {}

    def run(self, tensors: List[torch.Tensor], loss_scaling: float,
            warn_float64: bool) -> Tuple[List[torch.Tensor], bool]:
        """One call of the flat tensor inputs `tensors`: the model's flat outputs, and
        whether float64 inputs were converted (with a warning, when `warn_float64`);
        `loss_scaling` is the optimizer's, for a "finalLossScale" anchor the program holds
        as a constant."""
        compiled, program = self._compiled, self._compiled.program
        if compiled.input_updates:
            self._refuse_written_inputs_sharing_memory(tensors)
        device_tensors, converted = _compilation.float64_as_float32(
            compiled.signature.tensor_names, tensors)
        if converted and warn_float64:
            warnings.warn(_compilation.float64_warning(converted), stacklevel=4)
        synthetic = self._options.synthetic_data and not program.cost_only
        if synthetic:  # no host I/O: the device's own data in
            if self._synthetic_inputs is None:
                self._synthetic_inputs = _compilation.synthetic_inputs(
                    device_tensors, _compilation.random_seed(self._options))
            device_tensors = self._synthetic_inputs
        if program.cost_only:  # its values are never read: its types will do
            device_tensors = [torch.empty(t.shape, dtype=t.dtype, device="meta")
                              for t in device_tensors]
        outputs = program.run(_tracing.widened(device_tensors))
        if synthetic:
            outputs = [torch.zeros_like(output) for output in outputs]
        if self._options.log_cycle_count:
            LOGGER.info("Total number of IPU cycles: %d", program.first.last_run_cycles)
        if compiled.input_updates:
            outputs = (outputs[:-len(compiled.input_updates)] if synthetic or program.cost_only
                       else self._write_back_inputs(tensors, outputs))
        anchors = compiled.anchors
        outputs, self.anchored = _anchors.take(anchors.plan, outputs, anchors.shapes)
        if anchors.plan.variables:
            self.anchored.update(_anchors.read_variables(anchors, program, loss_scaling))
        for index, dtype in compiled.narrow_outputs:
            outputs[index] = outputs[index].to(dtype)
        if compiled.broadcast_buffers:
            program.broadcast(compiled.broadcast_buffers)
        return outputs, bool(converted)

    def anchor_optimizer_state(self, read: Callable[[Set[str]], Optional[Tuple[
            Dict[str, torch.Tensor], Dict[str, torch.Tensor]]]]) -> None:
        """The anchored optimizer state after a call. `read` (WeightFlow.device_optimizer_state)
        gives PopTorch's "ipu_state" of the device states it is given and "ipu_param"; only
        the anchored ones are read from the device."""
        anchors = self._compiled.anchors
        sources = {anchors.optimizer_state[name] for _, name in anchors.plan.optimizer_state}
        state = read({source for source in sources if source is not None})
        assert state is not None, "a training model that has run has optimizer state"
        values = {**state[0], **state[1]}
        for short, name in anchors.plan.optimizer_state:
            self.anchored[short] = values[name]

    def _refuse_written_inputs_sharing_memory(self, tensors: List[torch.Tensor]) -> None:
        """In eager PyTorch a write into one input shows through every input that
        shares its memory (m(x, x), m(x, x[:, :2])); popsim gives each input its
        own device buffer, so it refuses such calls instead of returning other
        numbers."""
        names = self._compiled.signature.tensor_names
        for index in self._compiled.input_updates:
            for other, tensor in enumerate(tensors):
                if other != index and _overlap(tensors[index], tensor):
                    raise InputError(
                        f"Input '{names[index]}' shares memory with input '{names[other]}', "
                        f"and the model writes '{names[index]}' in place: eager PyTorch would "
                        f"see the write through both, while popsim gives each input its own "
                        f"copy. Pass separate tensors (e.g. {names[other]}.clone()).")

    def _write_back_inputs(self, tensors: List[torch.Tensor], outputs: List[torch.Tensor]
                           ) -> List[torch.Tensor]:
        """Copies what the model wrote in place into the caller's input tensors,
        as eager PyTorch would have; returns the model's own outputs."""
        updates = self._compiled.input_updates
        with torch.no_grad():
            for index, value in zip(updates, outputs[-len(updates):]):
                tensors[index].copy_(value.reshape(tensors[index].shape))
        return outputs[:-len(updates)]
