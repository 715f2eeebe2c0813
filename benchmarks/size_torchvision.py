"""Sizes torchvision's models for training at their standard input sizes, as
a user sizing their own model would (popsim.sizeJob, cost-only, one IPU of
a Bow, micro-batch 2 so that batch norm has more than one value per
channel): does each trace and compile, how long does sizing take on the
host, and does it fit one IPU?

Classification at 224x224 (inception_v3 at 299, the EfficientNets at their
own resolutions), segmentation at 520x520, video clips of 16 frames of
112x112 (mvit at 224x224, s3d at 224x224), optical flow (raft) on two
frames of 368x496. Each model's loss is cross entropy on its main output
(an L1 loss on raft's last flow field).

    .venv/bin/python benchmarks/size_torchvision.py [--json FILE] [--models NAME ...]

Prints, per model, the host seconds sizing took, whether it fits, the
simulated items/s, or the error; --json FILE writes the same per model
({"model", "task", "seconds", "fits", "throughput", "error"}).
"""

import argparse
import json
import sys
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import popsim


class Model(NamedTuple):
    name: str
    task: str
    inputs: Tuple[int, ...]  # one sample's shape


CLASSIFICATION = ["alexnet", "convnext_tiny", "densenet121", "googlenet", "mnasnet1_0",
                  "mobilenet_v2", "mobilenet_v3_large", "regnet_y_400mf", "resnet50",
                  "resnext50_32x4d", "shufflenet_v2_x1_0", "squeezenet1_0", "swin_t",
                  "swin_v2_t", "maxvit_t", "vgg16", "vit_b_16", "wide_resnet50_2"]
# EfficientNets at the resolutions torchvision's weights were trained at.
EFFICIENTNET = {"efficientnet_b0": 224, "efficientnet_b4": 380, "efficientnet_v2_s": 384}

MODELS: List[Model] = (
    [Model(name, "classification", (3, 224, 224)) for name in CLASSIFICATION]
    + [Model("inception_v3", "classification", (3, 299, 299))]
    + [Model(name, "classification", (3, size, size)) for name, size in EFFICIENTNET.items()]
    + [Model(name, "segmentation", (3, 520, 520))
       for name in ["deeplabv3_resnet50", "fcn_resnet50", "lraspp_mobilenet_v3_large"]]
    + [Model(name, "video", (3, 16, 112, 112)) for name in ["r3d_18", "r2plus1d_18", "mc3_18"]]
    + [Model("s3d", "video", (3, 16, 224, 224)), Model("mvit_v1_b", "video", (3, 16, 224, 224))]
    + [Model("raft_small", "optical flow", (3, 368, 496))])


class WithLoss(nn.Module):
    """The model and a loss on its main output, as a training model returns it."""

    def __init__(self, model: nn.Module, task: str) -> None:
        super().__init__()
        self.model = model
        self.task = task

    def forward(self, *inputs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.task == "optical flow":
            first, second, target = inputs
            flow = self.model(first, second)[-1]
            return flow, F.l1_loss(flow, target)
        images, labels = inputs
        output = self.model(images)
        if isinstance(output, dict):  # segmentation
            output = output["out"]
        elif not isinstance(output, torch.Tensor):  # inception_v3, googlenet in training
            output = output[0]
        return output, F.cross_entropy(output, labels)


def batch(model: Model, size: int = 2) -> Tuple[torch.Tensor, ...]:
    images = torch.randn(size, *model.inputs)
    if model.task == "optical flow":
        return images, torch.randn(size, *model.inputs), torch.randn(size, 2, *model.inputs[1:])
    if model.task == "segmentation":
        return images, torch.randint(0, 21, (size, *model.inputs[1:]))
    return images, torch.randint(0, 400 if model.task == "video" else 1000, (size,))


def build(model: Model) -> nn.Module:
    builder: Callable[..., nn.Module] = torchvision.models.get_model_builder(model.name)
    kwargs: Dict[str, Any] = {"weights": None}
    if model.task == "segmentation":
        kwargs["weights_backbone"] = None
    return WithLoss(builder(**kwargs), model.task)


def size(model: Model) -> Dict[str, Any]:
    torch.manual_seed(0)
    start = time.perf_counter()
    result: Dict[str, Any] = {"model": model.name, "task": model.task, "fits": None,
                              "throughput": None, "error": None}
    try:
        network = build(model)
        options = popsim.Options()
        options.Simulator.ipuVersion("Bow")
        report = popsim.sizeJob(network, batch(model), options,
                                torch.optim.SGD(network.parameters(), lr=0.01))
        result["fits"] = report.fits
        result["throughput"] = report.throughput
    except Exception as error:  # noqa: BLE001 - what a user would meet, reported per model
        result["error"] = f"{type(error).__name__}: {error}".split("\n")[0][:300]
    result["seconds"] = time.perf_counter() - start
    return result


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--models", nargs="*", metavar="NAME", help="only these models")
    args = parser.parse_args(argv)
    models = [m for m in MODELS if not args.models or m.name in args.models]
    results = []
    print(f"{'model':28} {'task':14} {'host s':>7}  fits  {'items/s':>9}  error")
    for model in models:
        result = size(model)
        results.append(result)
        fits: Optional[bool] = result["fits"]
        throughput = result["throughput"]
        print(f"{model.name:28} {model.task:14} {result['seconds']:7.1f}  "
              f"{'-' if fits is None else ('yes' if fits else 'NO'):4}  "
              f"{'-' if throughput is None else format(throughput, ',.0f'):>9}  "
              f"{result['error'] or ''}", flush=True)
    failed = sum(1 for r in results if r["error"])
    slowest = max(results, key=lambda r: r["seconds"]) if results else None
    print(f"{len(results) - failed} of {len(results)} models sized; slowest "
          f"{slowest['model'] if slowest else '-'} in "
          f"{slowest['seconds'] if slowest else 0:.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
