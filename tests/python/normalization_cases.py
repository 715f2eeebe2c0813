"""The test table of the normalisations beyond batch and layer norm with
affine weights: weight_norm (nn.utils.weight_norm), group_norm, instance_norm (with and without affine, and with
running statistics in eval), layer_norm without affine and batch norm on 2-D,
3-D and 5-D inputs (running statistics). test_ops.py runs each case forward,
test_gradients.py backward and test_nonfinite.py with NaN/Inf, against eager
PyTorch. Every group holds 3 elements or more: the normalised values of two
are +-1 whatever the input, so their gradient is zero and what both compute
is rounding noise."""

import torch
import torch.nn as nn


def _module(make, shape_of):
    """make() with random affine weights and running statistics, on a random
    input of shape_of(rng)."""
    def case(rng):
        module = make()
        with torch.no_grad():
            for name, tensor in list(module.named_parameters()) + list(module.named_buffers()):
                if tensor.is_floating_point():
                    tensor.copy_(torch.rand_like(tensor) + 0.5 if "var" in name or name == "weight"
                                 else torch.randn_like(tensor) * 0.5)
        return module, [torch.randn(*shape_of(rng)) * 2 + 0.5]
    return case


def _images(channels):
    return lambda rng: [rng.randint(1, 3), channels, rng.randint(1, 4), rng.randint(3, 4)]


NORMALIZATIONS = {
    # nn.utils.weight_norm's reparametrisation of a layer's weight (aten::_weight_norm).
    "weight_norm_linear": _module(lambda: nn.utils.weight_norm(nn.Linear(4, 3)),
                                  lambda rng: [rng.randint(1, 4), 4]),
    "weight_norm_linear_dim1": _module(lambda: nn.utils.weight_norm(nn.Linear(4, 3), dim=1),
                                       lambda rng: [rng.randint(1, 4), 4]),
    "weight_norm_conv_whole": _module(lambda: nn.utils.weight_norm(nn.Conv2d(2, 3, 2), dim=None),
                                      lambda rng: [rng.randint(1, 3), 2, 3, 4]),
    "group_norm": _module(lambda: nn.GroupNorm(2, 6), _images(6)),
    "group_norm_no_affine": _module(lambda: nn.GroupNorm(3, 6, affine=False), _images(6)),
    "group_norm_1d": _module(lambda: nn.GroupNorm(4, 4), lambda rng: [2, 4, rng.randint(3, 6)]),
    "instance_norm": _module(lambda: nn.InstanceNorm2d(3, affine=True), _images(3)),
    "instance_norm_plain": _module(lambda: nn.InstanceNorm1d(3), lambda rng: [2, 3, 5]),
    "instance_norm_running_eval": _module(
        lambda: nn.InstanceNorm2d(3, track_running_stats=True), _images(3)),
    "layer_norm_no_affine": _module(lambda: nn.LayerNorm([3, 4], elementwise_affine=False),
                                    lambda rng: [rng.randint(1, 3), 3, 4]),
    "batch_norm_1d_2d_input": _module(lambda: nn.BatchNorm1d(4), lambda rng: [5, 4]),
    "batch_norm_1d_3d_input": _module(lambda: nn.BatchNorm1d(4), lambda rng: [3, 4, 5]),
    "batch_norm_3d": _module(lambda: nn.BatchNorm3d(2), lambda rng: [2, 2, 2, 3, 2]),
}
