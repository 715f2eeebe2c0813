"""Anchored tensors, as PopTorch's: Options.anchorTensor(short, long) names a
tensor the model does not output, and after each call
Executor.getAnchoredTensor(short) returns it.

popsim's long names (Executor.getTensorNames() lists them):
- "Gradient___<parameter>": a trained parameter's gradient of each
  micro-batch, before accumulation. The training program adds it as an extra
  output after the model's (TrainingConfig.anchored_gradients), so it comes
  back as outputs do, in the model's output mode.
- "UpdatedVar___<parameter>" or "<name>" (a parameter or buffer): its value
  after the call, read from the device.
- "finalLossScale" (PopART's name): the loss scaling factor after the call,
  which automatic loss scaling changes (Training.setAutomaticLossScaling),
  as a 0-d float32 tensor.
"""

import difflib
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

import torch

from popsim import _C
from popsim.api.enums import OutputMode
from popsim.api.errors import OptionError

GRADIENT = "Gradient___"
UPDATED = "UpdatedVar___"
LOSS_SCALE = "finalLossScale"
# The training program's loss scaling factor (ir/state_names.h), when it is
# a state rather than a constant.
LOSS_SCALE_STATE = "optimizer/loss_scaling"


class AnchorPlan(NamedTuple):
    gradients: List[Tuple[str, str]]  # (short name, parameter), in output order
    variables: List[Tuple[str, str]]  # (short name, weight name), read after a call


def _unknown(long_name: str, known: Sequence[str], what: str) -> OptionError:
    close = difflib.get_close_matches(long_name, list(known), n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return OptionError(f"anchorTensor: '{long_name}' is not {what}.{hint} getTensorNames() lists "
                       "the names a compiled model can anchor.", option="anchorTensor")


def plan(anchors: Dict[str, Tuple[str, Optional[OutputMode], int]], training: bool, output: Tuple[OutputMode, int], steps: int,
         trained: Sequence[str], weights: Sequence[str]) -> AnchorPlan:
    """What each anchor is, checked against the model: `output` is the
    model's output mode and period, `trained` names the parameters the
    optimizer trains, `weights` every parameter and buffer; `steps` is the
    optimizer steps of a training call."""
    output_mode = output[0]
    gradients, variables = [], []
    for short, (long_name, mode, period) in anchors.items():
        if mode is not None and (mode, period) != output:
            raise OptionError(
                f"anchorTensor('{short}', '{long_name}', OutputMode.{mode.name}): popsim returns "
                f"anchors in the model's output mode (OutputMode.{output_mode.name}). Pass "
                f"output_mode=None, or set the model's outputMode(OutputMode.{mode.name}).",
                option="anchorTensor")
        if long_name.startswith(GRADIENT):
            name = long_name[len(GRADIENT):]
            if not training:
                raise OptionError(f"anchorTensor: '{long_name}' is a gradient, and an inference "
                                  "model computes none. Anchor it on a trainingModel.",
                                  option="anchorTensor")
            if name not in trained:
                raise _unknown(long_name, [GRADIENT + n for n in trained],
                               "the gradient of a parameter the optimizer trains")
            gradients.append((short, name))
            continue
        name = long_name[len(UPDATED):] if long_name.startswith(UPDATED) else long_name
        if long_name == LOSS_SCALE:
            if not training:
                raise OptionError(f"anchorTensor('{short}', '{LOSS_SCALE}'): the loss scaling "
                                  "factor belongs to training; an inference model has none.",
                                  option="anchorTensor")
            name = LOSS_SCALE_STATE
        elif name not in weights:
            raise _unknown(long_name, list(weights) + [UPDATED + n for n in weights],
                           "a parameter or buffer of the model")
        if output_mode != OutputMode.Final and steps > 1 and training:
            raise OptionError(
                f"anchorTensor('{short}', '{long_name}'): popsim returns a variable's value after "
                f"the call, not after each of its {steps} steps (OutputMode.{output_mode.name}). "
                "Use "
                "outputMode(OutputMode.Final), or one device iteration.", option="anchorTensor")
        variables.append((short, name))
    return AnchorPlan(gradients, variables)


def take(plan_: AnchorPlan, outputs: List[torch.Tensor], shapes: Dict[str, torch.Size]
         ) -> Tuple[List[torch.Tensor], Dict[str, torch.Tensor]]:
    """Splits the gradient anchors off the end of a call's outputs: (the
    model's outputs, anchors by short name). Several micro-batches' gradients
    are stacked along a new dimension 0."""
    count = len(plan_.gradients)
    if count == 0:
        return outputs, {}
    found = {}
    for (short, name), value in zip(plan_.gradients, outputs[-count:]):
        shape = shapes[name]
        several = value.numel() != shape.numel()
        found[short] = value.reshape(-1, *shape) if several else value.reshape(shape)
    return outputs[:-count], found


class CallAnchors(NamedTuple):
    """A compiled model's anchors: the plan (variables named as the program
    names them), each anchored gradient's parameter shape and the anchored
    variables the device holds."""
    plan: AnchorPlan
    shapes: Dict[str, torch.Size]
    on_device: Set[str]


NO_ANCHORS = CallAnchors(AnchorPlan([], []), {}, set())


def resolve(plan_: AnchorPlan, shapes: Dict[str, torch.Size], program: _C.DeviceProgram,
            tensors: Dict[str, torch.Tensor], names_by_tensor: Dict[int, str]) -> CallAnchors:
    """Names each variable anchor as the program does (a tied weight has one name
    there); refuses tensors the program does not hold."""
    on_device = set(program.weight_names())
    device_anchors = on_device | ({LOSS_SCALE_STATE} & set(program.state_names()))
    resolved = []
    for short, name in plan_.variables:
        if name == LOSS_SCALE_STATE:
            resolved.append((short, name))
            continue
        program_name = names_by_tensor[id(tensors[name])]
        if program_name not in on_device:
            raise OptionError(f"anchorTensor('{short}', ...): the program does not use "
                              f"'{name}', so the device does not hold it; read it from the "
                              "model instead.", option="anchorTensor")
        resolved.append((short, program_name))
    return CallAnchors(plan_._replace(variables=resolved), shapes, device_anchors)


def read_variables(anchors: CallAnchors, program: _C.DeviceProgram,
                   loss_scaling: float) -> Dict[str, torch.Tensor]:
    """The anchored variables' values after a call, by short name; the loss scaling
    factor, when the program holds it as a constant, is `loss_scaling`."""
    names = [name for _, name in anchors.plan.variables]
    values = program.read_variables(sorted(set(names) & anchors.on_device))
    if LOSS_SCALE_STATE not in values:  # a constant factor: the optimizer's
        values[LOSS_SCALE_STATE] = torch.tensor(loss_scaling)
    return {short: values[name] for short, name in anchors.plan.variables}
