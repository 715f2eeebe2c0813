"""Optimizers and their state, between torch.optim and the device program.

The C++ training program keeps, per parameter, the optimizer state PyTorch
keeps (exp_avg, momentum_buffer, ...) under "<param>/<state>" and, per
parameter group, a vector of hyper-parameters and a step count under
"optimizer/group<g>/...". This module maps a torch.optim optimizer onto
that: the compile-time configuration, the hyper-parameter values, and state
in both directions.
"""

import math
import warnings
from typing import Any, Dict, Iterable, Iterator, List, Optional, Set, Tuple

import torch

from popsim import _C
from popsim.training import optim as popsim_optim
from popsim.training import optimizer_base
from popsim.api.log import LOGGER
from popsim.api.errors import OptionError

from popsim.api.options import Options

# Per optimizer: the C++ name, the structural flags of a group (which change
# what state exists, so changing them needs a recompilation) and the state
# tensors kept per parameter.
_KINDS = [
    (popsim_optim.LAMB, "lamb"),
    (torch.optim.AdamW, "adamw"),
    (torch.optim.Adam, "adam"),
    (torch.optim.SGD, "sgd"),
    (torch.optim.RMSprop, "rmsprop"),
]


def optimizer_kind(optimizer: torch.optim.Optimizer) -> str:
    for cls, name in _KINDS:
        if isinstance(optimizer, cls):
            return name
    raise OptionError(
        f"popsim trains with SGD, Adam, AdamW or RMSprop (popsim.optim or torch.optim) or LAMB "
        f"(popsim.optim), got "
        f"{type(optimizer).__name__}.", option="optimizer")


def group_flags(kind: str, group: Dict[str, Any]) -> Dict[str, bool]:
    """The flags of a parameter group that decide the program's shape."""
    if kind == "sgd":
        return {"has_momentum": group["momentum"] != 0, "nesterov": bool(group["nesterov"]),
                "maximize": bool(group.get("maximize", False))}
    if kind in ("adam", "adamw"):
        return {"amsgrad": bool(group["amsgrad"]), "maximize": bool(group.get("maximize", False)),
                "bias_correction": bool(group.get("bias_correction", True))}
    if kind == "lamb":
        return {"bias_correction": bool(group["bias_correction"])}
    return {"has_momentum": group["momentum"] > 0, "centered": bool(group["centered"]),
            "maximize": bool(group.get("maximize", False)),
            "use_tf_variant": bool(group.get("use_tf_variant", False))}


_OPTIMIZER_KINDS = {"sgd": _C.OptimizerKind.Sgd, "adam": _C.OptimizerKind.Adam,
                    "adamw": _C.OptimizerKind.AdamW, "rmsprop": _C.OptimizerKind.Rmsprop,
                    "lamb": _C.OptimizerKind.Lamb}


def parameter_group(flags: Dict[str, bool], parameters: Iterable[str] = ()) -> _C.ParameterGroup:
    """A group's compile-time shape, as the C++ training program takes it."""
    group = _C.ParameterGroup()
    group.parameters = list(parameters)
    for flag, value in flags.items():
        setattr(group, flag, value)
    return group


def state_names(kind: str, flags: Dict[str, bool]) -> List[str]:
    """PyTorch's per-parameter state of one group (named by the C++ program)."""
    return _C.parameter_state_keys(_OPTIMIZER_KINDS[kind], parameter_group(flags))


def hyperparameters(kind: str, group: Dict[str, Any], grad_scale: float) -> Dict[str, float]:
    """The numeric hyper-parameters of a group, by the names the C++ program uses."""
    if kind == "sgd":
        values = {"lr": group["lr"], "momentum": group["momentum"],
                  "dampening": group["dampening"], "weight_decay": group["weight_decay"]}
    elif kind in ("adam", "adamw", "lamb"):
        beta1, beta2 = group["betas"]
        values = {"lr": group["lr"], "beta1": beta1, "beta2": beta2, "eps": group["eps"],
                  "weight_decay": group["weight_decay"]}
        if kind == "lamb":
            values["max_weight_norm"] = group["max_weight_norm"]
    else:
        values = {"lr": group["lr"], "alpha": group["alpha"], "eps": group["eps"],
                  "weight_decay": group["weight_decay"], "momentum": group["momentum"]}
    values["grad_scale"] = grad_scale
    for name, value in values.items():
        if isinstance(value, torch.Tensor):
            values[name] = float(value)
    return values


# The hyper-parameters variable_attrs may mark constant, per group.
_GROUP_ATTRIBUTES = ("lr", "momentum", "dampening", "weight_decay", "betas", "eps", "alpha",
                     "max_weight_norm")


# Which state each of PopTorch's state-type arguments sets, by optimizer kind.
# PopTorch's arguments typing the optimizer state, by the core's name for them (the keys each
# types come from the core: _C.state_keys_typed_by).
_STATE_TYPE_ARGUMENTS = {
    "velocity_accum_type": _C.StateTypeArgument.Velocity,
    "first_order_momentum_accum_type": _C.StateTypeArgument.FirstOrderMomentum,
    "second_order_momentum_accum_type": _C.StateTypeArgument.SecondOrderMomentum,
}


def half_state_keys(kind: str, optimizer: torch.optim.Optimizer) -> List[str]:
    """The optimizer state keys kept in float16 (PopTorch's state types)."""
    return [key for argument, core in _STATE_TYPE_ARGUMENTS.items()
            if optimizer_base.state_type(optimizer, argument) == torch.float16
            for key in _C.state_keys_typed_by(_OPTIMIZER_KINDS[kind], core)]


def constant_values(optimizer: torch.optim.Optimizer) -> Dict[Tuple[Optional[int], str], Any]:
    """{(group index, name) or (None, name): value} of the attributes a
    popsim.optim optimizer's variable_attrs marks constant."""
    attributes = getattr(optimizer, "variable_attrs", None)
    if attributes is None:
        return {}
    values: Dict[Tuple[Optional[int], str], Any] = {}
    for index, group in enumerate(optimizer.param_groups):
        for name in _GROUP_ATTRIBUTES:
            if name in group and attributes.isConstant(name):
                values[index, name] = group[name]
    if attributes.isConstant("loss_scaling"):
        values[None, "loss_scaling"] = getattr(optimizer, "loss_scaling", 1.0)
    for argument in ("accum_type",) + tuple(_STATE_TYPE_ARGUMENTS):  # they shape the program
        values[None, argument] = optimizer_base.state_type(optimizer, argument)
    return values


def check_group_attributes(optimizer: torch.optim.Optimizer, options: Options,
                           reported: Set[str]) -> None:
    """Says once per attribute (a warning, or with
    Options.relaxOptimizerAttributesChecks a DEBUG log) which parameter-group
    attributes popsim does not use: anything beyond torch's own for the
    optimizer (its defaults), "params" and the LR schedulers' "initial_lr"."""
    expected = set(getattr(optimizer, "defaults", {})) | {"params", "initial_lr"}
    for index, group in enumerate(optimizer.param_groups):
        for name in sorted(set(group) - expected - reported):
            reported.add(name)
            message = (f"Optimizer parameter group {index} has an attribute '{name}' that "
                       f"{type(optimizer).__name__} does not define; popsim ignores it.")
            if options.relax_optimizer_attributes_checks:
                LOGGER.debug(message)
            else:
                warnings.warn(message + " (Options.relaxOptimizerAttributesChecks() makes "
                              "this a debug message.)", stacklevel=4)


def max_grad_norm(optimizer: torch.optim.Optimizer) -> float:
    """The optimizer's max_grad_norm (popsim.optim's, as PopTorch's), 0.0 for none."""
    norm = getattr(optimizer, "max_grad_norm", None)
    return 0.0 if norm is None or math.isinf(norm) else float(norm)


def grad_scale(options: Options) -> float:
    """How a step reads its gradient, accumulated over micro-batches and summed
    over the job's replicas (host/compile_options_builder.h's gradientScale)."""
    return _C.gradient_scale(options._session)


class OptimizerBinding:
    """One optimizer's parameters by name, and its configuration for C++."""

    def __init__(self, optimizer: torch.optim.Optimizer, names_by_tensor: Dict[int, str]) -> None:
        self.optimizer = optimizer
        self.kind = optimizer_kind(optimizer)
        self.groups: List[List[Tuple[str, torch.Tensor]]] = []  # per group: (name, parameter)s
        for index, group in enumerate(optimizer.param_groups):
            params = []
            for param in group["params"]:
                name = names_by_tensor.get(id(param))
                if name is None:
                    raise OptionError(
                        f"Parameter group {index} of the optimizer holds a tensor of shape "
                        f"{list(param.shape)} that is not a parameter of the model.",
                        option="optimizer")
                if param.requires_grad:
                    params.append((name, param))
            self.groups.append(params)
        self.flags = [group_flags(self.kind, group) for group in optimizer.param_groups]
        self.max_grad_norm = max_grad_norm(optimizer)
        self.constants = constant_values(optimizer)
        self._written: List[Dict[str, float]] = []  # each group's, by write_hyperparameters

    def config(self, options: Options) -> _C.TrainingConfig:
        """The program's training config: the optimizer's part from here, the
        session's (gradient reduction, replicas, automatic loss scaling) from the host;
        the host adds what replicas shard (compilation.training_config)."""
        config = _C.TrainingConfig()
        config.optimizer = _OPTIMIZER_KINDS[self.kind]
        config.max_grad_norm = self.max_grad_norm
        config.half_accumulators = (
            optimizer_base.state_type(self.optimizer, "accum_type") == torch.float16)
        config.half_states = half_state_keys(self.kind, self.optimizer)
        config.loss_scaling = self.loss_scaling()
        config.loss_scaling_state = not self.constant_loss_scaling()
        config.groups = [parameter_group(flags, [name for name, _ in params])
                         for flags, params in zip(self.flags, self.groups)]
        return _C.apply_session_training(options._session, config)

    def trained_names(self) -> List[str]:
        """The parameters the optimizer trains, group by group."""
        return [name for params in self.groups for name, _ in params]

    def parameter_states(self, name: str) -> List[str]:
        """The device state names of one parameter: its optimizer state and its
        gradient accumulator (when there is one)."""
        for index, params in enumerate(self.groups):
            if any(param_name == name for param_name, _ in params):
                keys = list(state_names(self.kind, self.flags[index])) + ["accumulator"]
                return [_C.parameter_state_name(name, key) for key in keys]
        return []

    def check_compatible(self, other: "OptimizerBinding") -> None:
        """setOptimizer may change numbers, not the program's shape."""
        if other.kind != self.kind:
            raise OptionError(
                f"setOptimizer cannot change the optimizer from {self.kind} to {other.kind}: the "
                "update rule is compiled into the program. Call destroy() and wrap the model "
                "again.", option="setOptimizer")
        same_params = [[name for name, _ in g] for g in self.groups] == \
                      [[name for name, _ in g] for g in other.groups]
        for (index, name), value in self.constants.items():
            changed = (other.optimizer.param_groups[index][name] if index is not None
                       else getattr(other.optimizer, name, value))
            if changed != value:
                where = f" of parameter group {index}" if index is not None else ""
                raise OptionError(
                    f"setOptimizer cannot change {name}{where} from {value} to {changed}: it is "
                    f"a constant of the compiled program (popsim.optim optimizers, as "
                    f"PopTorch's, make constants of the arguments their constructor was not "
                    f"given). Pass {name} to the constructor, or call "
                    f"optimizer.variable_attrs.markAsVariable({name!r}) before wrapping the "
                    "model.", option="setOptimizer")
        if other.max_grad_norm != self.max_grad_norm:
            raise OptionError(
                f"setOptimizer cannot change max_grad_norm (from {self.max_grad_norm or None} to "
                f"{other.max_grad_norm or None}): gradient clipping is compiled into the program. "
                "Call destroy() and wrap the model again.", option="setOptimizer")
        if not same_params or other.flags != self.flags:
            raise OptionError(
                "setOptimizer can change numeric hyper-parameters (lr, momentum values, betas, "
                "eps, weight_decay, ...) but not the parameter groups or the settings that decide "
                "the optimizer state (momentum on or off, nesterov, amsgrad, centered, "
                "maximize). Call destroy() and wrap the model again for those.",
                option="setOptimizer")

    def loss_scaling(self) -> float:
        """The optimizer's loss_scaling (popsim.optim's, as PopTorch's); 1 for none."""
        scaling = getattr(self.optimizer, "loss_scaling", None)
        return 1.0 if scaling is None else float(scaling)

    def constant_loss_scaling(self) -> bool:
        """Whether loss_scaling is a constant of the program (variable_attrs), so
        setOptimizer cannot change it; else it lives in a device state."""
        return (None, "loss_scaling") in self.constants or not hasattr(self.optimizer,
                                                                         "variable_attrs")

    def write_hyperparameters(self, executable: _C.DeviceProgram, scale: float) -> None:
        """Each group's hyper-parameters and the loss scaling: a constant one is
        divided out by the updates (their gradient scale), a device state one by
        the program itself."""
        self._written = [hyperparameters(self.kind, group, scale)
                         for group in self.optimizer.param_groups]
        _C.write_optimizer_hyperparameters(executable, self._written, scale, self.loss_scaling())

    def unwritten_change(self, scale: float) -> Optional[str]:
        """How the optimizer's hyper-parameters now differ from those last written to the
        device ("parameter group 0's lr is 0.01, the device's 0.1"), or None."""
        for index, (group, written) in enumerate(zip(self.optimizer.param_groups,
                                                     self._written)):
            for name, value in hyperparameters(self.kind, group, scale).items():
                if value != written[name] and not (math.isnan(value)
                                                   and math.isnan(written[name])):
                    return (f"parameter group {index}'s {name} is {value:g}, the device's "
                            f"{written[name]:g}")
        return None

    def initial_state(self, executable: _C.DeviceProgram) -> Dict[str, torch.Tensor]:
        """Device state from the optimizer's own state (to resume), zeros otherwise;
        empty gradient accumulators and the random counter at its start."""
        available = set(executable.state_names())
        values = self.optimizer_state(executable)
        for params in self.groups:
            for name, param in params:
                accumulator = _C.parameter_state_name(name, "accumulator")
                if accumulator in available:
                    values[accumulator] = torch.zeros_like(
                        param, dtype=optimizer_base.state_type(self.optimizer, "accum_type"))
                count = _C.parameter_state_name(name, "accumulator_count")
                if count in available:
                    values[count] = torch.tensor(0, dtype=torch.int64)
        if _C.RANDOM_COUNTER_NAME in available:
            values[_C.RANDOM_COUNTER_NAME] = torch.tensor(0, dtype=torch.int64)
        return values

    def _state_entries(self, executable: _C.DeviceProgram
                       ) -> Iterator[Tuple[str, int, Optional[Tuple[str, torch.Tensor]]]]:
        """The program's optimizer state: (device name, group index, (state key, parameter))
        for each parameter's state, (device name, group index, None) for each group's step."""
        available = set(executable.state_names())
        for index, params in enumerate(self.groups):
            for name, param in params:
                for key in state_names(self.kind, self.flags[index]):
                    device_name = _C.parameter_state_name(name, key)
                    if device_name in available:
                        yield device_name, index, (key, param)
            step_name = _C.group_state_name(index, "step")
            if step_name in available:
                yield step_name, index, None

    def state_shapes(self, executable: _C.DeviceProgram) -> Dict[str, Tuple[int, ...]]:
        """The shape of each optimizer state tensor of the program, by device name."""
        return {device_name: tuple(entry[1].shape) if entry is not None else ()
                for device_name, _, entry in self._state_entries(executable)}

    def optimizer_state(self, executable: _C.DeviceProgram) -> Dict[str, torch.Tensor]:
        """The device's optimizer state (moments, buffers, step counts) from the
        optimizer's own state, zeros where it has none."""
        values = {}
        for device_name, index, entry in self._state_entries(executable):
            if entry is None:
                values[device_name] = torch.tensor(self._initial_step(index), dtype=torch.int64)
                continue
            key, param = entry
            value = self.optimizer.state.get(param, {}).get(key)
            start = _C.initial_state_value(parameter_group(self.flags[index]), key)
            dtype = (torch.float16 if key in half_state_keys(self.kind, self.optimizer)
                     else torch.float32)
            values[device_name] = (value.detach().to(dtype) if value is not None
                                   else torch.full_like(param, start, dtype=dtype))
        return values

    def _initial_step(self, index: int) -> int:
        counted = {}  # the optimizers that count steps per parameter (Adam, ...)
        stepped = False
        for name, param in self.groups[index]:
            state = self.optimizer.state.get(param, {})
            if "step" in state:
                counted[name] = int(float(state["step"]))
            elif "momentum_buffer" in state and state["momentum_buffer"] is not None:
                stepped = True  # SGD keeps no count; a buffer means it has stepped
        if len(set(counted.values())) > 1:
            # (A parameter frozen for some steps, which torch's optimizers then skip.)
            behind = sorted(((step, name) for name, step in counted.items()),
                            key=lambda entry: entry[0])  # fewest first, else in group order
            LOGGER.warning(
                "Parameter group %d's parameters have taken different numbers of optimizer "
                "steps (%s): popsim counts steps per group on the device and continues all of "
                "them from %d, so the step-dependent terms (Adam's bias correction) of the "
                "others differ from eager PyTorch's.", index,
                ", ".join(f"{name} {step}" for step, name in behind), behind[-1][0])
        return max(counted.values(), default=1 if stepped else 0)

    def copy_state_to_host(self, executable: _C.DeviceProgram) -> None:
        """The device's optimizer state into optimizer.state, as PyTorch keeps it."""
        available = set(executable.state_names())
        wanted = []
        for index, params in enumerate(self.groups):
            wanted.append(_C.group_state_name(index, "step"))
            for name, _ in params:
                wanted += [_C.parameter_state_name(name, key)
                           for key in state_names(self.kind, self.flags[index])]
        values = executable.read_variables([name for name in wanted if name in available])
        for index, params in enumerate(self.groups):
            step = values.get(_C.group_state_name(index, "step"))
            for name, param in params:
                state = self.optimizer.state[param]
                for key in state_names(self.kind, self.flags[index]):
                    if _C.parameter_state_name(name, key) in values:
                        state[key] = values[_C.parameter_state_name(name, key)]
                if step is not None and self.kind != "sgd":
                    state["step"] = torch.tensor(float(step))
