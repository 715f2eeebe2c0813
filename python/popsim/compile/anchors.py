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
- a training model's optimizer state and compound hyper-parameters by
  PopTorch's names ("Accl1___model.fc.bias",
  "scaledLearningRate0___specific___model.fc.bias", as its optimizer's
  state_dict() lists them in "ipu_state" and "ipu_param"): their values after
  the call.
"""

from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

import torch

from popsim import _C
from popsim.api.errors import OptionError
from popsim.api.options import Options

GRADIENT = "Gradient___"
UPDATED = "UpdatedVar___"
LOSS_SCALE = "finalLossScale"
# The training program's loss scaling factor (ir/state_names.h), when it is
# a state rather than a constant.
LOSS_SCALE_STATE = _C.LOSS_SCALING_NAME


class AnchorPlan(NamedTuple):
    gradients: List[Tuple[str, str]]  # (short name, parameter), in output order
    variables: List[Tuple[str, str]]  # (short name, weight name), read after a call
    # (short name, PopTorch's name of an optimizer state or hyper-parameter), after a call
    optimizer_state: List[Tuple[str, str]]


def plan(options: Options, training: bool, trained: Sequence[str],
         weights: Sequence[str], optimizer_state: Sequence[str] = ()) -> AnchorPlan:
    """What each of the options' anchors is, checked against the model (host/anchors.h,
    which the C++ API shares): `trained` names the parameters the optimizer trains,
    `weights` every parameter and buffer, `optimizer_state` every name the optimizer's
    state may have (StateNames.candidate_names)."""
    gradients, variables, state = _C.plan_anchors(options._session, training, list(trained),
                                                  list(weights), list(optimizer_state))
    return AnchorPlan(list(gradients), list(variables), list(state))


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
    names them), each anchored gradient's parameter shape, the anchored
    variables the device holds and the optimizer state the program keeps, by
    PopTorch's names (getTensorNames lists them): each one's device state, or
    None for a compound hyper-parameter, which the host computes."""
    plan: AnchorPlan
    shapes: Dict[str, torch.Size]
    on_device: Set[str]
    optimizer_state: Dict[str, Optional[str]]


NO_ANCHORS = CallAnchors(AnchorPlan([], [], []), {}, set(), {})


def resolve(plan_: AnchorPlan, shapes: Dict[str, torch.Size], program: _C.DeviceProgram,
            tensors: Dict[str, torch.Tensor], names_by_tensor: Dict[int, str],
            optimizer_state: Optional[Dict[str, Optional[str]]] = None) -> CallAnchors:
    """Names each variable anchor as the program does (a tied weight has one name
    there); refuses tensors the program does not hold, and optimizer state it does
    not keep (`optimizer_state`: what it keeps, as CallAnchors.optimizer_state)."""
    held_state = optimizer_state or {}
    for short, name in plan_.optimizer_state:
        if name not in held_state:
            raise OptionError(
                f"anchorTensor('{short}', '{name}'): this model's optimizer does not keep it "
                f"(Adam keeps Accl3 only with amsgrad, SGD a velocity and a step count only with "
                f"momentum); getTensorNames() lists what it keeps.",
                option="anchorTensor")
    on_device = set(program.weight_names())
    device_anchors = on_device | ({LOSS_SCALE_STATE} & set(program.state_names()))
    named = [(short, name, name if name == LOSS_SCALE_STATE
              else names_by_tensor[id(tensors[name])]) for short, name in plan_.variables]
    _C.check_anchored_variables_held(named, sorted(on_device))
    resolved = [(short, program_name) for short, _, program_name in named]
    return CallAnchors(plan_._replace(variables=resolved), shapes, device_anchors, held_state)


def read_variables(anchors: CallAnchors, program: _C.DeviceProgram,
                   loss_scaling: float) -> Dict[str, torch.Tensor]:
    """The anchored variables' values after a call, by short name; the loss scaling
    factor, when the program holds it as a constant, is `loss_scaling`."""
    names = [name for _, name in anchors.plan.variables]
    values = program.read_variables(sorted(set(names) & anchors.on_device))
    if LOSS_SCALE_STATE not in values:  # a constant factor: the optimizer's
        values[LOSS_SCALE_STATE] = torch.tensor(loss_scaling)
    return {short: values[name] for short, name in anchors.plan.variables}
