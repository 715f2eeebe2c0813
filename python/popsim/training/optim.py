"""popsim.optim: PyTorch's optimizers, run on the simulated IPU.

:class:`popsim.optim.SGD`, :class:`popsim.optim.Adam`, :class:`popsim.optim.AdamW` and
:class:`popsim.optim.RMSprop` are torch.optim's own classes with PopTorch's extra arguments. A
training model runs their update rules on the device with PyTorch's semantics and defaults;
plain torch.optim instances of these four classes are accepted too. :class:`popsim.optim.LAMB`
(and :class:`popsim.optim.LAMBNoBias`, without bias correction) is PopTorch's optimizer, with an
eager ``step()`` that computes what the device computes.

The PopTorch arguments, which each optimizer's ``Args`` list too:

- ``loss_scaling``: the loss's gradient is ``loss_scaling`` rather than 1, so that small
  float16 gradients stay representable, and the step divides it out in float32. Passed to the
  constructor it is variable (:meth:`popsim.Executor.setOptimizer` changes it without
  recompiling); ``Training.setAutomaticLossScaling`` adjusts it on the device. By a power of
  two it changes nothing in float32.
- ``velocity_scaling``: accepted (PopTorch's combined SGD variant uses it).
- ``accum_type`` (the gradient accumulators), ``velocity_accum_type`` (SGD's momentum buffer),
  ``first_order_momentum_accum_type`` (Adam's and LAMB's ``exp_avg``, RMSprop's momentum
  buffer and centred mean) and ``second_order_momentum_accum_type`` (``exp_avg_sq`` and
  ``max_exp_avg_sq``, RMSprop's square average): ``torch.float32`` (the default) or
  ``torch.float16``, which keeps that state in float16 on the device, rounded after every
  update as the IPU does, at half the memory. Constants of the compiled program.
- ``use_combined_accum``: accepted (an IPU memory layout choice).
- ``max_grad_norm``: clips each step's gradients (after accumulation) by their global 2-norm,
  as ``torch.nn.utils.clip_grad_norm_(params, max_grad_norm)`` before ``optimizer.step()``;
  None or inf (the default) does not clip. ``optimizer.max_grad_norm`` reads and sets it (in
  ``optimizer.defaults``, so pickles keep it), as on PopTorch's optimizers.
- ``variable_attrs``: which attributes ``setOptimizer`` may change
  (:class:`popsim.optim.VariableAttributes`).
"""

import math
from typing import Callable, Optional, Tuple, Union

import torch

from popsim.api.errors import OptionError
from popsim.training.optimizer_base import (Optimizer, Params, VariableAttributes,
                                            check_popsim_arguments, closure_loss,
                                            records_variables)

class SGD(Optimizer, torch.optim.SGD):
    """Stochastic gradient descent: ``torch.optim.SGD`` with PopTorch's extra arguments.

    A training model runs torch's update rule on the device. ``lr`` defaults to 0.01, as for
    popsim's default optimizer.

    The hyper-parameters passed to the constructor are variable
    (:meth:`popsim.Executor.setOptimizer` may change them without recompiling), the
    others constants of the compiled program; see ``variable_attrs``
    (:class:`popsim.optim.VariableAttributes`).

    Example:
        >>> class SquaredNorm(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.linear = torch.nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return popsim.identity_loss(self.linear(x).pow(2).sum(), reduction="none")
        >>> model = SquaredNorm()
        >>> optimizer = popsim.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, loss_scaling=128.0)
        >>> trainer = popsim.trainingModel(model, optimizer=optimizer)
        >>> x = torch.ones(4, 4)
        >>> first = trainer(x)
        >>> for group in optimizer.param_groups:
        ...     group["lr"] = 0.001
        >>> trainer.setOptimizer(optimizer)  # a new learning rate, without recompiling
        >>> bool(trainer(x) < first)
        True
    """

    @records_variables
    def __init__(self, params: Params, lr: float = 0.01, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, *,
                 maximize: bool = False, loss_scaling: Optional[float] = None,
                 velocity_scaling: Optional[float] = None,
                 use_combined_accum: Optional[bool] = None, max_grad_norm: Optional[float] = None,
                 accum_type: Optional[torch.dtype] = None,
                 velocity_accum_type: Optional[torch.dtype] = None,
                 foreach: Optional[bool] = None, differentiable: bool = False) -> None:
        """Makes an SGD optimizer of ``params``.

        Args:
            params: The parameters to optimize, or dicts that define parameter groups (as for
                torch.optim).
            lr: The learning rate.
            momentum: The momentum factor; 0 keeps no momentum buffer.
            dampening: The dampening of the momentum.
            weight_decay: The L2 penalty, added to the gradient.
            nesterov: Uses Nesterov momentum.
            maximize: Maximizes the objective (steps along the gradient) instead of
                minimizing it.
            loss_scaling: The factor the loss's gradient is scaled by, divided out by the step
                (see the module's notes). Passed, it is variable; None: 1, as a constant.
            velocity_scaling: Accepted for PopTorch compatibility (PopTorch's combined SGD variant
                uses it); popsim does not use it.
            use_combined_accum: Accepted for PopTorch compatibility (an IPU memory layout choice);
                popsim does not use it.
            max_grad_norm: Clips each step's gradients, after accumulation, to this global
                2-norm. None or inf: no clipping. A constant of the compiled program.
            accum_type: The dtype of the gradient accumulators on the device:
                ``torch.float32`` (None, the default) or ``torch.float16``.
            velocity_accum_type: The dtype of the momentum buffer on the device: ``torch.float32``
                (None, the default) or ``torch.float16``.
            foreach: torch's choice of its eager step's implementation, passed to it; the
                device's step is popsim's.
            differentiable: torch's, passed to it (autograd through an eager step); the
                device's step is popsim's.

        Raises:
            OptionError: when a state dtype is neither ``torch.float32`` nor ``torch.float16``,
                ``max_grad_norm`` is not a positive number, or ``loss_scaling`` is not
                positive.
        """
        check_popsim_arguments("SGD", {"accum_type": accum_type, "max_grad_norm": max_grad_norm,
                                        "loss_scaling": loss_scaling,
                                        "velocity_accum_type": velocity_accum_type})
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening,
                         weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                         foreach=foreach, differentiable=differentiable)  # type: ignore[call-arg]
        self.defaults["max_grad_norm"] = max_grad_norm  # as the setter stores it


class Adam(Optimizer, torch.optim.Adam):
    """Adam: ``torch.optim.Adam`` with PopTorch's extra arguments.

    A training model runs torch's update rule on the device.

    The hyper-parameters passed to the constructor are variable
    (:meth:`popsim.Executor.setOptimizer` may change them without recompiling), the
    others constants of the compiled program; see ``variable_attrs``
    (:class:`popsim.optim.VariableAttributes`).
    """

    @records_variables
    def __init__(self, params: Params, lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 loss_scaling: Optional[float] = None, accum_type: Optional[torch.dtype] = None,
                 first_order_momentum_accum_type: Optional[torch.dtype] = None,
                 second_order_momentum_accum_type: Optional[torch.dtype] = None,
                 max_grad_norm: Optional[float] = None, foreach: Optional[bool] = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool = False) -> None:
        """Makes an Adam optimizer of ``params``.

        Args:
            params: The parameters to optimize, or dicts that define parameter groups (as for
                torch.optim).
            lr: The learning rate.
            betas: The decay rates of the running averages of the gradient and of its square.
            eps: Added to the denominator for numerical stability.
            weight_decay: The L2 penalty, added to the gradient.
            amsgrad: Uses the AMSGrad variant (the running maximum of the second moment).
            maximize: Maximizes the objective (steps along the gradient) instead of
                minimizing it.
            loss_scaling: The factor the loss's gradient is scaled by, divided out by the step
                (see the module's notes). Passed, it is variable; None: 1, as a constant.
            accum_type: The dtype of the gradient accumulators on the device:
                ``torch.float32`` (None, the default) or ``torch.float16``.
            first_order_momentum_accum_type: The dtype of the first moment ``exp_avg`` on the
                device: ``torch.float32`` (None, the default) or ``torch.float16``.
            second_order_momentum_accum_type: The dtype of the second moment ``exp_avg_sq``
                (and ``max_exp_avg_sq``) on the device: ``torch.float32`` (None, the default)
                or ``torch.float16``.
            max_grad_norm: Clips each step's gradients, after accumulation, to this global
                2-norm. None or inf: no clipping. A constant of the compiled program.
            foreach: torch's choice of its eager step's implementation, passed to it; the
                device's step is popsim's (so are ``capturable``, ``differentiable`` and
                ``fused``).
            capturable: torch's, passed to it.
            differentiable: torch's, passed to it.
            fused: torch's, passed to it.

        Raises:
            OptionError: when a state dtype is neither ``torch.float32`` nor ``torch.float16``,
                ``max_grad_norm`` is not a positive number, or ``loss_scaling`` is not
                positive.
        """
        check_popsim_arguments("Adam", {
            "accum_type": accum_type, "max_grad_norm": max_grad_norm, "loss_scaling": loss_scaling,
            "first_order_momentum_accum_type": first_order_momentum_accum_type,
            "second_order_momentum_accum_type": second_order_momentum_accum_type})
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable,
                         fused=fused)  # type: ignore[call-arg]
        self.defaults["max_grad_norm"] = max_grad_norm  # as the setter stores it


class AdamW(Optimizer, torch.optim.AdamW):
    """AdamW: ``torch.optim.AdamW`` with PopTorch's extra arguments and ``bias_correction``.

    A training model runs torch's update rule on the device. ``bias_correction=False`` leaves
    the moments uncorrected (``p -= lr * m / (sqrt(v) + eps)`` after the decay), on the device
    and in :meth:`step` alike.

    The hyper-parameters passed to the constructor are variable
    (:meth:`popsim.Executor.setOptimizer` may change them without recompiling), the
    others constants of the compiled program; see ``variable_attrs``
    (:class:`popsim.optim.VariableAttributes`).
    """

    @records_variables
    def __init__(self, params: Params, lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 loss_scaling: Optional[float] = None, accum_type: Optional[torch.dtype] = None,
                 first_order_momentum_accum_type: Optional[torch.dtype] = None,
                 second_order_momentum_accum_type: Optional[torch.dtype] = None,
                 max_grad_norm: Optional[float] = None, bias_correction: bool = True,
                 foreach: Optional[bool] = None, capturable: bool = False) -> None:
        """Makes an AdamW optimizer of ``params``.

        Args:
            params: The parameters to optimize, or dicts that define parameter groups (as for
                torch.optim).
            lr: The learning rate.
            betas: The decay rates of the running averages of the gradient and of its square.
            eps: Added to the denominator for numerical stability.
            weight_decay: The decoupled weight decay: each step multiplies the parameters by
                ``1 - lr * weight_decay``.
            amsgrad: Uses the AMSGrad variant (the running maximum of the second moment).
            maximize: Maximizes the objective (steps along the gradient) instead of
                minimizing it.
            loss_scaling: The factor the loss's gradient is scaled by, divided out by the step
                (see the module's notes). Passed, it is variable; None: 1, as a constant.
            accum_type: The dtype of the gradient accumulators on the device:
                ``torch.float32`` (None, the default) or ``torch.float16``.
            first_order_momentum_accum_type: The dtype of the first moment ``exp_avg`` on the
                device: ``torch.float32`` (None, the default) or ``torch.float16``.
            second_order_momentum_accum_type: The dtype of the second moment ``exp_avg_sq``
                (and ``max_exp_avg_sq``) on the device: ``torch.float32`` (None, the default)
                or ``torch.float16``.
            max_grad_norm: Clips each step's gradients, after accumulation, to this global
                2-norm. None or inf: no clipping. A constant of the compiled program.
            bias_correction: Corrects the moments' bias towards zero in the first steps, as torch
                does; False does not. A constant of the compiled program.
            foreach: torch's choice of its eager step's implementation, kept in the parameter
                groups as torch keeps it; the device's step is popsim's.
            capturable: torch's, kept as it keeps it.

        Raises:
            OptionError: when a state dtype is neither ``torch.float32`` nor ``torch.float16``,
                ``max_grad_norm`` is not a positive number, ``loss_scaling`` is not
                positive, or ``bias_correction`` is not a bool.
        """
        check_popsim_arguments("AdamW", {
            "accum_type": accum_type, "max_grad_norm": max_grad_norm, "loss_scaling": loss_scaling,
            "first_order_momentum_accum_type": first_order_momentum_accum_type,
            "second_order_momentum_accum_type": second_order_momentum_accum_type})
        if not isinstance(bias_correction, bool):
            raise OptionError(f"AdamW(bias_correction={bias_correction!r}): expected True or "
                              "False.", option="AdamW.bias_correction")
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable)  # type: ignore[call-arg]
        self.defaults["max_grad_norm"] = max_grad_norm  # as the setter stores it
        self.defaults["bias_correction"] = bias_correction
        for group in self.param_groups:
            group.setdefault("bias_correction", bias_correction)

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], float]] = None) -> Optional[float]:
        """Performs one optimization step on the host.

        With bias correction (the default) this is ``torch.optim.AdamW.step``; without it,
        PopTorch's update, which the device computes too: the parameters decay
        (``p *= 1 - lr * weight_decay``), then ``p -= lr * m / (sqrt(v) + eps)`` with ``v`` the
        running maximum of the second moment under ``amsgrad``. Parameters without a gradient
        are left as they are.

        Args:
            closure: A function that recomputes the model's loss and returns it; it runs with
                gradients enabled. None: no loss.

        Returns:
            The loss ``closure`` returned, or None without a closure.

        Raises:
            OptionError: when some parameter groups have ``bias_correction`` and others not
                (only the device steps such an optimizer).
        """
        if all(group.get("bias_correction", True) for group in self.param_groups):
            return super().step(closure)
        loss = closure_loss(closure)
        for group in self.param_groups:
            if group.get("bias_correction", True):
                raise OptionError("AdamW: parameter groups that differ in bias_correction "
                                  "step on the device only.", option="AdamW.bias_correction")
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group.get("maximize", False) else p.grad
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                p.mul_(1 - group["lr"] * group["weight_decay"])
                state["exp_avg"].mul_(beta1).add_(grad, alpha=1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                second = state["exp_avg_sq"]
                if group["amsgrad"]:
                    torch.maximum(state["max_exp_avg_sq"], second, out=state["max_exp_avg_sq"])
                    second = state["max_exp_avg_sq"]
                p.addcdiv_(state["exp_avg"], second.sqrt().add_(group["eps"]), value=-group["lr"])
        return loss


class RMSprop(Optimizer, torch.optim.RMSprop):
    """RMSprop: ``torch.optim.RMSprop`` with PopTorch's extra arguments and ``use_tf_variant``.

    A training model runs torch's update rule on the device. ``use_tf_variant=True`` computes
    TensorFlow's RMSprop instead, as PopART does: the square average starts at ones, ``eps`` is
    added inside the square root, and the momentum buffer accumulates
    ``lr * g / sqrt(v + eps)`` (``p -= buffer``); on the device and in :meth:`step` alike.

    The hyper-parameters passed to the constructor are variable
    (:meth:`popsim.Executor.setOptimizer` may change them without recompiling), the
    others constants of the compiled program; see ``variable_attrs``
    (:class:`popsim.optim.VariableAttributes`).
    """

    @records_variables
    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, *, maximize: bool = False,
                 loss_scaling: Optional[float] = None, accum_type: Optional[torch.dtype] = None,
                 first_order_momentum_accum_type: Optional[torch.dtype] = None,
                 second_order_momentum_accum_type: Optional[torch.dtype] = None,
                 max_grad_norm: Optional[float] = None, use_tf_variant: bool = False,
                 foreach: Optional[bool] = None, differentiable: bool = False) -> None:
        """Makes an RMSprop optimizer of ``params``.

        Args:
            params: The parameters to optimize, or dicts that define parameter groups (as for
                torch.optim).
            lr: The learning rate.
            alpha: The smoothing constant of the square average.
            eps: Added to the denominator for numerical stability.
            weight_decay: The L2 penalty, added to the gradient.
            momentum: The momentum factor; 0 keeps no momentum buffer.
            centered: Normalizes by the variance of the gradient (the square average minus the
                square of the gradient's average) instead of the square average.
            maximize: Maximizes the objective (steps along the gradient) instead of
                minimizing it.
            loss_scaling: The factor the loss's gradient is scaled by, divided out by the step
                (see the module's notes). Passed, it is variable; None: 1, as a constant.
            accum_type: The dtype of the gradient accumulators on the device:
                ``torch.float32`` (None, the default) or ``torch.float16``.
            first_order_momentum_accum_type: The dtype of the momentum buffer and of the centred
                mean on the device: ``torch.float32`` (None, the default) or ``torch.float16``.
            second_order_momentum_accum_type: The dtype of the square average on the device:
                ``torch.float32`` (None, the default) or ``torch.float16``.
            max_grad_norm: Clips each step's gradients, after accumulation, to this global
                2-norm. None or inf: no clipping. A constant of the compiled program.
            use_tf_variant: Computes TensorFlow's RMSprop (see :class:`popsim.optim.RMSprop`)
                instead of torch's. A constant of the compiled program.
            foreach: torch's choice of its eager step's implementation, passed to it; the
                device's step is popsim's.
            differentiable: torch's, passed to it.

        Raises:
            OptionError: when a state dtype is neither ``torch.float32`` nor ``torch.float16``,
                ``max_grad_norm`` is not a positive number, ``loss_scaling`` is not
                positive, or ``use_tf_variant`` is not a bool.
        """
        check_popsim_arguments("RMSprop", {
            "accum_type": accum_type, "max_grad_norm": max_grad_norm, "loss_scaling": loss_scaling,
            "first_order_momentum_accum_type": first_order_momentum_accum_type,
            "second_order_momentum_accum_type": second_order_momentum_accum_type})
        if not isinstance(use_tf_variant, bool):
            raise OptionError(f"RMSprop(use_tf_variant={use_tf_variant!r}): expected True or "
                              "False.", option="RMSprop.use_tf_variant")
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                         momentum=momentum, centered=centered, maximize=maximize,
                         foreach=foreach, differentiable=differentiable)  # type: ignore[call-arg]
        self.defaults["max_grad_norm"] = max_grad_norm  # as the setter stores it
        self.defaults["use_tf_variant"] = use_tf_variant
        for group in self.param_groups:
            group.setdefault("use_tf_variant", use_tf_variant)

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], float]] = None) -> Optional[float]:
        """Performs one optimization step on the host.

        Without ``use_tf_variant`` (the default) this is ``torch.optim.RMSprop.step``; with it,
        TensorFlow's RMSprop as the device computes it (see :class:`popsim.optim.RMSprop`).
        Parameters without a gradient are left as they are.

        Args:
            closure: A function that recomputes the model's loss and returns it; it runs with
                gradients enabled. None: no loss.

        Returns:
            The loss ``closure`` returned, or None without a closure.

        Raises:
            OptionError: when some parameter groups have ``use_tf_variant`` and others not
                (only the device steps such an optimizer).
        """
        if not any(group.get("use_tf_variant", False) for group in self.param_groups):
            return super().step(closure)
        loss = closure_loss(closure)
        for group in self.param_groups:
            if not group.get("use_tf_variant", False):
                raise OptionError("RMSprop: parameter groups that differ in use_tf_variant "
                                  "step on the device only.", option="RMSprop.use_tf_variant")
            alpha, lr, momentum = group["alpha"], group["lr"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group.get("maximize", False) else p.grad
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["square_avg"] = torch.ones_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = torch.zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = torch.zeros_like(p)
                state["step"] += 1
                state["square_avg"].mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                second = state["square_avg"]
                if group["centered"]:
                    state["grad_avg"].mul_(alpha).add_(grad, alpha=1 - alpha)
                    second = second.addcmul(state["grad_avg"], state["grad_avg"], value=-1)
                update = grad / (second + group["eps"]).sqrt()
                if momentum > 0:
                    state["momentum_buffer"].mul_(momentum).add_(update, alpha=lr)
                    p.sub_(state["momentum_buffer"])
                else:
                    p.add_(update, alpha=-lr)
        return loss


class LAMB(Optimizer, torch.optim.Optimizer):
    """LAMB, layer-wise adaptive moments (You et al., 2019), as PopTorch's ``optim.LAMB``.

    Adam's moments make an update ``u = m_hat / (sqrt(v_hat) + eps) + weight_decay * p``
    (``m_hat`` and ``v_hat`` bias-corrected when ``bias_correction``), which each parameter
    takes scaled by its trust ratio ``trust = min(norm(p), max_weight_norm) / norm(u)`` (1 if
    ``norm(p)`` or ``norm(u)`` is 0, so ``max_weight_norm=0`` stops training, as in PopTorch):
    ``p -= lr * trust * u``. ``lr``, ``betas``, ``eps``, ``weight_decay`` and
    ``max_weight_norm`` may differ per parameter group. A training model runs this update on
    the device; :meth:`step` computes the same on the host.

    The hyper-parameters passed to the constructor are variable
    (:meth:`popsim.Executor.setOptimizer` may change them without recompiling), the
    others constants of the compiled program; see ``variable_attrs``
    (:class:`popsim.optim.VariableAttributes`).
    """

    @records_variables
    def __init__(self, params: Params, lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, bias_correction: bool = True,
                 loss_scaling: Optional[float] = None, max_weight_norm: Optional[float] = None,
                 accum_type: Optional[torch.dtype] = None,
                 first_order_momentum_accum_type: Optional[torch.dtype] = None,
                 second_order_momentum_accum_type: Optional[torch.dtype] = None,
                 max_grad_norm: Optional[float] = None) -> None:
        """Makes a LAMB optimizer of ``params``.

        Args:
            params: The parameters to optimize, or dicts that define parameter groups (as for
                torch.optim).
            lr: The learning rate (0 or more).
            betas: The decay rates of the running averages of the gradient and of its square,
                each in [0, 1).
            eps: Added to the denominator for numerical stability (0 or more).
            weight_decay: The weight decay added to the update (0 or more).
            bias_correction: Corrects the moments' bias towards zero in the first steps; False
                does not (as :class:`popsim.optim.LAMBNoBias`).
            loss_scaling: The factor the loss's gradient is scaled by, divided out by the step
                (see the module's notes). Passed, it is variable; None: 1, as a constant.
            max_weight_norm: The cap on a parameter's norm in its trust ratio (0 or more; 0
                makes every update 0).
                None: 65500, float16's largest value, as in PopTorch.
            accum_type: The dtype of the gradient accumulators on the device:
                ``torch.float32`` (None, the default) or ``torch.float16``.
            first_order_momentum_accum_type: The dtype of the first moment ``exp_avg`` on the
                device: ``torch.float32`` (None, the default) or ``torch.float16``.
            second_order_momentum_accum_type: The dtype of the second moment ``exp_avg_sq``
                on the device: ``torch.float32`` (None, the default) or ``torch.float16``.
            max_grad_norm: Clips each step's gradients, after accumulation, to this global
                2-norm. None or inf: no clipping. A constant of the compiled program.

        Raises:
            OptionError: when a state dtype is neither ``torch.float32`` nor ``torch.float16``,
                ``max_grad_norm`` is not a positive number, ``loss_scaling`` is not
                positive, or ``lr``, ``eps``, ``weight_decay``, ``max_weight_norm`` or
                ``betas`` is out of its range.
        """
        name = type(self).__name__
        check_popsim_arguments(name, {
            "accum_type": accum_type, "max_grad_norm": max_grad_norm, "loss_scaling": loss_scaling,
            "first_order_momentum_accum_type": first_order_momentum_accum_type,
            "second_order_momentum_accum_type": second_order_momentum_accum_type})
        if max_weight_norm is None:
            max_weight_norm = 65500.0
        for what, value, valid in (("lr", lr, lr >= 0.0), ("eps", eps, eps >= 0.0),
                                   ("weight_decay", weight_decay, weight_decay >= 0.0),
                                   ("max_weight_norm", max_weight_norm, max_weight_norm >= 0.0),
                                   ("betas", betas, all(0.0 <= b < 1.0 for b in betas))):
            if not valid:
                raise OptionError(f"{name}({what}={value!r}): expected lr, eps and "
                                  "weight_decay >= 0, max_weight_norm >= 0 and betas in [0, 1).",
                                  option=f"{name}.{what}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, max_weight_norm=max_weight_norm,
                                      bias_correction=bool(bias_correction)))
        self.defaults["max_grad_norm"] = max_grad_norm  # as the setter stores it
        self.bias_correction = bool(bias_correction)

    @property
    def max_weight_norm(self) -> float:
        """The default parameter group's ``max_weight_norm``.

        Setting it sets every group's, as PopTorch 3, which keeps one for the whole optimizer,
        reads ``optimizer.max_weight_norm``; :meth:`popsim.Executor.setOptimizer` then passes
        it to the device."""
        return float(self.defaults["max_weight_norm"])

    @max_weight_norm.setter
    def max_weight_norm(self, value: float) -> None:
        name = type(self).__name__
        if not isinstance(value, (int, float)) or value < 0.0:
            raise OptionError(f"{name}.max_weight_norm = {value!r}: expected a number >= 0.",
                              option=f"{name}.max_weight_norm")
        self.defaults["max_weight_norm"] = value
        for group in self.param_groups:
            group["max_weight_norm"] = value

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], float]] = None) -> Optional[float]:
        """Performs one LAMB step on the host, as the device computes it.

        Parameters without a gradient are left as they are.

        Args:
            closure: A function that recomputes the model's loss and returns it; it runs with
                gradients enabled. None: no loss.

        Returns:
            The loss ``closure`` returned, or None without a closure.
        """
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                steps = float(state["step"])
                corrected = group["bias_correction"]
                bc1 = 1 - beta1 ** steps if corrected else 1.0
                bc2 = 1 - beta2 ** steps if corrected else 1.0
                grad, exp_avg, exp_avg_sq = p.grad, state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (exp_avg_sq.sqrt() / math.sqrt(bc2)).add_(group["eps"])
                update = exp_avg / bc1 / denom + group["weight_decay"] * p
                weight_norm = torch.linalg.vector_norm(p)
                update_norm = torch.linalg.vector_norm(update)
                trust = (1.0 if weight_norm == 0 or update_norm == 0
                         else float(weight_norm.clamp(max=group["max_weight_norm"]) / update_norm))
                p.add_(update, alpha=-group["lr"] * trust)
        return loss


class LAMBNoBias(LAMB):
    """LAMB without bias correction: :class:`popsim.optim.LAMB`, ``bias_correction=False``."""

    @records_variables
    def __init__(self, params: Params, lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, bias_correction: bool = False,
                 **kwargs: Optional[Union[float, torch.dtype]]) -> None:
        """Makes a LAMB optimizer of ``params`` without bias correction.

        Args:
            params: The parameters to optimize, or dicts that define parameter groups (as for
                torch.optim).
            lr: The learning rate (0 or more).
            betas: The decay rates of the running averages of the gradient and of its square,
                each in [0, 1).
            eps: Added to the denominator for numerical stability (0 or more).
            weight_decay: The weight decay added to the update (0 or more).
            bias_correction: False (the default) leaves the moments uncorrected; True makes this
                a plain :class:`popsim.optim.LAMB`.
            **kwargs: :class:`popsim.optim.LAMB`'s other keyword arguments (``loss_scaling``,
                ``max_weight_norm``, the state dtypes and ``max_grad_norm``).

        Raises:
            OptionError: when an argument is out of its range, as for :class:`popsim.optim.LAMB`.
        """
        super().__init__(params, lr, betas, eps, weight_decay, bias_correction, **kwargs)


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "LAMB", "LAMBNoBias",
           "VariableAttributes"]
