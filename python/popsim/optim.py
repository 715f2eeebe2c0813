"""popsim.optim: PyTorch's optimizers, run on the simulated IPU.

SGD, Adam, AdamW and RMSprop are torch.optim's own classes with PopTorch's
extra arguments. A training model runs their update rules on the device
with PyTorch's semantics and defaults (popsim/optim.py documents the extras);
plain torch.optim instances of these four classes are accepted too.

PopTorch arguments:
- loss_scaling, velocity_scaling: accepted. popsim computes in float32,
  where scaling the loss and unscaling the gradients changes nothing, so
  they do not change results.
- accum_type, first_order_momentum_accum_type,
  second_order_momentum_accum_type: torch.float32 only (popsim's state is
  float32).
- use_combined_accum: accepted (an IPU memory layout choice).
- max_grad_norm: clips each step's gradients (after accumulation) by their
  global 2-norm, as torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
  before optimizer.step(); None or inf (the default) does not clip. Kept in
  optimizer.defaults["max_grad_norm"].
"""

import math

import torch

from popsim.errors import OptionError

_FLOAT_ONLY = ("accum_type", "first_order_momentum_accum_type", "second_order_momentum_accum_type")


def _check_popsim_arguments(name, extras):
    for key in _FLOAT_ONLY:
        if extras.get(key) not in (None, torch.float32):
            raise OptionError(f"{name}({key}={extras[key]}): popsim keeps optimizer state in "
                              "torch.float32 only.")
    norm = extras.get("max_grad_norm")
    if norm is not None and (isinstance(norm, bool) or not isinstance(norm, (int, float))
                             or not norm > 0):
        raise OptionError(f"{name}(max_grad_norm={norm!r}): max_grad_norm must be a positive "
                          "number (or None or inf for no clipping).")
    scaling = extras.get("loss_scaling")
    if scaling is not None and not scaling > 0:
        raise OptionError(f"{name}(loss_scaling={scaling}): loss_scaling must be positive.")


class SGD(torch.optim.SGD):
    """torch.optim.SGD (lr defaults to 0.01, popsim's default optimizer)."""

    def __init__(self, params, lr=0.01, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, loss_scaling=None, velocity_scaling=None,
                 use_combined_accum=None, max_grad_norm=None, accum_type=None):
        _check_popsim_arguments("SGD", {"accum_type": accum_type, "max_grad_norm": max_grad_norm,
                                        "loss_scaling": loss_scaling})
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening,
                         weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)
        self.defaults["max_grad_norm"] = max_grad_norm


class Adam(torch.optim.Adam):
    """torch.optim.Adam."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, maximize=False, loss_scaling=None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm=None):
        _check_popsim_arguments("Adam", {
            "accum_type": accum_type, "max_grad_norm": max_grad_norm, "loss_scaling": loss_scaling,
            "first_order_momentum_accum_type": first_order_momentum_accum_type,
            "second_order_momentum_accum_type": second_order_momentum_accum_type})
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize)
        self.defaults["max_grad_norm"] = max_grad_norm


class AdamW(torch.optim.AdamW):
    """torch.optim.AdamW."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, loss_scaling=None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm=None):
        _check_popsim_arguments("AdamW", {
            "accum_type": accum_type, "max_grad_norm": max_grad_norm, "loss_scaling": loss_scaling,
            "first_order_momentum_accum_type": first_order_momentum_accum_type,
            "second_order_momentum_accum_type": second_order_momentum_accum_type})
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize)
        self.defaults["max_grad_norm"] = max_grad_norm


class RMSprop(torch.optim.RMSprop):
    """torch.optim.RMSprop."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, *, maximize=False, loss_scaling=None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm=None):
        _check_popsim_arguments("RMSprop", {
            "accum_type": accum_type, "max_grad_norm": max_grad_norm, "loss_scaling": loss_scaling,
            "first_order_momentum_accum_type": first_order_momentum_accum_type,
            "second_order_momentum_accum_type": second_order_momentum_accum_type})
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                         momentum=momentum, centered=centered, maximize=maximize)
        self.defaults["max_grad_norm"] = max_grad_norm


__all__ = ["SGD", "Adam", "AdamW", "RMSprop"]
