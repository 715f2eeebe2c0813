"""The base of popsim's optimizers (popsim.optim): PopTorch's ``Optimizer`` with
``max_grad_norm`` and its state dict, the record of which hyper-parameters are variable
(``VariableAttributes``), and the checks of PopTorch's extra arguments."""

import functools
import inspect
import math
from typing import Any, Callable, Dict, Iterable, Optional, Union

import torch

from popsim.api.errors import OptionError

# What an optimizer's ``params`` takes, as torch.optim's: tensors, or parameter groups (dicts
# with a "params" entry and the group's own hyper-parameters).
Params = Union[Iterable[torch.Tensor], Iterable[Dict[str, Any]]]

_STATE_TYPES = ("accum_type", "velocity_accum_type", "first_order_momentum_accum_type",
                "second_order_momentum_accum_type")


def check_popsim_arguments(name: str, extras: Dict[str, Any]) -> None:
    for key in _STATE_TYPES:
        if extras.get(key) not in (None, torch.float32, torch.float16):
            raise OptionError(f"{name}({key}={extras[key]}): popsim keeps optimizer state and "
                              "accumulators in torch.float32 or torch.float16.",
                              option=f"{name}.{key}")
    norm = extras.get("max_grad_norm")
    if norm is not None and (isinstance(norm, bool) or not isinstance(norm, (int, float))
                             or not norm > 0):
        raise OptionError(f"{name}(max_grad_norm={norm!r}): max_grad_norm must be a positive "
                          "number (or None or inf for no clipping).",
                          option=f"{name}.max_grad_norm")
    scaling = extras.get("loss_scaling")
    if scaling is not None and not scaling > 0:
        raise OptionError(f"{name}(loss_scaling={scaling}): loss_scaling must be positive.",
                          option=f"{name}.loss_scaling")


class VariableAttributes:
    """Which of an optimizer's attributes are variable and which are constants of the program.

    A variable attribute lives in device state, so :meth:`popsim.Executor.setOptimizer` may
    change it without recompiling; a constant one is compiled into the program, and
    ``setOptimizer`` refuses to change it. As with PopTorch's ``optimizer.variable_attrs``, the
    attributes passed explicitly to the optimizer's constructor are variable and the others
    constant; :meth:`markAsVariable` and :meth:`markAsConstant` change that before the model is
    wrapped. Every popsim.optim optimizer makes its own as ``optimizer.variable_attrs``.
    """

    def __init__(self, variables: Iterable[str], allowed: Iterable[str]) -> None:
        """Records which of an optimizer's attributes are variable.

        Args:
            variables: The names of the attributes that start variable.
            allowed: The names of every attribute that may be marked: the optimizer's
                hyper-parameters (its ``defaults``) and ``loss_scaling``.
        """
        self._variables = list(variables)
        self._allowed = list(allowed)

    def isConstant(self, attr: str) -> bool:
        """Tells whether an attribute is a constant of the compiled program.

        Args:
            attr: The attribute's name, such as ``"lr"`` or ``"loss_scaling"``.

        Returns:
            True unless ``attr`` is marked variable (a name the optimizer does not know is
            reported constant).
        """
        return attr not in self._variables

    def markAsConstant(self, attr: str) -> None:
        """Makes an attribute a constant of the compiled program.

        ``setOptimizer`` then refuses to change it. Call it before the model is wrapped.

        Args:
            attr: The attribute's name, such as ``"lr"`` or ``"loss_scaling"``.

        Raises:
            OptionError: when the optimizer has no attribute ``attr``.
        """
        self._check(attr)
        self._variables = [name for name in self._variables if name != attr]

    def markAsVariable(self, attr: str) -> None:
        """Makes an attribute variable, so that ``setOptimizer`` may change it without recompiling.

        Call it before the model is wrapped.

        Args:
            attr: The attribute's name, such as ``"lr"`` or ``"loss_scaling"``.

        Raises:
            OptionError: when the optimizer has no attribute ``attr``.
        """
        self._check(attr)
        if attr not in self._variables:
            self._variables.append(attr)

    def _check(self, attr: str) -> None:
        if attr not in self._allowed:
            raise OptionError(f"variable_attrs: unknown attribute {attr!r}; the optimizer's "
                              f"attributes are {', '.join(self._allowed)}.",
                              option="variable_attrs")


class Optimizer:
    """The base of popsim's optimizers (PopTorch's ``poptorch.optim.Optimizer``, for
    ``isinstance`` checks): ``max_grad_norm`` (inf for none), as PopTorch's optimizers have
    it, kept in ``optimizer.defaults`` so that pickles keep it too, and PopTorch's state
    dict."""

    defaults: Dict[str, Any]  # torch.optim.Optimizer's, which the optimizers below derive
    # Set by records_variables after __init__:
    variable_attrs: VariableAttributes
    loss_scaling: float

    @property
    def max_grad_norm(self) -> float:
        """The norm gradients are clipped to before each step (``math.inf``: no clipping)."""
        norm = self.defaults.get("max_grad_norm")
        return math.inf if norm is None else norm

    # The setter takes None too (no clipping).
    @max_grad_norm.setter
    def max_grad_norm(self, norm: Optional[float]) -> None:
        self.defaults["max_grad_norm"] = norm

    def state_dict(self) -> Dict[str, Any]:
        """Gives torch's state dict, with PopTorch's ``"ipu_state"`` and ``"ipu_param"``.

        Returns:
            torch's state dict of the optimizer, plus ``"ipu_state"`` and ``"ipu_param"``:
            None until a training model compiles with this optimizer, then the device's
            optimizer state and each parameter's hyper-parameters as PopART's compound
            scalars, by PopTorch's names (``Accl1___model.lin.weight``,
            ``learningRate___specific___model.lin.bias``, ``lossScaling_FLOAT``).
        """
        state: Dict[str, Any] = super().state_dict()  # type: ignore[misc]
        state.setdefault("ipu_state", None)
        state.setdefault("ipu_param", None)
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Loads a state dict as torch's ``load_state_dict`` does.

        Args:
            state_dict: The state dict, as :meth:`state_dict` gives it; its ``"ipu_state"``
                and ``"ipu_param"`` are read by the training model that owns the optimizer, if
                any.
        """
        super().load_state_dict(  # type: ignore[misc]
            {k: v for k, v in state_dict.items() if k not in ("ipu_state", "ipu_param")})


def state_type(optimizer: torch.optim.Optimizer, argument: str) -> torch.dtype:
    """The dtype a popsim.optim optimizer keeps its `argument` state in
    (accum_type, ...): float32 unless the constructor said float16."""
    return getattr(optimizer, argument, None) or torch.float32


def closure_loss(closure: Optional[Callable[[], float]]) -> Optional[float]:
    """The loss a step's closure recomputes (with gradients on, as in torch's
    optimizers), or None without a closure."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


def records_variables(init: Callable[..., None]) -> Callable[..., None]:
    """After `init`, optimizer.variable_attrs marks the attributes the call
    passed explicitly as variable, as on PopTorch's optimizers."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapped(self: Optimizer, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        given = dict(signature.bind(self, *args, **kwargs).arguments)
        # Keyword arguments a subclass passes on through **kwargs (LAMBNoBias's
        # loss_scaling, say) count as given too.
        for name, parameter in signature.parameters.items():
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                given.update(given.pop(name, {}))
        allowed = [name for name in self.defaults if name not in ("max_grad_norm",
                                                                   "bias_correction",
                                                                   "use_tf_variant")]
        allowed.append("loss_scaling")
        self.variable_attrs = VariableAttributes(
            [name for name in allowed if given.get(name) is not None], allowed)
        for name in _STATE_TYPES:  # PopTorch keeps them as attributes
            if name in signature.parameters or name in given:
                setattr(self, name, given.get(name) or torch.float32)
        self.loss_scaling = 1.0 if given.get("loss_scaling") is None else given["loss_scaling"]

    return wrapped


# (The type: ignore[call-arg] below: Debian's torch 1.13 takes maximize=, its
# type stubs do not declare it.)
