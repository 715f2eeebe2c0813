"""The reference models for sizing (popsim.models): BERT with its pretraining
and SQuAD heads, split by layers_per_ipu, computes what eager PyTorch does;
ResNet-50, ViT-B/16 and EfficientNet-B4 (G16) size as their published jobs
are split."""

import copy

import pytest
import torch
import torch.nn.functional as F

import popsim
from conftest import assert_close
from popsim.models import (BertConfig, BertEncoder, BertPretraining, BertSquad,
                           EfficientNetG16Training, PackedBertPretraining, ResNet50Training,
                           ViTTraining, image_batch, packed_pretraining_batch, pretraining_batch,
                           squad_batch)

TINY = BertConfig(vocab_size=50, hidden_size=16, num_layers=2, num_heads=2,
                  intermediate_size=32, max_positions=16, hidden_dropout=0.0,
                  attention_dropout=0.0)


def _pipelined(accumulation=2):
    opts = popsim.Options()
    opts.Training.gradientAccumulation(accumulation)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    return opts


@pytest.mark.parametrize("head", ["pretraining", "squad"])
def test_bert_split_over_ipus_computes_the_eager_loss(head):
    torch.manual_seed(0)
    if head == "pretraining":
        model = BertPretraining(TINY, layers_per_ipu=[0, 1, 1])
        batch = pretraining_batch(TINY, 8 * 2, sequence=8, masked=3)
    else:
        model = BertSquad(TINY, layers_per_ipu=[1, 1])
        batch = squad_batch(TINY, 8 * 2, sequence=8)
    expected = model(*[t[14:] for t in batch])  # the last micro-batch, before the update
    trainer = popsim.trainingModel(model, _pipelined(accumulation=8),
                                   popsim.optim.SGD(model.parameters(), lr=0.0))
    loss = trainer(*batch)
    assert_close(loss, expected.detach(), rtol=1e-5, atol=1e-6)
    ipus = {stage["ipu"] for stage in trainer.executionTrace().events}
    assert ipus == ({0, 1, 2} if head == "pretraining" else {0, 1})


def test_bert_sizes_pipelined_with_its_heads_back_on_ipu_0():
    model = BertPretraining(TINY, layers_per_ipu=[0, 1, 1], recompute_checkpoint_every_layer=True)
    opts = _pipelined(accumulation=8)
    opts.Training.recomputation(True)
    report = popsim.sizeJob(model, pretraining_batch(TINY, 2, sequence=8, masked=3), opts,
                            popsim.optim.LAMBNoBias(model.parameters()))
    assert report.ipus_per_replica == 3
    assert report.fits and report.items_per_call == 16
    assert sum(ipu.time_cycles["recomputation"] for ipu in report.ipus) > 0


def test_packed_bert_split_over_ipus_computes_the_eager_loss():
    torch.manual_seed(0)
    model = PackedBertPretraining(TINY, layers_per_ipu=[0, 1, 1], max_sequences_per_pack=3,
                                  embedding_serialization_factor=2)
    batch = packed_pretraining_batch(TINY, 8 * 2, sequence=12, masked=4)
    expected = model(*[t[14:] for t in batch])
    trainer = popsim.trainingModel(model, _pipelined(accumulation=8),
                                   popsim.optim.SGD(model.parameters(), lr=0.0))
    assert_close(trainer(*batch), expected.detach(), rtol=1e-5, atol=1e-6)


def test_a_packed_sequence_attends_only_to_itself():
    torch.manual_seed(0)
    encoder = BertEncoder(TINY).eval()
    ids, types, positions, sequences, *_ = packed_pretraining_batch(TINY, 4, sequence=12)
    first = sequences == 1
    others = ids.masked_fill(~first, 7)  # every other sequence's tokens changed
    packed = encoder(ids, types, sequences, positions, packed=True)
    changed = encoder(others, types, sequences, positions, packed=True)
    assert_close(packed[first], changed[first])
    assert not torch.allclose(packed[~first], changed[~first])
    # Rows hold 1 to 3 sequences, their [CLS] tokens last, -100 for the NSP labels of none.
    labels = packed_pretraining_batch(TINY, 32, sequence=12)[-1]
    assert ((labels == -100).sum(1) < 3).all() and (labels == -100).any()


def test_a_serialized_decoder_computes_the_same_loss():
    torch.manual_seed(0)
    whole = BertPretraining(TINY)
    split = BertPretraining(TINY, embedding_serialization_factor=5)
    split.load_state_dict(whole.state_dict())
    batch = pretraining_batch(TINY, 4, sequence=8, masked=3)
    assert_close(split(*batch), whole(*batch))
    with pytest.raises(ValueError, match=r"embedding_serialization_factor 3 must divide the "
                                         r"vocabulary \(50\)"):
        BertPretraining(TINY, embedding_serialization_factor=3)


def test_vit_mid_layer_checkpoints_compute_the_layer():
    torch.manual_seed(0)
    plain = ViTTraining(layers_per_ipu=[6, 6]).eval()
    checkpointed = ViTTraining(layers_per_ipu=[6, 6], recompute_mid_layers=[1, 7]).eval()
    checkpointed.load_state_dict(plain.state_dict())
    images, labels = image_batch(2)
    assert_close(checkpointed(images, labels)[1], plain(images, labels)[1])


def test_vit_separate_qkv_attention_computes_torchvisions():
    torch.manual_seed(0)
    fused = ViTTraining(layers_per_ipu=[6, 6]).eval()
    torch.manual_seed(0)
    separate = ViTTraining(layers_per_ipu=[6, 6], separate_qkv=True,
                           recompute_mid_layers=[4]).eval()
    attention = separate.vit.encoder.layers[0].self_attention
    assert [name for name, _ in attention.named_children()] == [
        "query", "key", "value", "out", "dropout"]
    images, labels = image_batch(2)
    # Both are eager float32, summing in different orders (one fused projection against three,
    # the queries scaled against the scores divided) through 12 layers.
    assert_close(separate(images, labels)[0], fused(images, labels)[0], rtol=1e-4, atol=1e-5)


def _one_layer_pretraining_vit() -> ViTTraining:
    """ViT-B/16 as pre-training builds it, cut to its first encoder layer to keep tests quick."""
    torch.manual_seed(0)
    vit = ViTTraining(num_classes=10, representation_size=768, mixup=True)
    vit.vit.encoder.layers = vit.vit.encoder.layers[:1]
    vit.ipu_of_layer = vit.ipu_of_layer[:1]
    return vit


def test_vit_pretraining_mixes_two_losses_after_a_pre_logits_layer():
    vit = _one_layer_pretraining_vit().eval()
    pre_logits = vit.vit.heads.pre_logits
    assert pre_logits.in_features == pre_logits.out_features == 768
    images, labels = image_batch(2, num_classes=10)
    labels_b, lam = labels.flip(0), torch.full((2,), 0.25)
    logits, loss = vit(images, labels, labels_b, lam)
    expected = (0.25 * F.cross_entropy(logits, labels)
                + 0.75 * F.cross_entropy(logits, labels_b))
    assert_close(loss, expected)
    # Either call without the other's inputs is a mistake the model names.
    with pytest.raises(ValueError, match=r"mixup=True\) takes \(images, labels, labels_b, lam\)"
                                         r".*labels_b=None and lam=None with mixup=True"):
        vit(images, labels)
    with pytest.raises(ValueError, match=r"labels_b=a tensor and lam=a tensor with mixup=False"):
        ViTTraining(num_classes=10)(images, labels, labels_b, lam)


def test_vit_pretraining_loss_trains_on_popsim_as_in_eager():
    vit = _one_layer_pretraining_vit()
    images, labels = image_batch(2, num_classes=10)
    lam = torch.full((2,), 0.7)
    eager = copy.deepcopy(vit)
    expected_logits, expected_loss = eager(images, labels, labels.flip(0), lam)
    compiled = popsim.trainingModel(vit, optimizer=popsim.optim.SGD(vit.parameters(), lr=0.0))
    logits, loss = compiled(images, labels, labels.flip(0), lam)
    compiled.destroy()
    assert_close(logits, expected_logits, rtol=1e-4, atol=1e-5)
    assert_close(loss, expected_loss, rtol=1e-4, atol=1e-5)


def test_separate_qkv_attention_runs_on_popsim_as_in_eager():
    from popsim.models.vision import _SeparateProjectionAttention

    class SelfAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = _SeparateProjectionAttention(
                torch.nn.MultiheadAttention(32, 4, batch_first=True))

        def forward(self, x):
            return self.attention(x, x, x, need_weights=False)[0]

    torch.manual_seed(0)
    model = SelfAttention().eval()
    x = torch.randn(3, 7, 32)
    expected = model(x)
    compiled = popsim.inferenceModel(model)
    assert_close(compiled(x), expected)
    compiled.destroy()


def test_bert_large_has_bert_large_sizes():
    config = BertConfig.large()
    assert (config.hidden_size, config.num_layers, config.num_heads,
            config.intermediate_size) == (1024, 24, 16, 4096)


def test_layers_per_ipu_must_place_every_layer_once():
    with pytest.raises(ValueError, match=r"layers_per_ipu \[1, 2\] must place each of the 2 "
                                         r"layers once \(sum 3\)"):
        BertPretraining(TINY, layers_per_ipu=[1, 2])
    with pytest.raises(ValueError, match="must place each of the 12 layers once"):
        ViTTraining(layers_per_ipu=[3, 3, 3])
    with pytest.raises(ValueError, match="checkpoint 'layer9.0' names no module of ResNet-50"):
        ResNet50Training(checkpoints=["layer9.0"])


def test_resnet50_and_vit_b16_size_as_their_published_jobs_split():
    torch.manual_seed(0)
    resnet = ResNet50Training(checkpoints=["layer1.0", "layer4.2.conv3", "avgpool"]).half()
    opts = popsim.Options()
    opts.Training.gradientAccumulation(4).recomputation(True)
    report = popsim.sizeJob(resnet, image_batch(2), opts,
                            popsim.optim.SGD(resnet.parameters(), lr=0.1, momentum=0.9))
    assert report.ipus_per_replica == 1 and report.items_per_call == 8
    # One IPU recomputes between the checkpoints (forward and backward are one task).
    assert report.ipus[0].time_cycles["recomputation"] > 0
    # ViT as Graphcore's job streams it: normalised float16 images, hidden dropout.
    vit = ViTTraining(layers_per_ipu=[3, 3, 3, 3], dropout=0.1, eight_bit_input=False).half()
    images, labels = image_batch(1)
    report = popsim.sizeJob(vit, (images.half(), labels), _pipelined(accumulation=8),
                            popsim.optim.SGD(vit.parameters(), lr=0.1, momentum=0.9))
    assert report.ipus_per_replica == 4 and report.fits
    assert isinstance(vit.normalise, torch.nn.Identity)


def test_efficientnet_b4_g16_is_graphcores_variant_and_sizes_over_its_splits():
    model = EfficientNetG16Training(splits=[(2, 1), (4, 0), (5, 5)], drop_path=0.0)
    convolutions = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    grouped = [m for m in convolutions if m.groups > 1]
    # Every former depthwise convolution of the 32 blocks, the first stage's included, in
    # channels // 16 groups: stage 1's second block (24 channels) has one group.
    assert len(grouped) == 31 and all(m.in_channels // 16 == m.groups for m in grouped)
    assert model.network.features[1][1].block[0][0].groups == 1
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
    assert {m.num_groups for m in model.modules() if isinstance(m, torch.nn.GroupNorm)} == {4}
    expanded = model.network.features[2][0].block[0][0]
    assert (expanded.in_channels, expanded.out_channels) == (24, 96)  # 4x, not 6x
    assert [ipu for ipu, _ in model.units].count(0) == 4  # the stem, stage 1, block 2.0
    report = popsim.sizeJob(model.half(), image_batch(1, size=64), _pipelined(accumulation=8),
                            popsim.optim.RMSprop(model.parameters(), momentum=0.9,
                                                 use_tf_variant=True))
    assert report.ipus_per_replica == 4 and report.fits
    with pytest.raises(ValueError, match=r"splits \[\(9, 0\)\] name blocks the network "):
        EfficientNetG16Training(splits=[(9, 0)])
