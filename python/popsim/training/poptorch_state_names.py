"""PopTorch's names and values for a training model's device optimizer state: the
``"ipu_state"`` and ``"ipu_param"`` of an optimizer's ``state_dict()``.

PopTorch names them as PopART does, so that its checkpoints are read back by its code:

- each state tensor by its accumulator and parameter: ``Accl1___model.lin.weight`` (Adam's
  first moment, RMSprop's square average), ``Accl2___`` (Adam's second moment, RMSprop's
  momentum), ``Accl3___`` (Adam's maximum of the second moment with amsgrad, RMSprop's
  average gradient when centred), ``Accl___`` (SGD's velocity, which PopART keeps multiplied
  by the loss scaling) and ``Step___`` (the step count, per parameter; popsim keeps it per
  group); a replica-grouped parameter's (``replicaGrouping``) have one row per replica group,
  its step count too (every group steps together);
- each hyper-parameter as the compound scalar PopART's update reads, per parameter:
  ``learningRate___specific___model.lin.bias``; SGD without momentum (PopART's SGD0)
  ``scaledLearningRate0`` = lr (1 - dampening) gradScale / lossScaling and
  ``weightDecayScaleFactor0`` = 1 - lr (1 - dampening) weightDecay; SGD with momentum (SGD2,
  its velocity scaled by the loss scaling) ``scaledLearningRate2`` = lr / lossScaling,
  ``dampeningScaleFactor2`` = (1 - dampening) gradScale, ``scaledMomentum2`` and
  ``scaledWeightDecay1`` = (1 - dampening) weightDecay lossScaling; Adam, AdamW and LAMB
  ``weightDecay``, ``adamBeta1``, ``adamBeta2``, ``adamEps`` and ``adamGradientScaling`` =
  gradScale / lossScaling; RMSprop ``weightDecay``, ``adaptiveAlpha``, ``adaptiveMomentum``,
  ``adaptiveEps`` and ``adaptiveGradientScaling``;
- the loss scaling as ``lossScaling_FLOAT``.

gradScale is what the updates multiply the step's gradients by (1 / gradientAccumulation x
replicas for a mean). A scalar made only of hyper-parameters the optimizer's ``variable_attrs``
holds constant is part of the program and not listed, as in PopTorch; the learning rate is
never constant, so the scalars it is part of always are. Parameters
are named as PopTorch names them inside the wrapper it puts around the user's model:
``model.`` and the model's own path.
"""

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import torch

from popsim import _C
from popsim.api.errors import OptionError

PARAMETER_PREFIX = _C.POPTORCH_PARAMETER_PREFIX  # (the anchors' too: host/anchors.h)
LOSS_SCALING = "lossScaling_FLOAT"

# popsim's state key (after "<parameter>/") -> PopART's accumulator, by optimizer kind.
_ACCUMULATORS: Dict[str, Dict[str, str]] = {
    "sgd": {"momentum_buffer": "Accl"},
    "adam": {"exp_avg": "Accl1", "exp_avg_sq": "Accl2", "max_exp_avg_sq": "Accl3"},
    "adamw": {"exp_avg": "Accl1", "exp_avg_sq": "Accl2", "max_exp_avg_sq": "Accl3"},
    "lamb": {"exp_avg": "Accl1", "exp_avg_sq": "Accl2"},
    "rmsprop": {"square_avg": "Accl1", "momentum_buffer": "Accl2", "grad_avg": "Accl3"},
}
_STEP = "Step"


def _specific(scalar: str, parameter: str) -> str:
    return f"{scalar}___specific___{PARAMETER_PREFIX}{parameter}"


class StateNames:
    """One training model's optimizer, as PopTorch names its device state.

    Args:
        kind: The optimizer's kind ("sgd", "adam", "adamw", "lamb", "rmsprop").
        groups: Each parameter group's parameter names, as the model names them.
        constants: {(group index, attribute): value} of the attributes held constant.
        constant_loss_scaling: Whether the loss scaling is a constant of the program.
        replica_groups: Each replica-grouped parameter's number of replica groups.
    """

    def __init__(self, kind: str, groups: List[List[str]],
                 constants: Mapping[Tuple[Optional[int], str], Any],
                 constant_loss_scaling: bool,
                 replica_groups: Optional[Mapping[str, int]] = None) -> None:
        self.kind = kind
        self.replica_groups = dict(replica_groups or {})
        self.groups = groups
        self.constants = constants
        self.constant_loss_scaling = constant_loss_scaling
        self._group_of = {name: index for index, names in enumerate(groups) for name in names}
        # popsim's device names, as the compiler gives them (one spelling: the core's).
        self._slot_of = {_C.parameter_state_name(name, slot): (name, slot)
                         for name in self._group_of for slot in _ACCUMULATORS[kind]}
        self._step_of = {_C.group_state_name(index, "step"): index for index in range(len(groups))}

    def _variable(self, group: int, attribute: str) -> bool:
        return (group, attribute) not in self.constants

    # --- names -----------------------------------------------------------------------------

    def candidate_names(self) -> List[str]:
        """Every name ipu_state may have before the program says which state it keeps: each
        accumulator and step count of each parameter."""
        accumulators = list(_ACCUMULATORS[self.kind].values()) + [_STEP]
        return [f"{accumulator}___{PARAMETER_PREFIX}{name}"
                for name in self._group_of for accumulator in accumulators]

    def sources(self, device_names: Iterable[str]) -> Dict[str, str]:
        """ipu_state's name of each of popsim's device states `device_names` -> that device
        name (a group's step count is each of its parameters' ``Step___``), without values."""
        return {poptorch: device_name for device_name in device_names
                for poptorch in self.ipu_state({device_name: torch.zeros(())}, 1.0)}

    # --- ipu_state -------------------------------------------------------------------------

    def ipu_state(self, state: Mapping[str, torch.Tensor], loss_scaling: float
                  ) -> Dict[str, torch.Tensor]:
        """popsim's device state by PopTorch's names."""
        named: Dict[str, torch.Tensor] = {}
        accumulators = _ACCUMULATORS[self.kind]
        for key, value in state.items():
            if key in self._slot_of:
                parameter, slot = self._slot_of[key]
                if self.kind == "sgd":  # PopART's velocity carries the loss scaling
                    value = (value.double() * loss_scaling).to(value.dtype)
                named[f"{accumulators[slot]}___{PARAMETER_PREFIX}{parameter}"] = value
            elif key in self._step_of:
                for name in self.groups[self._step_of[key]]:
                    rows = self.replica_groups.get(name)
                    named[f"{_STEP}___{PARAMETER_PREFIX}{name}"] = (
                        value.clone() if rows is None else value.reshape(1).repeat(rows))
            else:
                named[key] = value  # popsim's own state (shards, ...) keeps its name
        return named

    def device_state(self, ipu_state: Mapping[str, torch.Tensor], loss_scaling: float
                     ) -> Dict[str, torch.Tensor]:
        """A loaded ipu_state by popsim's device names (PopTorch's names or popsim's own)."""
        by_accumulator = {accl: slot for slot, accl in _ACCUMULATORS[self.kind].items()}
        state: Dict[str, torch.Tensor] = {}
        steps: Dict[int, Tuple[str, torch.Tensor]] = {}
        for key, value in ipu_state.items():
            accumulator, separator, parameter = key.partition("___")
            if separator and parameter.startswith(PARAMETER_PREFIX):
                parameter = parameter[len(PARAMETER_PREFIX):]
                if parameter in self._group_of and accumulator == _STEP:
                    index = self._group_of[parameter]
                    value = self._one_step(key, parameter, value)
                    if index in steps and not torch.equal(steps[index][1], value):
                        raise OptionError(
                            f"optimizer.load_state_dict: ipu_state['{key}'] and "
                            f"ipu_state['{steps[index][0]}'] give parameter group {index} two "
                            f"step counts; popsim keeps one per group.",
                            option="optimizer.load_state_dict")
                    steps[index] = (key, value)
                    continue
                if parameter in self._group_of and accumulator in by_accumulator:
                    if self.kind == "sgd":
                        value = (value.double() / loss_scaling).to(value.dtype)
                    state[_C.parameter_state_name(parameter, by_accumulator[accumulator])] = value
                    continue
            state[key] = value
        for index, (_, value) in steps.items():
            state[_C.group_state_name(index, "step")] = value
        return state

    def _one_step(self, key: str, parameter: str, value: torch.Tensor) -> torch.Tensor:
        """A loaded step count as popsim keeps it: a replica-grouped parameter's has a row
        per group, all the same (every group steps together)."""
        rows = self.replica_groups.get(parameter)
        if rows is None or value.dim() == 0:
            return value
        if tuple(value.shape) != (rows,) or not bool((value == value[0]).all()):
            raise OptionError(
                f"optimizer.load_state_dict: ipu_state['{key}'] should hold one step count per "
                f"replica group of {parameter} ({rows}), all the same, as the groups step "
                f"together; it is {value.tolist()}.", option="optimizer.load_state_dict")
        return value[0].clone()

    # --- ipu_param -------------------------------------------------------------------------

    def ipu_param(self, param_groups: List[Dict[str, Any]], grad_scale: float,
                  loss_scaling: float) -> Dict[str, torch.Tensor]:
        """Each parameter's compound scalars, and the loss scaling, as PopTorch lists them."""
        named: Dict[str, torch.Tensor] = {}
        for index, (group, names) in enumerate(zip(param_groups, self.groups)):
            for scalar, value in self._scalars(index, group, grad_scale, loss_scaling).items():
                for name in names:
                    named[_specific(scalar, name)] = torch.tensor(float(value))
        if not self.constant_loss_scaling:
            named[LOSS_SCALING] = torch.tensor(float(loss_scaling))
        return named

    def _scalars(self, index: int, group: Dict[str, Any], grad_scale: float,
                 loss_scaling: float) -> Dict[str, float]:
        lr, wd = float(group["lr"]), float(group["weight_decay"])
        variable = lambda attribute: self._variable(index, attribute)  # noqa: E731
        scaling_varies = not self.constant_loss_scaling
        if self.kind == "sgd":
            dampening = float(group["dampening"])
            if self._sgd0(index, group):
                return {"scaledLearningRate0": lr * (1 - dampening) * grad_scale / loss_scaling,
                        "weightDecayScaleFactor0": 1 - lr * (1 - dampening) * wd}
            scalars = {"scaledLearningRate2": lr / loss_scaling}
            if variable("dampening") or scaling_varies:
                scalars["dampeningScaleFactor2"] = (1 - dampening) * grad_scale
            if variable("momentum"):
                scalars["scaledMomentum2"] = float(group["momentum"])
            if variable("weight_decay") or variable("dampening") or scaling_varies:
                # SGD2 shares SGD1's weight decay term, on the velocity's scale.
                scalars["scaledWeightDecay1"] = (1 - dampening) * wd * loss_scaling
            return scalars
        scalars = {"learningRate": lr}
        if variable("weight_decay"):
            scalars["weightDecay"] = wd
        if self.kind == "rmsprop":
            if variable("alpha"):
                scalars["adaptiveAlpha"] = float(group["alpha"])
            if variable("momentum"):
                scalars["adaptiveMomentum"] = float(group["momentum"])
            if variable("eps"):
                scalars["adaptiveEps"] = float(group["eps"])
            if scaling_varies:
                scalars["adaptiveGradientScaling"] = grad_scale / loss_scaling
            return scalars
        if variable("betas"):
            beta1, beta2 = group["betas"]
            scalars["adamBeta1"], scalars["adamBeta2"] = float(beta1), float(beta2)
        if variable("eps"):
            scalars["adamEps"] = float(group["eps"])
        if scaling_varies:
            scalars["adamGradientScaling"] = grad_scale / loss_scaling
        return scalars

    def _sgd0(self, index: int, group: Dict[str, Any]) -> bool:
        """PopART's SGD0: SGD whose momentum is a constant 0."""
        return group["momentum"] == 0 and not self._variable(index, "momentum")

    def hyperparameters(self, ipu_param: Mapping[str, torch.Tensor],
                        param_groups: List[Dict[str, Any]], grad_scale: float,
                        loss_scaling: float) -> Tuple[List[Dict[str, Any]], Optional[float]]:
        """What a loaded ipu_param changes: ([{attribute: value} per group], the loss scaling
        or None). Each group's scalars must agree between its parameters (popsim keeps one
        value per group: an OptionError otherwise). A scalar equal (in float32) to what the
        group gives with the loaded loss scaling and the attributes changed before it changes
        nothing; another is turned back into its attribute by the inverse of its formula
        (learning rates first, which weightDecayScaleFactor0's inverse reads). Keys popsim does
        not keep, and attributes the program holds constant, are left, as PopTorch leaves
        them."""
        scaling = loss_scaling
        if LOSS_SCALING in ipu_param and not _same(ipu_param[LOSS_SCALING], loss_scaling):
            scaling = float(ipu_param[LOSS_SCALING])
        # Each group's scalars, the same for all its parameters.
        loaded: List[Dict[str, Tuple[torch.Tensor, str]]] = [{} for _ in param_groups]
        for key, value in ipu_param.items():
            scalar, separator, parameter = key.partition("___specific___")
            if not separator or not parameter.startswith(PARAMETER_PREFIX):
                continue
            index = self._group_of.get(parameter[len(PARAMETER_PREFIX):])
            if index is None:
                continue
            known = loaded[index].get(scalar)
            if known is not None and not torch.equal(known[0].float(), value.float()):
                raise OptionError(
                    f"optimizer.load_state_dict: ipu_param['{key}'] is {float(value)!r} and "
                    f"ipu_param['{known[1]}'] {float(known[0])!r}, two values for parameters "
                    f"of parameter group {index}; popsim keeps one value per parameter group "
                    f"(use parameter groups for parameters whose hyper-parameters differ).",
                    option="optimizer.load_state_dict")
            loaded[index][scalar] = (value, key)
        updates: List[Dict[str, Any]] = [{} for _ in param_groups]
        # Learning rates first, which weightDecayScaleFactor0's inverse reads, then the
        # dampening, which scaledWeightDecay1's reads.
        order = {"learningRate": 0, "scaledLearningRate0": 0, "scaledLearningRate2": 0,
                 "dampeningScaleFactor2": 1}
        for index, scalars in enumerate(loaded):
            group = dict(param_groups[index])
            for scalar in sorted(scalars, key=lambda name: order.get(name, 2)):
                value = scalars[scalar][0]
                expected = self._scalars(index, group, grad_scale, scaling).get(scalar)
                if expected is not None and _same(value, expected):
                    continue
                for attribute, derived in self._attributes(scalar, float(value), group,
                                                           grad_scale, scaling).items():
                    if (index, "betas" if attribute.startswith("beta") else attribute) in \
                            self.constants:
                        continue  # a constant of the program, as PopTorch leaves it
                    updates[index][attribute] = derived
                    apply_hyperparameters([group], [{attribute: derived}])
        return updates, (scaling if scaling != loss_scaling else None)

    def _attributes(self, scalar: str, value: float, group: Dict[str, Any], grad_scale: float,
                    loss_scaling: float) -> Dict[str, Any]:
        """The attribute one compound scalar sets, by the inverse of its formula (betas as
        "beta1" and "beta2")."""
        dampening = float(group.get("dampening", 0.0))
        direct = {"learningRate": "lr", "weightDecay": "weight_decay",
                  "scaledMomentum2": "momentum", "adaptiveMomentum": "momentum",
                  "adaptiveAlpha": "alpha",
                  "adamEps": "eps", "adaptiveEps": "eps", "adamBeta1": "beta1",
                  "adamBeta2": "beta2"}
        if scalar in direct:
            return {direct[scalar]: value}
        if scalar == "scaledLearningRate0" and dampening != 1 and grad_scale != 0:
            return {"lr": value * loss_scaling / ((1 - dampening) * grad_scale)}
        if scalar == "scaledLearningRate2":
            return {"lr": value * loss_scaling}
        if scalar == "dampeningScaleFactor2" and grad_scale != 0:
            return {"dampening": 1 - value / grad_scale}
        if scalar == "scaledWeightDecay1" and dampening != 1 and loss_scaling != 0:
            return {"weight_decay": value / ((1 - dampening) * loss_scaling)}
        if scalar == "weightDecayScaleFactor0":
            lr = float(group["lr"])
            if lr != 0 and dampening != 1:
                return {"weight_decay": (1 - value) / (lr * (1 - dampening))}
        return {}


def of_binding(binding: Any, replica_groups: Mapping[str, int]) -> StateNames:
    """The names of an optimizer_binding.OptimizerBinding's state, its replica-grouped
    parameters having `replica_groups` groups each."""
    return StateNames(binding.kind, [[name for name, _ in params] for params in binding.groups],
                      binding.constants, binding.constant_loss_scaling(), replica_groups)


def _same(stored: torch.Tensor, value: float) -> bool:
    """Whether a stored scalar is `value` as a float32 tensor holds it."""
    return bool(torch.equal(stored.detach().float().reshape(()),
                            torch.tensor(float(value), dtype=torch.float32)))


def apply_hyperparameters(param_groups: List[Dict[str, Any]],
                          updates: List[Dict[str, Any]]) -> None:
    """Sets each group's changed attributes (betas from "beta1" and "beta2")."""
    for group, changed in zip(param_groups, updates):
        changed = dict(changed)
        beta1, beta2 = changed.pop("beta1", None), changed.pop("beta2", None)
        if beta1 is not None or beta2 is not None:
            old1, old2 = group["betas"]
            group["betas"] = (old1 if beta1 is None else beta1, old2 if beta2 is None else beta2)
        group.update(changed)
