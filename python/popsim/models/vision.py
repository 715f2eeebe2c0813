"""torchvision's ResNet-50 and ViT-B/16 as Graphcore's examples train them,
for sizing jobs: images arrive as 8-bit integers and are normalised on the
device (optional for ViT), the loss (cross entropy, with label smoothing
for ResNet-50) is part of the model, ResNet-50 takes recomputation
checkpoints by module name, and ViT-B/16's encoder layers go into one
popsim.Block per IPU from a ``layers_per_ipu`` list (the patch embedding
with the first layers, the head with the last).
"""

import math
from typing import ContextManager, List, Optional, Sequence, Tuple, cast

import torch
import torch.nn.functional as F
import torchvision
from torchvision.models.vision_transformer import EncoderBlock
from torch import nn

from popsim.frontend.tensor_ops import recomputationCheckpoint
from popsim.models.pipeline_blocks import block_if_split

# ImageNet's channel means and standard deviations, on the 0-255 scale.
_MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
_STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)


def _checkpoint_output(module: nn.Module, inputs: object, output: torch.Tensor) -> torch.Tensor:
    return cast(torch.Tensor, recomputationCheckpoint(output))


class _Normalise(nn.Module):
    """8-bit images to the network's dtype, normalised (on the device, so the
    host streams a quarter of float32's bytes)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor(_MEAN).reshape(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(_STD).reshape(1, 3, 1, 1))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        mean, std = cast(torch.Tensor, self.mean), cast(torch.Tensor, self.std)
        return (images.to(mean.dtype) - mean) / std


class ResNet50Training(nn.Module):
    """torchvision's ResNet-50 (v1.5) with 8-bit input and the loss:
    ``forward(images_uint8, labels)`` returns (logits, loss).

    ``checkpoints`` names submodules of torchvision's network ("layer1.0",
    "layer4.0.conv1", "avgpool") whose outputs are recomputation checkpoints
    (popsim.recomputationCheckpoint), as Graphcore's configurations list
    them; with Options.Training.recomputation(True) the backward pass
    recomputes between them."""

    def __init__(self, num_classes: int = 1000, label_smoothing: float = 0.1,
                 checkpoints: Sequence[str] = ()) -> None:
        super().__init__()
        self.normalise = _Normalise()
        self.network = torchvision.models.resnet50(num_classes=num_classes)
        self.label_smoothing = label_smoothing
        modules = dict(self.network.named_modules())
        for name in checkpoints:
            if name not in modules:
                raise ValueError(f"checkpoint {name!r} names no module of ResNet-50 (e.g. "
                                 "'layer1.0', 'layer4.0.conv1', 'avgpool').")
            modules[name].register_forward_hook(_checkpoint_output)

    def forward(self, images: torch.Tensor, labels: torch.Tensor
                ) -> Tuple[torch.Tensor, torch.Tensor]:
        logits = self.network(self.normalise(images))
        return logits, F.cross_entropy(logits.float(), labels,
                                       label_smoothing=self.label_smoothing)


class ViTTraining(nn.Module):
    """torchvision's ViT-B/16 with the loss, its encoder layers split over
    IPUs by ``layers_per_ipu`` (one block "IPU<n>" each): ``forward(images,
    labels)`` returns (logits, loss). Images are 8-bit, normalised on the
    device, unless ``eight_bit_input`` is False (then normalised images in
    the model's dtype); ``dropout`` is the hidden dropout and
    ``attention_dropout`` the attention's. ``recompute_mid_layers`` lists the
    layers that also checkpoint between their attention and their MLP (as
    Graphcore's ViT examples' recompute_mid_layers). ``separate_qkv`` writes
    the attention as Graphcore's ViT examples and Hugging Face's
    ViTSelfAttention do: three projections for the queries, keys and values,
    and the scores divided by the root of the head size (torchvision fuses
    the projections into one and scales the queries); the weights are
    torchvision's either way.

    For pre-training as Graphcore's ViT example runs it (vision/vit/pytorch,
    b16_in1k_pretrain_lamb): ``representation_size`` puts torchvision's
    pre-logits layer (a linear layer and tanh) before the classifier, and
    ``mixup`` makes the call ``forward(images, labels, labels_b, lam)``: the
    images are mixed on the host, and the loss is ``lam`` times the cross
    entropy with ``labels`` plus ``1 - lam`` times that with ``labels_b``
    (``lam`` holds the mixing weight once per image, as the example streams
    it, and the loss takes the first as a number, as the example's does)."""

    def __init__(self, num_classes: int = 1000,
                 layers_per_ipu: Optional[Sequence[int]] = None,
                 recompute_checkpoint_every_layer: bool = False, dropout: float = 0.0,
                 eight_bit_input: bool = True, attention_dropout: float = 0.0,
                 recompute_mid_layers: Sequence[int] = (), separate_qkv: bool = False,
                 representation_size: Optional[int] = None, mixup: bool = False) -> None:
        super().__init__()
        # Without 8-bit input the host streams normalised images in the model's dtype.
        self.normalise: nn.Module = _Normalise() if eight_bit_input else nn.Identity()
        self.vit = torchvision.models.vit_b_16(num_classes=num_classes, dropout=dropout,
                                               attention_dropout=attention_dropout,
                                               representation_size=representation_size)
        self.mixup = mixup
        if separate_qkv:
            for layer in self.vit.encoder.layers:
                layer.self_attention = _SeparateProjectionAttention(layer.self_attention)
        for index in recompute_mid_layers:
            # The layer stays a module called as one, so blocks and hooks on it still apply.
            self.vit.encoder.layers[index].__class__ = _EncoderBlockCheckpointedAfterAttention
        layers = len(self.vit.encoder.layers)
        counts = list(layers_per_ipu) if layers_per_ipu is not None else [layers]
        if sum(counts) != layers or any(n < 0 for n in counts):
            raise ValueError(f"layers_per_ipu {counts} must place each of the {layers} "
                             f"layers once (sum {sum(counts)}).")
        self.ipu_of_layer = [ipu for ipu, count in enumerate(counts) for _ in range(count)]
        self.split = layers_per_ipu is not None
        self.checkpoints = recompute_checkpoint_every_layer

    def _block(self, ipu: int) -> ContextManager[object]:
        return block_if_split(self.split, f"IPU{ipu}", ipu)

    def forward(self, images: torch.Tensor, labels: torch.Tensor,
                labels_b: Optional[torch.Tensor] = None, lam: Optional[torch.Tensor] = None
                ) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.mixup != (labels_b is not None and lam is not None):
            raise ValueError("ViTTraining(mixup=True) takes (images, labels, labels_b, lam) and "
                             "mixup=False takes (images, labels); got "
                             f"labels_b={'a tensor' if labels_b is not None else None} and "
                             f"lam={'a tensor' if lam is not None else None} with "
                             f"mixup={self.mixup}.")
        vit, encoder = self.vit, self.vit.encoder
        with self._block(self.ipu_of_layer[0]):
            tokens = vit._process_input(self.normalise(images))
            cls = vit.class_token.expand(tokens.shape[0], -1, -1)
            hidden = encoder.dropout(torch.cat([cls, tokens], dim=1) + encoder.pos_embedding)
        for index, layer in enumerate(encoder.layers):
            with self._block(self.ipu_of_layer[index]):
                hidden = layer(hidden)
                if self.checkpoints:
                    hidden = recomputationCheckpoint(hidden)
        with self._block(self.ipu_of_layer[-1]):
            logits = vit.heads(encoder.ln(hidden)[:, 0])
            loss = F.cross_entropy(logits.float(), labels)
            if labels_b is not None and lam is not None:
                weight = float(lam[0])
                loss = weight * loss + (1 - weight) * F.cross_entropy(logits.float(), labels_b)
            return logits, loss


class _SeparateProjectionAttention(nn.Module):
    """Multi-head self-attention with separate query, key and value
    projections and the scores divided by the root of the head size, as
    Graphcore's ViT examples (vision/vit/pytorch/models/modules.py's
    Attention) and Hugging Face's ViTSelfAttention compute it, made from a
    torchvision nn.MultiheadAttention's weights. Called as torchvision's
    encoder layer calls its attention: (query, key, value, need_weights) ->
    (output, None)."""

    def __init__(self, fused: nn.MultiheadAttention) -> None:
        super().__init__()
        hidden = fused.embed_dim
        self.heads = fused.num_heads
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        with torch.no_grad():
            for part, projection in enumerate((self.query, self.key, self.value)):
                rows = slice(part * hidden, (part + 1) * hidden)
                projection.weight.copy_(fused.in_proj_weight[rows])
                projection.bias.copy_(fused.in_proj_bias[rows])
        self.out = fused.out_proj
        self.dropout = nn.Dropout(fused.dropout)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                need_weights: bool = False) -> Tuple[torch.Tensor, None]:
        batch, tokens, hidden = query.shape
        head_size = hidden // self.heads

        def by_head(projected: torch.Tensor) -> torch.Tensor:
            return projected.view(batch, tokens, self.heads, head_size).permute(0, 2, 1, 3)

        scores = torch.matmul(by_head(self.query(query)),
                              by_head(self.key(key)).transpose(-1, -2)) / math.sqrt(head_size)
        context = torch.matmul(self.dropout(scores.softmax(dim=-1)), by_head(self.value(value)))
        return self.out(context.permute(0, 2, 1, 3).reshape(batch, tokens, hidden)), None


class _EncoderBlockCheckpointedAfterAttention(EncoderBlock):
    """torchvision's ViT encoder layer with a recomputation checkpoint after
    the attention's residual addition."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - torchvision's name
        attended = self.ln_1(input)
        attended, _ = self.self_attention(attended, attended, attended, need_weights=False)
        hidden = recomputationCheckpoint(self.dropout(attended) + input)
        return hidden + self.mlp(self.ln_2(hidden))


class EfficientNetG16Training(nn.Module):
    """EfficientNet-B4 as Graphcore's G16 variant (vision/cnns/pytorch,
    efficientnet_group_dim 16, efficientnet_expand_ratio 4, norm_type group):
    torchvision's EfficientNet-B4 stages with every depthwise convolution
    grouped by 16 channels (channels / 16 groups), the inverted bottlenecks
    expanding 4x instead of 6x, and group norms of ``norm_groups`` groups in
    place of batch norms, everywhere (stem and head included); dropout 0.4
    before the classifier and stochastic depth ``drop_path`` (timm's
    drop_path_rate, which Graphcore's example builds the model with); 8-bit
    images normalised on the device and the loss (cross entropy with label
    smoothing): ``forward(images, labels)`` returns (logits, loss).

    ``splits`` lists the blocks that start the next IPU, as (stage, block)
    with stages numbered as torchvision's ``features`` (1-7; Graphcore's
    ``blocks/<s>/<b>`` is stage s + 1); each IPU's part is a popsim.Block
    "IPU<n>"; none keeps the whole model on one IPU."""

    def __init__(self, num_classes: int = 1000, group_size: int = 16, expand_ratio: int = 4,
                 norm_groups: int = 4, norm_eps: float = 1e-3, label_smoothing: float = 0.1,
                 drop_path: float = 0.2, splits: Sequence[Tuple[int, int]] = ()) -> None:
        super().__init__()
        from torchvision.models import efficientnet

        settings, last_channel = efficientnet._efficientnet_conf(
            "efficientnet_b4", width_mult=1.4, depth_mult=1.8)
        for setting in settings:
            if getattr(setting, "expand_ratio", 1) == 6:
                setting.expand_ratio = expand_ratio  # type: ignore[union-attr]
        self.normalise = _Normalise()
        self.network = efficientnet.EfficientNet(
            settings, dropout=0.4, stochastic_depth_prob=drop_path, num_classes=num_classes,
            norm_layer=lambda channels: nn.GroupNorm(norm_groups, channels, eps=norm_eps),
            last_channel=last_channel)
        for module in self.network.modules():
            for name, child in module.named_children():
                if (isinstance(child, nn.Conv2d) and child.groups > 1
                        and child.groups == child.in_channels == child.out_channels):
                    kernel, stride = child.kernel_size, child.stride
                    setattr(module, name, nn.Conv2d(
                        child.in_channels, child.out_channels, (kernel[0], kernel[1]),
                        (stride[0], stride[1]), cast(Tuple[int, int], child.padding),
                        groups=max(1, child.in_channels // group_size), bias=False))
        self.label_smoothing = label_smoothing
        features = self.network.features
        self.units: List[Tuple[int, nn.Module]] = []  # (IPU, module) in order
        ipu = 0
        starts = set(splits)
        for stage, part in enumerate(features):
            blocks = list(part) if 1 <= stage <= 7 else [part]
            for index, block in enumerate(blocks):
                if (stage, index) in starts:
                    ipu += 1
                self.units.append((ipu, block))
        if ipu != len(starts):
            raise ValueError(f"splits {sorted(starts)} name blocks the network does not have "
                             f"(stages 1-7 of torchvision's EfficientNet-B4 features).")
        self.split = bool(starts)

    def _block(self, ipu: int) -> ContextManager[object]:
        return block_if_split(self.split, f"IPU{ipu}", ipu)

    def forward(self, images: torch.Tensor, labels: torch.Tensor
                ) -> Tuple[torch.Tensor, torch.Tensor]:
        hidden = images
        for index, (ipu, unit) in enumerate(self.units):
            with self._block(ipu):
                hidden = unit(self.normalise(hidden) if index == 0 else hidden)
        with self._block(self.units[-1][0]):
            logits = self.network.classifier(torch.flatten(self.network.avgpool(hidden), 1))
            return logits, F.cross_entropy(logits.float(), labels,
                                           label_smoothing=self.label_smoothing)


def image_batch(batch: int, num_classes: int = 1000, size: int = 224,
                seed: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
    """A random micro-batch of 8-bit images and labels."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8,
                           generator=generator)
    return images, torch.randint(0, num_classes, (batch,), generator=generator)
