"""The test table of padding (frontend/lowerings/padding.cpp: F.pad in its
four modes, negative constant widths cropping, the padding modules) and of
1-D and 3-D pooling (pooling.cpp, through the 2-D pooling ops: max and
average, strides, padding, dilation, ceil_mode, count_include_pad),
F.local_response_norm, which is built from both, and F.grid_sample with
F.affine_grid on images and volumes (grid_sample.cpp). test_ops.py runs each case
forward, test_gradients.py backward and test_nonfinite.py with NaN/Inf,
against eager PyTorch."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from pointwise_cases import Elementwise


def _sizes(rng, spatial, smallest=1, batched=False):
    """[N, C, *spatial], or (30% of the time unless `batched`) unbatched [C, *spatial]."""
    batch = [rng.randint(1, 2)] if batched or rng.random() < 0.7 else []
    return batch + [rng.randint(1, 3)] + [rng.randint(smallest, 6) for _ in range(spatial)]


def _pad(mode):
    """F.pad over 1 to 3 trailing dims, widths within what the mode allows."""
    def case(rng):
        spatial = rng.randint(1, 3)
        # (circular padding pads every spatial dim of a batched tensor)
        shape = _sizes(rng, spatial, smallest=3, batched=mode == "circular")
        pads = []
        for dim in range(spatial):
            size = shape[-1 - dim]
            limit = size - 1 if mode == "reflect" else size
            low = -1 if mode == "constant" else 0
            pads += [rng.randint(low, limit), rng.randint(low, limit)]
        value = {"value": 1.5} if mode == "constant" else {}
        return Elementwise(lambda t: F.pad(t, pads, mode, **value)), [torch.randn(*shape)]
    return case


def _pad_sequence(rng):
    """torch.nn.utils.rnn.pad_sequence of 1 to 3 sequences of random lengths."""
    rest = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
    lengths = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
    batch_first, value = rng.random() < 0.5, rng.choice([0.0, -1.5])
    sequences = [torch.randn(length, *rest) for length in lengths]
    return PadSequence(batch_first, value), sequences


class PadSequence(nn.Module):
    def __init__(self, batch_first, value):
        super().__init__()
        self.batch_first, self.value = batch_first, value

    def forward(self, *sequences):
        return nn.utils.rnn.pad_sequence(list(sequences), batch_first=self.batch_first,
                                         padding_value=self.value)


def _module(make, spatial, smallest=1, batched=False, whole=False):
    """make(rng) of a random input (whole numbers: ties)."""
    def case(rng):
        x = torch.randn(*_sizes(rng, spatial, smallest, batched))
        return make(rng), [x.mul(1.5).round() if whole else x]
    return case


def _pool(spatial, maximum, whole=False):
    """nn.MaxPoolNd / AvgPoolNd with random windows."""
    def make(rng):
        kernel = [rng.randint(1, 3) for _ in range(spatial)]
        stride = rng.choice([None, 1, 2])
        padding = [rng.randint(0, k // 2) for k in kernel]
        ceil = rng.random() < 0.5
        if maximum:
            dilation = rng.choice([1, 2])
            cls = nn.MaxPool1d if spatial == 1 else nn.MaxPool3d
            return cls(kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil)
        cls = nn.AvgPool1d if spatial == 1 else nn.AvgPool3d
        return cls(kernel, stride=stride, padding=padding, ceil_mode=ceil,
                   count_include_pad=rng.random() < 0.5)
    return _module(make, spatial, smallest=5, whole=whole)


WINDOWS = {
    "pad_constant": _pad("constant"),
    "pad_reflect": _pad("reflect"),
    "pad_replicate": _pad("replicate"),
    "pad_circular": _pad("circular"),
    "reflection_pad2d_module": _module(lambda rng: nn.ReflectionPad2d((2, 0, 1, 1)), 2, 3),
    "replication_pad1d_module": _module(lambda rng: nn.ReplicationPad1d(2), 1),
    "pad_sequence": _pad_sequence,
    "zero_pad2d_module": _module(lambda rng: nn.ZeroPad2d((1, -1, 0, 2)), 2, 2),
    "max_pool1d": _pool(1, True),
    "avg_pool1d": _pool(1, False),
    "max_pool3d": _pool(3, True),
    "avg_pool3d": _pool(3, False),
    "max_pool3d_ties": _pool(3, True, whole=True),
    "avg_pool3d_divisor": _module(lambda rng: (lambda kernel: nn.AvgPool3d(
        kernel, stride=rng.choice([None, 1, 2]), padding=[rng.randint(0, k // 2) for k in kernel],
        ceil_mode=rng.random() < 0.5, divisor_override=rng.randint(1, 5)))(
            [rng.randint(1, 3) for _ in range(3)]), 3, smallest=5),
    "local_response_norm_3d": _module(lambda rng: nn.LocalResponseNorm(3, alpha=0.1), 1,
                                      batched=True),
    "local_response_norm_4d": _module(lambda rng: nn.LocalResponseNorm(2, beta=0.5, k=2.0), 2,
                                      batched=True),
}


def _interpolate(mode, spatial, **kwargs):
    """F.interpolate with a random size or scale factor (up or down)."""
    def case(rng):
        shape = [rng.randint(1, 2), rng.randint(1, 3)] + [rng.randint(2, 6) for _ in range(spatial)]
        if rng.random() < 0.5:
            size = [rng.randint(1, 9) for _ in range(spatial)]
            args = {"size": size}
        else:
            args = {"scale_factor": rng.choice([0.5, 1.5, 1.7, 2.0, 3.0])}
        return (Elementwise(lambda t: F.interpolate(t, mode=mode, **args, **kwargs)),
                [torch.randn(*shape)])
    return case


def _interpolate_antialiased(mode, **kwargs):
    """F.interpolate with antialias=True: sizes or scale factors shrinking
    by up to 5 (where the filter widens) or growing."""
    def case(rng):
        shape = [rng.randint(1, 2), rng.randint(1, 3)] + [rng.randint(5, 16) for _ in range(2)]
        if rng.random() < 0.5:
            args = {"size": [rng.randint(1, 9) for _ in range(2)]}
        else:
            args = {"scale_factor": rng.choice([0.2, 0.3, 0.5, 0.7, 1.5, 2.0])}
        return (Elementwise(lambda t: F.interpolate(t, mode=mode, antialias=True, **args,
                                                    **kwargs)), [torch.randn(*shape)])
    return case


WINDOWS.update({
    "interpolate_bilinear_antialias": _interpolate_antialiased("bilinear"),
    "interpolate_bilinear_antialias_align_corners": _interpolate_antialiased(
        "bilinear", align_corners=True),
    "interpolate_bicubic_antialias": _interpolate_antialiased("bicubic"),
    "interpolate_bicubic_antialias_align_corners": _interpolate_antialiased(
        "bicubic", align_corners=True),
})
WINDOWS.update({
    "interpolate_nearest_1d": _interpolate("nearest", 1),
    "interpolate_nearest_2d": _interpolate("nearest", 2),
    "interpolate_nearest_3d": _interpolate("nearest", 3),
    "interpolate_nearest_exact_2d": _interpolate("nearest-exact", 2),
    "interpolate_linear_1d": _interpolate("linear", 1, align_corners=True),
    "interpolate_bilinear": _interpolate("bilinear", 2),
    "interpolate_bilinear_align_corners": _interpolate("bilinear", 2, align_corners=True),
    "interpolate_trilinear": _interpolate("trilinear", 3),
    "interpolate_bicubic": _interpolate("bicubic", 2),
    "interpolate_bicubic_align_corners": _interpolate("bicubic", 2, align_corners=True),
    "upsample_module": lambda rng: (nn.Upsample(scale_factor=2, mode="bilinear"),
                                    [torch.randn(1, 2, 3, 4)]),
    "lp_pool2d": lambda rng: (nn.LPPool2d(2, 2), [torch.randn(2, 3, 6, 5)]),
    "lp_pool1d": lambda rng: (nn.LPPool1d(4, 3, stride=2), [torch.randn(2, 3, 7)]),
})


def _max_pool_indices(spatial, values=False):
    """F.max_poolNd(return_indices=True): the indices (or values) PyTorch returns."""
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[spatial]

    def make(rng):
        kernel = [rng.randint(1, 3) for _ in range(spatial)]
        stride = rng.choice([None, 1, 2])
        padding = [rng.randint(0, k // 2) for k in kernel]
        dilation, ceil = rng.choice([1, 2]), rng.random() < 0.5
        pick = 0 if values else 1
        return Elementwise(lambda t: pool(t, kernel, stride, padding, dilation, ceil,
                                          return_indices=True)[pick])
    return _module(make, spatial, smallest=5, whole=True)


def _adaptive(spatial, maximum, part=0):
    """nn.Adaptive{Max,Avg}PoolNd to a random size (uneven bins), whole numbers."""
    cls = {(1, True): nn.AdaptiveMaxPool1d, (2, True): nn.AdaptiveMaxPool2d,
           (3, True): nn.AdaptiveMaxPool3d, (1, False): nn.AdaptiveAvgPool1d,
           (2, False): nn.AdaptiveAvgPool2d, (3, False): nn.AdaptiveAvgPool3d}[spatial, maximum]

    def make(rng):
        size = [rng.randint(1, 4) for _ in range(spatial)]
        if not maximum:
            return cls(size)
        pool = cls(size, return_indices=True)
        return Elementwise(lambda t: pool(t)[part])
    return _module(make, spatial, smallest=2, whole=True)


def _unpool(spatial):
    """max_unpoolNd of max_poolNd's values and indices, back to the input's size."""
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[spatial]
    unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[spatial]

    def make(rng):
        kernel, stride = rng.choice([(2, None), (3, 2), (2, 1)])

        def fn(t):
            y, i = pool(t, kernel, stride, return_indices=True)
            return unpool(y * 2, i, kernel, stride, output_size=t.shape[-spatial:])
        return Elementwise(fn)
    return _module(make, spatial, smallest=3)


WINDOWS.update({
    "max_pool1d_indices": _max_pool_indices(1),
    "max_pool2d_indices": _max_pool_indices(2),
    "max_pool3d_indices": _max_pool_indices(3),
    "max_pool2d_with_indices_values": _max_pool_indices(2, values=True),
    "max_pool3d_with_indices_values": _max_pool_indices(3, values=True),
    "adaptive_max_pool1d": _adaptive(1, True),
    "adaptive_max_pool2d": _adaptive(2, True),
    "adaptive_max_pool3d": _adaptive(3, True),
    "adaptive_max_pool1d_indices": _adaptive(1, True, part=1),
    "adaptive_max_pool2d_indices": _adaptive(2, True, part=1),
    "adaptive_max_pool3d_indices": _adaptive(3, True, part=1),
    "adaptive_avg_pool1d": _adaptive(1, False),
    "adaptive_avg_pool3d": _adaptive(3, False),
    "max_unpool1d": _unpool(1),
    "max_unpool2d": _unpool(2),
    "max_unpool3d": _unpool(3),
})
NOT_DIFFERENTIABLE = {"max_pool1d_indices", "max_pool2d_indices", "max_pool3d_indices",
                      "adaptive_max_pool1d_indices", "adaptive_max_pool2d_indices",
                      "adaptive_max_pool3d_indices"}


class GridSample(nn.Module):
    """The input sampled at a trained grid (an optical-flow warp), or at the
    grid of a trained affine map (a spatial transformer)."""

    def __init__(self, grid, mode, padding_mode, align_corners, affine_size=None):
        super().__init__()
        self.grid = nn.Parameter(grid)
        self.options = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        self.affine_size = affine_size

    def forward(self, x):
        grid = self.grid
        if self.affine_size is not None:
            grid = F.affine_grid(grid, self.affine_size, self.options["align_corners"])
        return F.grid_sample(x, grid, **self.options)


def _grid_sample(mode, padding_mode, align_corners, affine=False, volume=False):
    """Grids reaching beyond the border (where the padding decides) and
    images of one row or column too; `volume`: 5-D inputs (N, C, D, H, W)."""
    def case(rng):
        dims = 3 if volume else 2
        n, c = rng.randint(1, 2), rng.randint(1, 3)
        spatial = [rng.randint(1, 4 if volume else 5) for _ in range(dims)]
        out = [rng.randint(1, 3 if volume else 4) for _ in range(dims)]
        if affine:
            theta = torch.eye(dims, dims + 1) + 0.4 * torch.randn(n, dims, dims + 1)
            module = GridSample(theta, mode, padding_mode, align_corners, [n, c] + out)
        else:
            module = GridSample(torch.rand(n, *out, dims) * 3.0 - 1.5, mode, padding_mode,
                                align_corners)
        return module, [torch.randn(n, c, *spatial)]
    return case


WINDOWS.update({
    f"grid_sample_{mode}_{padding}" + ("_align_corners" if align else ""):
        _grid_sample(mode, padding, align)
    for mode in ("bilinear", "nearest", "bicubic")
    for padding in ("zeros", "border", "reflection") for align in (False, True)})
WINDOWS.update({
    f"grid_sample_3d_{mode}_{padding}" + ("_align_corners" if align else ""):
        _grid_sample(mode, padding, align, volume=True)
    for mode in ("bilinear", "nearest") for padding in ("zeros", "border", "reflection")
    for align in (False, True)})
WINDOWS.update({
    "spatial_transformer": _grid_sample("bilinear", "zeros", False, affine=True),
    "spatial_transformer_3d": _grid_sample("bilinear", "zeros", False, affine=True, volume=True),
    "spatial_transformer_3d_align_corners_reflection": _grid_sample(
        "bilinear", "reflection", True, affine=True, volume=True),
    "spatial_transformer_align_corners_border": _grid_sample("bilinear", "border", True,
                                                             affine=True),
})
