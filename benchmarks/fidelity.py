"""Simulated against published: each job of
../shared/reference/published-ipu-results.md (Graphcore's PopTorch training
throughputs on a Bow Pod16 and a Bow Pod64, with the configurations of its
public examples) built with popsim's reference models and sized cost-only
(popsim.sizeJob).

Prints, per job, the published and simulated items/s, their ratio, whether
it fits each IPU's memory (and how full the fullest IPU is) and the host
seconds the sizing took; --json FILE also writes, per job,
{"id", "published", "simulated", "ratio", "fits", "seconds"} (plus each
IPU's memory). The simulated figures come from popsim's cost model alone
(csrc/costs, csrc/device/chip_spec.cpp): no factor per model or job.

    .venv/bin/python benchmarks/fidelity.py [--json FILE] [--jobs ID ...] [--report]
"""

import argparse
import json
import re
import sys
import time
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

import torch

import popsim
from popsim.models import (BertConfig, BertPretraining, EfficientNetG16Training,
                           PackedBertPretraining, ResNet50Training, ViTTraining, image_batch,
                           packed_pretraining_batch, pretraining_batch)


# What a job's builder returns: the model, one micro-batch, the options and the optimizer.
Built = Tuple[torch.nn.Module, Tuple[torch.Tensor, ...], popsim.Options, torch.optim.Optimizer]


class Job(NamedTuple):
    id: str
    published: float  # items/s, Graphcore's figure
    unit: str
    build: Callable[..., Built]  # build(split=False): the model without its pipeline split
    # Items of `unit` per sample of the batch: packed BERT counts sequences, and a
    # sample is a pack of several.
    items_per_sample: float = 1.0
    # popsim.planJob's keyword arguments for the job's model built with
    # build(split=False) (benchmarks/plan.py): the modules to split at, the tail.
    planner: Callable[[torch.nn.Module], Dict[str, Any]] = lambda model: {}


def _bow(replicas: int, accumulation: int, device_iterations: int = 1,
         processes: int = 1, output_mode: popsim.OutputMode = popsim.OutputMode.Sum
         ) -> popsim.Options:
    """Bow IPUs for a job of `replicas` replicas over `processes` host
    processes (PopRun instances), as the example's benchmark launches it:
    each process streams the inputs of its own replicas. The outputs come
    back as `output_mode` says: the sum over the call's micro-batches for
    the CNN and BERT examples (vision/cnns/pytorch/utils/ipu_settings.py's
    train_settings, nlp/bert/pytorch/ipu_options.py), every micro-batch's for
    ViT (vision/vit/pytorch/ipu_options.py)."""
    assert replicas % processes == 0, f"{replicas} replicas over {processes} processes"
    opts = popsim.Options().deviceIterations(device_iterations)
    opts.replicationFactor(replicas // processes)
    if processes > 1:  # sized as process 0; cost-only jobs need no other process
        opts.Distributed.configureProcessId(0, processes)
    opts.Training.gradientAccumulation(accumulation)
    opts.outputMode(output_mode)
    opts.Simulator.ipuVersion("Bow")
    return opts


# Graphcore's ResNet-50 recomputation checkpoints (configs.yml): the residual
# additions of blocks 0-3, 5-7, 9, 11 and 12 (of 16), every convolution,
# batch norm and block of layer4, the pooling and the classifier. popsim
# checkpoints a block's output, its addition after the ReLU.
_RESNET50_CHECKPOINTS = (
    [f"layer{layer}.{block}" for layer, block in
     [(1, 0), (1, 1), (1, 2), (2, 0), (2, 2), (2, 3), (3, 0), (3, 2), (3, 4), (3, 5)]]
    + [f"layer4.{block}.{part}" for block in range(3)
       for part in ("conv1", "bn1", "conv2", "bn2", "conv3", "bn3")]
    + ["layer4.0.downsample.0", "layer4.0.downsample.1", "layer4.0", "layer4.1", "layer4.2",
       "avgpool", "fc"])


def resnet50_pod16(split: bool = True) -> Built:
    """16 replicas of one IPU in 8 processes (the benchmark's
    `poprun --num-instances=8 --num-replicas=16`, vision/cnns/pytorch/train/
    benchmarks.yml), micro-batch 18, accumulation 57; float16 with half
    partials and stochastic rounding; recomputation between Graphcore's
    checkpoints; available memory proportion 0.16; SGD with momentum
    (combined accumulator), loss scaling 128; 8-bit images."""
    model = ResNet50Training(label_smoothing=0.1, checkpoints=_RESNET50_CHECKPOINTS).half()
    opts = _bow(replicas=16, accumulation=57, processes=8)
    opts.Precision.setPartialsType(torch.half)
    opts.Precision.enableStochasticRounding(True)
    opts.Training.recomputation(True)
    opts.setAvailableMemoryProportion({"IPU0": 0.16})
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4,
                                 loss_scaling=128.0, use_combined_accum=True)
    return model, image_batch(18), opts, optimizer


def bert_base_ph1_pod16(split: bool = True) -> Built:
    """4 replicas x 4 pipelined IPUs, layers [0, 4, 4, 4] (embeddings and the
    tied MLM head on IPU 0), micro-batch 32, accumulation 512; float16 with
    half partials; recomputation checkpoints at every layer; LAMB without
    bias correction, loss scaling 16,384; optimizer state off chip with
    replicated tensor sharding; available memory proportion 0.25. One
    process, as the benchmark runs run_pretraining.py without PopRun."""
    config = BertConfig.base(layer_norm_eps=1e-3, attention_dropout=0.0, hidden_dropout=0.1)
    model = BertPretraining(config, layers_per_ipu=[0, 4, 4, 4] if split else None,
                            recompute_checkpoint_every_layer=True).half()
    opts = _bow(replicas=4, accumulation=512)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    opts.Precision.setPartialsType(torch.half)
    opts.Training.recomputation(True)
    opts.setAvailableMemoryProportion({f"IPU{ipu}": 0.25 for ipu in range(4)})
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useOnChipStorage(False).useReplicatedTensorSharding(True))
    optimizer = popsim.optim.LAMBNoBias(model.parameters(), lr=6e-3, weight_decay=0.01,
                                        loss_scaling=16384.0)
    return model, pretraining_batch(config, 32), opts, optimizer


# The training resolution of Graphcore's EfficientNet-B4 (vision/cnns/pytorch/models/factory.py,
# available_models: input shape (3, 380, 380)).
EFFICIENTNET_B4_SIZE = 380


def efficientnet_b4_pod16(split: bool = True) -> Built:
    """4 replicas x 4 pipelined IPUs in 4 processes (the benchmark's `poprun
    --num-instances=4 --num-replicas=4 --ipus-per-replica=4`,
    vision/cnns/pytorch/train/benchmarks.yml, pytorch_efficientnet_b4_train_real_pod16),
    configuration efficientnet-b4-g16-gn-pod16 of the SDK 3.0 configs.yml
    (vision/cnns/pytorch/train/configs.yml): G16 EfficientNet-B4 (group dim 16,
    expand ratio 4, group norm of 4 groups), splits at blocks/1/1, blocks/3/0 and
    blocks/4/5 (torchvision stages 2, 4 and 5), accumulation 32, device
    iterations 4; precision 16.32 (float16 ops with half partials, float32
    optimizer state), no stochastic rounding; RMSprop (TensorFlow's variant,
    alpha 0.953125, eps 1e-3, momentum 0.9, weight decay 1e-5), loss scaling
    128; available memory proportion 0.15; 8-bit images at EFFICIENTNET_B4_SIZE;
    recomputation of each pipeline stage's forward pass (only its inputs
    stashed: stashing every activation would put 7 GB on IPU 0, which the real
    IPUs did not have).
    Sized at the file's micro-batch of 6, a global batch of 768: no version of
    the example found gives the published row's 1,024 (micro-batch 8 with these
    replicas and accumulation; later versions use 2,048 at 16.16 on 8 x 2 IPUs)."""
    model = EfficientNetG16Training(splits=[(2, 1), (4, 0), (5, 5)] if split else []).half()
    opts = _bow(replicas=4, accumulation=32, device_iterations=4, processes=4)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    opts.Precision.setPartialsType(torch.half)
    opts.Training.recomputation(True)
    opts.setAvailableMemoryProportion({f"IPU{ipu}": 0.15 for ipu in range(4)})
    optimizer = popsim.optim.RMSprop(model.parameters(), lr=0.0483, alpha=0.953125, eps=1e-3,
                                     weight_decay=1e-5, momentum=0.9, loss_scaling=128.0,
                                     use_tf_variant=True)
    return model, image_batch(6, size=EFFICIENTNET_B4_SIZE), opts, optimizer


# vision/vit/pytorch/configs.yml's `defaults` (every ViT job's): the encoder
# layers that also checkpoint after their attention (models/modules.py's Block).
VIT_MID_CHECKPOINTS = [1, 4, 7, 10]


def vit_b16_finetune_pod16(split: bool = True) -> Built:
    """4 replicas x 4 pipelined IPUs, layers [3, 3, 3, 3], micro-batch 17,
    accumulation 30, device iterations 8; precision 16.16 (float16 with half
    partials) and stochastic rounding; images streamed as float16 (the
    example's byteio is off); hidden dropout 0.1; recomputation checkpoints
    at every layer and inside layers 1, 4, 7 and 10 (recompute_mid_layers of
    the file's `defaults`); SGD with momentum, float16 gradient accumulators and
    velocity (the example's accum_type and first_order_type), loss scaling
    0.25; optimizer state on chip with replicated tensor sharding; available
    memory proportion 0.3; prefetch depth 2 (vision/vit/pytorch/configs.yml,
    b16_imagenet1k). One process, as the benchmark runs finetune.py without
    PopRun (benchmarks.yml, pytorch_vit_finetune_gen_pod16). The attention is
    Hugging Face's ViTSelfAttention, which finetune.py's
    PipelinedViTForImageClassification runs: separate query, key and value
    projections, the scores divided by 8."""
    model = ViTTraining(layers_per_ipu=[3, 3, 3, 3] if split else None,
                        recompute_checkpoint_every_layer=True, dropout=0.1, eight_bit_input=False,
                        recompute_mid_layers=VIT_MID_CHECKPOINTS, separate_qkv=True).half()
    opts = _bow(replicas=4, accumulation=30, device_iterations=8,
                output_mode=popsim.OutputMode.All)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    opts.Precision.setPartialsType(torch.half)
    opts.Precision.enableStochasticRounding(True)
    opts.Training.recomputation(True)
    opts.setAvailableMemoryProportion({f"IPU{ipu}": 0.3 for ipu in range(4)})
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useOnChipStorage(True).useReplicatedTensorSharding(True))
    opts.prefetchDepth(2)
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, loss_scaling=0.25,
                                 accum_type=torch.float16, velocity_accum_type=torch.float16)
    images, labels = image_batch(17)
    return model, (images.half(), labels), opts, optimizer


def _vit_pretrain(replicas: int, accumulation: int, processes: int, split: bool) -> Built:
    """ViT-B/16 pre-training as vision/vit/pytorch/configs.yml's
    b16_in1k_pretrain_lamb (over its `defaults`) runs it: layers [3, 3, 3, 3]
    on 4 pipelined IPUs per replica, micro-batch 8; precision 16.16 (float16
    with half partials) and stochastic rounding; hidden and attention dropout
    0.1; recomputation checkpoints at every layer and inside layers 1, 4, 7
    and 10 (recompute_mid_layers); LAMB with bias correction, float32
    accumulators and moments, loss scaling 1,024, weight decay 0.01, max
    weight norm 65,535; optimizer state on chip with replicated tensor
    sharding; the gradients summed (reduction_type sum); available memory
    proportion 0.3 on every IPU; prefetch depth 2; the benchmark's generated
    8-bit images (--dataset generated --byteio true). The attention is
    models/modules.py's Attention: separate query, key and value projections,
    the scores divided by 8."""
    model = ViTTraining(layers_per_ipu=[3, 3, 3, 3] if split else None,
                        recompute_checkpoint_every_layer=True,
                        dropout=0.1, attention_dropout=0.1, eight_bit_input=True,
                        recompute_mid_layers=VIT_MID_CHECKPOINTS, separate_qkv=True,
                        representation_size=768, mixup=True).half()
    opts = _bow(replicas=replicas, accumulation=accumulation, processes=processes,
                output_mode=popsim.OutputMode.All)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    opts.Precision.setPartialsType(torch.half)
    opts.Precision.enableStochasticRounding(True)
    opts.Training.recomputation(True)
    opts.Training.accumulationAndReplicationReductionType(popsim.ReductionType.Sum)
    opts.setAvailableMemoryProportion({f"IPU{ipu}": 0.3 for ipu in range(4)})
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useOnChipStorage(True).useReplicatedTensorSharding(True))
    opts.prefetchDepth(2)
    optimizer = popsim.optim.LAMB(model.parameters(), lr=6e-3, betas=(0.9, 0.999), eps=1e-6,
                                  weight_decay=0.01, bias_correction=True, loss_scaling=1024.0,
                                  max_weight_norm=65535.0, accum_type=torch.float32,
                                  first_order_momentum_accum_type=torch.float32,
                                  second_order_momentum_accum_type=torch.float32)
    images, labels = image_batch(8)
    # The second labels and the mixing weight of pretrain.py's mixup_data.
    labels_b, lam = labels.roll(1), torch.full((8,), 0.7)
    return model, (images, labels, labels_b, lam), opts, optimizer


def vit_b16_pretrain_pod16(split: bool = True) -> Built:
    """4 replicas x 4 IPUs, accumulation 2,048 (8 x 4 x 2,048 = 65,536 images a
    step); one process, as the benchmark runs pretrain.py without PopRun
    (vision/vit/pytorch/benchmarks.yml, pytorch_vit_lamb_pretrain_gen_pod16).
    See _vit_pretrain for the rest."""
    return _vit_pretrain(replicas=4, accumulation=2048, processes=1, split=split)


def vit_b16_pretrain_pod64(split: bool = True) -> Built:
    """16 replicas x 4 IPUs in 8 processes of 2 replicas (the benchmark's
    `poprun --num-replicas=16 --num-instances=8 --ipus-per-replica=4` with
    `--gradient-accumulation 512`: 8 x 16 x 512 = 65,536 images a step;
    vision/vit/pytorch/benchmarks.yml, pytorch_vit_lamb_pretrain_gen_pod64).
    See _vit_pretrain for the rest."""
    return _vit_pretrain(replicas=16, accumulation=512, processes=8, split=split)


# Graphcore's packing of Wikipedia (nlp/bert/pytorch/configs_pretraining.yml,
# `packing_factor`): the average number of sequences per pack, by which the
# example divides its gradient accumulation and which its throughput counts.
_PACKING_FACTOR = {128: 1.17, 512: 2.0}


def _bert_large_packed(sequence: int, replicas: int, micro_batch: int, accumulation: int,
                       proportions: List[float], loss_scaling: float, split: bool) -> Built:
    """BERT-Large pre-training on packed Wikipedia as run_pretraining.py
    --packed-data runs it (nlp/bert/pytorch/configs_pretraining.yml,
    pretrain_large_128 / pretrain_large_512 over its `defaults`; benchmarks.yml,
    pytorch_bert_large_packed_pretrain_real_pod16 / _pod64: one process, no
    PopRun): up to 3 sequences per pack, 20 (SL128) or 76 (SL512) masked
    tokens plus 2 for the extra sequences; 4 pipelined IPUs per replica,
    layers [3, 7, 7, 7] with the embeddings (serialised in 2) and the heads on
    IPU 0; float16 with half partials and stochastic rounding; recomputation
    checkpoints at every layer; LAMB with bias correction, float16 gradient
    accumulators and float32 moments; optimizer state off chip with replicated
    tensor sharding; hidden dropout 0.1, attention dropout 0 and layer norm eps
    1e-3 as the base job's. The example divides its gradient accumulation by
    the packing factor (ceil), so a step is counted in packs and its
    throughput in sequences."""
    config = BertConfig.large(layer_norm_eps=1e-3, attention_dropout=0.0, hidden_dropout=0.1)
    model = PackedBertPretraining(config, layers_per_ipu=[3, 7, 7, 7] if split else None,
                                  recompute_checkpoint_every_layer=True,
                                  embedding_serialization_factor=2,
                                  max_sequences_per_pack=3).half()
    opts = _bow(replicas=replicas, accumulation=accumulation)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    opts.Precision.setPartialsType(torch.half)
    opts.Precision.enableStochasticRounding(True)
    opts.Training.recomputation(True)
    opts.setAvailableMemoryProportion(
        {f"IPU{ipu}": proportion for ipu, proportion in enumerate(proportions)})
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useOnChipStorage(False).useReplicatedTensorSharding(True))
    optimizer = popsim.optim.LAMB(model.parameters(), lr=6e-3, weight_decay=0.01,
                                  bias_correction=True, loss_scaling=loss_scaling,
                                  accum_type=torch.float16,
                                  first_order_momentum_accum_type=torch.float32,
                                  second_order_momentum_accum_type=torch.float32)
    masked = {128: 20, 512: 76}[sequence] + 2
    return model, packed_pretraining_batch(config, micro_batch, sequence, masked), opts, optimizer


def bert_large_ph1_packed_pod16(split: bool = True) -> Built:
    """SL128, 4 replicas, micro-batch 8 packs, accumulation ceil(2,048 / 1.17)
    = 1,751 (pretrain_large_128: 4 x 8 x 1,751 = 56,032 packs a step; the
    published row says 56,064, which the example's arithmetic gives on the
    Pod64 only); available memory proportion [0.15, 0.25, 0.25, 0.25], loss
    scaling 4,096. See _bert_large_packed for the rest."""
    return _bert_large_packed(128, replicas=4, micro_batch=8, accumulation=1751,
                              proportions=[0.15, 0.25, 0.25, 0.25], loss_scaling=4096.0,
                              split=split)


def bert_large_ph1_packed_pod64(split: bool = True) -> Built:
    """SL128, 16 replicas in one process, micro-batch 8 packs, accumulation
    ceil(512 / 1.17) = 438 (pretrain_large_128_POD64: 16 x 8 x 438 = 56,064
    packs a step); available memory proportion [0.14, 0.19, 0.19, 0.19], loss
    scaling 32,768. See _bert_large_packed for the rest."""
    return _bert_large_packed(128, replicas=16, micro_batch=8, accumulation=438,
                              proportions=[0.14, 0.19, 0.19, 0.19], loss_scaling=32768.0,
                              split=split)


def bert_large_ph2_packed_pod16(split: bool = True) -> Built:
    """SL512, 4 replicas, micro-batch 2 packs, accumulation 2,048 / 2 = 1,024
    (pretrain_large_512: 4 x 2 x 1,024 = 8,192 packs a step); available memory
    proportion [0.10, 0.15, 0.15, 0.15], loss scaling 8,192. See
    _bert_large_packed for the rest."""
    return _bert_large_packed(512, replicas=4, micro_batch=2, accumulation=1024,
                              proportions=[0.10, 0.15, 0.15, 0.15], loss_scaling=8192.0,
                              split=split)


def bert_large_ph2_packed_pod64(split: bool = True) -> Built:
    """SL512, 16 replicas in one process, micro-batch 2 packs, accumulation
    512 / 2 = 256 (pretrain_large_512_POD64: 16 x 2 x 256 = 8,192 packs a
    step); available memory proportion [0.13, 0.19, 0.19, 0.19], loss scaling
    16,384. See _bert_large_packed for the rest."""
    return _bert_large_packed(512, replicas=16, micro_batch=2, accumulation=256,
                              proportions=[0.13, 0.19, 0.19, 0.19], loss_scaling=16384.0,
                              split=split)


def _blocks_of(model: torch.nn.Module, pattern: str) -> List[str]:
    """The names of the model's modules that match `pattern`, in module order."""
    return [name for name, _ in model.named_modules() if re.fullmatch(pattern, name)]


def _bert_planner(model: torch.nn.Module) -> Dict[str, Any]:
    """BERT splits at its embeddings and layers; its heads (the MLM decoder tied
    to the word embeddings) run on IPU 0 after the encoder, as in Graphcore's
    examples."""
    return {"candidates": ["bert.embeddings"] + _blocks_of(model, r"bert\.layers\.\d+"),
            "tail_after": "bert"}


def _resnet_planner(model: torch.nn.Module) -> Dict[str, Any]:
    """ResNet-50 splits at its 16 bottleneck blocks."""
    return {"candidates": _blocks_of(model, r"network\.layer\d\.\d+")}


def _efficientnet_planner(model: torch.nn.Module) -> Dict[str, Any]:
    """EfficientNet splits at the stem, each block of its 7 stages and the head."""
    return {"candidates": ["network.features.0"]
            + _blocks_of(model, r"network\.features\.[1-7]\.\d+") + ["network.features.8"]}


JOBS = [
    Job("resnet50-pod16", 37061.0, "images/s", resnet50_pod16, planner=_resnet_planner),
    Job("efficientnet-b4-pod16", 8263.0, "images/s", efficientnet_b4_pod16,
        planner=_efficientnet_planner),
    Job("bert-base-ph1-pod16", 15911.0, "sequences/s", bert_base_ph1_pod16,
        planner=_bert_planner),
    Job("vit-b16-finetune-pod16", 7319.0, "images/s", vit_b16_finetune_pod16),
    Job("vit-b16-pretrain-pod16", 7615.0, "images/s", vit_b16_pretrain_pod16),
    Job("vit-b16-pretrain-pod64", 27868.0, "images/s", vit_b16_pretrain_pod64),
    Job("bert-large-ph1-packed-pod16", 5600.0, "sequences/s", bert_large_ph1_packed_pod16,
        _PACKING_FACTOR[128], _bert_planner),
    Job("bert-large-ph1-packed-pod64", 18442.0, "sequences/s", bert_large_ph1_packed_pod64,
        _PACKING_FACTOR[128], _bert_planner),
    Job("bert-large-ph2-packed-pod16", 1973.0, "sequences/s", bert_large_ph2_packed_pod16,
        _PACKING_FACTOR[512], _bert_planner),
    Job("bert-large-ph2-packed-pod64", 6543.0, "sequences/s", bert_large_ph2_packed_pod64,
        _PACKING_FACTOR[512], _bert_planner),
]


def size(job: Job, show_report: bool) -> Dict[str, Any]:
    torch.manual_seed(0)
    start = time.perf_counter()
    model, micro_batch, opts, optimizer = job.build()
    report = popsim.sizeJob(model, micro_batch, opts, optimizer)
    seconds = time.perf_counter() - start
    if show_report:
        print(report, end="\n\n")
    # items_per_call and replicas both count every process's replicas.
    micro_batch_size = report.items_per_call // (
        report.steps_per_call * report.micro_batches_per_step * report.replicas)
    processes = f" in {report.processes} processes" if report.processes > 1 else ""
    configuration = (f"{report.replicas} x {report.ipus_per_replica} IPU(s){processes}, "
                     f"micro-batch {micro_batch_size}, "
                     f"accumulation {report.micro_batches_per_step}, "
                     f"device iterations {report.steps_per_call}")
    simulated = report.throughput * job.items_per_sample
    if job.items_per_sample != 1.0:
        configuration += f", {job.items_per_sample:g} {job.unit.split('/')[0]} per sample"
    return {"id": job.id, "configuration": configuration, "published": job.published,
            "simulated": simulated, "ratio": simulated / job.published,
            "fits": report.fits, "seconds": seconds,
            "fullest_ipu": max(ipu.memory_bytes / ipu.capacity_bytes for ipu in report.ipus),
            "memory": [{"ipu": ipu.ipu, "bytes": ipu.memory_bytes,
                        "capacity": ipu.capacity_bytes} for ipu in report.ipus],
            "time_shares": report.time_shares()}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--jobs", nargs="*", metavar="ID", help="only these jobs")
    parser.add_argument("--report", action="store_true", help="print each job's sizing report")
    args = parser.parse_args(argv)
    jobs = [job for job in JOBS if not args.jobs or job.id in args.jobs]
    unknown = set(args.jobs or ()) - {job.id for job in JOBS}
    if unknown:
        parser.error(f"unknown job(s) {sorted(unknown)}; the jobs are "
                     f"{[job.id for job in JOBS]}")
    results = []
    print(f"{'job':24} {'published':>11} {'simulated':>11} {'ratio':>6}  fits  "
          f"{'fullest IPU':>12} {'host s':>7}")
    for job in jobs:
        result = size(job, args.report)
        results.append(result)
        fullest = result["fullest_ipu"]
        print(f"{job.id:24} {result['published']:>11,.0f} {result['simulated']:>11,.0f} "
              f"{result['ratio']:>6.2f}  {'yes' if result['fits'] else 'NO ':4}  "
              f"{fullest:>11.0%} {result['seconds']:>7.1f}", flush=True)
    print("Simulated items/s are popsim's simulated clock; published are Graphcore's "
          "measured Bow Pod16 and Pod64 throughputs.")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
