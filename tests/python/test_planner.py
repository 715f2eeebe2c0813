"""popsim.plan: the pipeline planner. Its plan must be what a run of the
annotated model reports, at least as fast as every split it could choose,
and its errors and advice must name what to change."""

import pytest
import torch
import torch.nn as nn
import torchvision

import popsim
from models import Translator
from popsim.reports.planner import _ranked_splits


class Net(nn.Module):
    """Four layers of unequal cost, as the pipelining tutorial's network."""

    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 8, 5), nn.MaxPool2d(2), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(8, 16, 5), nn.MaxPool2d(2), nn.ReLU())
        self.layer3 = nn.Sequential(nn.Flatten(), nn.Linear(256, 128), nn.ReLU())
        self.layer4 = nn.Linear(128, 10)

    def forward(self, x):
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


class WithLoss(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels):
        out = self.model(x)
        return out, self.loss(out, labels)


CANDIDATES = ["model.layer1", "model.layer2", "model.layer3", "model.layer4"]


def job():
    torch.manual_seed(0)
    model = WithLoss(Net())
    opts = popsim.Options()
    opts.Training.gradientAccumulation(8)
    batch = (torch.randn(4, 1, 28, 28), torch.randint(0, 10, (4,)))
    return model, batch, opts


def optimizer_of(model):
    return popsim.optim.SGD(model.parameters(), lr=0.01)


def test_the_plan_predicts_what_a_run_of_the_annotated_model_reports():
    """The chosen plan's throughput and memory are those of a computing run
    of the model annotated by plan.apply (the planner simulates exactly that)."""
    model, batch, opts = job()
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2, candidates=CANDIDATES)
    assert plan.fits and plan.chosen.ipus == 2
    assert not any(module._forward_pre_hooks for module in model.modules()), \
        "the planner leaves the model as it found it"
    run_options = plan.apply(model, opts)
    trainer = popsim.trainingModel(model, run_options, optimizer_of(model))
    steps = 8
    trainer(torch.randn(4 * steps, 1, 28, 28), torch.randint(0, 10, (4 * steps,)))
    report = trainer.sizingReport()
    trainer.destroy()
    assert report.throughput == pytest.approx(plan.chosen.throughput, rel=1e-12)
    assert [ipu.memory_bytes for ipu in report.ipus] == \
        [ipu.memory_bytes for ipu in plan.chosen.report.ipus]


def test_the_plan_is_as_fast_as_every_split_it_could_choose():
    """Against every split of the four layers over 2 IPUs, sized one by one."""
    model, batch, opts = job()
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2, candidates=CANDIDATES)
    best = 0.0
    for first in (1, 2, 3):
        split = [CANDIDATES[:first], CANDIDATES[first:]]
        popsim.removeBlocks(model)
        popsim.BeginBlock(model, "IPU0", ipu_id=0)
        popsim.BeginBlock(model.get_submodule(split[1][0]), "IPU1", ipu_id=1)
        split_opts = opts.clone().setExecutionStrategy(popsim.PipelinedExecution(
            popsim.Stage("IPU0").ipu(0), popsim.Stage("IPU1").ipu(1)))
        report = popsim.sizeJob(model, batch, split_opts, optimizer_of(model))
        best = max(best, report.throughput if report.fits else 0.0)
    popsim.removeBlocks(model)
    assert plan.chosen.throughput >= best
    text = str(plan)
    assert "Chosen: [" in text and 'popsim.BeginBlock(model, "IPU0", ipu_id=0)' in text
    assert "Runners-up:" in text


class WideInput(nn.Module):
    """A wide input reduced by the first of six equal layers: IPU 0 spends most of its
    time receiving the input from the host."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4096, 128), *(nn.Linear(128, 128) for _ in range(5)))
        self.loss = nn.MSELoss()

    def forward(self, x, target):
        out = self.layers(x)
        return out, self.loss(out, target)


@pytest.mark.parametrize("pattern", [popsim.SyncPattern.Full, popsim.SyncPattern.SinglePipeline])
def test_the_plan_balances_what_host_exchanges_leave_to_each_stage(pattern):
    """Under SyncPattern.Full IPU 0's host exchange holds up every stage whatever the
    split, so moving layers away from IPU 0 gains nothing; with SinglePipeline it does.
    With two evaluations the planner must rank the best split first."""
    torch.manual_seed(0)
    model = WideInput()
    opts = popsim.Options().syncPattern(pattern)
    opts.Training.gradientAccumulation(8)
    batch = (torch.randn(16, 4096), torch.randn(16, 128))
    names = [f"layers.{index}" for index in range(6)]
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2, candidates=names,
                       max_evaluations=2)
    best = 0.0
    for first in range(1, 6):
        popsim.removeBlocks(model)
        popsim.BeginBlock(model, "IPU0", ipu_id=0)
        popsim.BeginBlock(model.get_submodule(names[first]), "IPU1", ipu_id=1)
        split_opts = opts.clone().setExecutionStrategy(popsim.PipelinedExecution(
            popsim.Stage("IPU0").ipu(0), popsim.Stage("IPU1").ipu(1)))
        best = max(best, popsim.sizeJob(model, batch, split_opts, optimizer_of(model)).throughput)
    popsim.removeBlocks(model)
    assert plan.chosen.throughput >= best


def test_inference_is_planned_at_a_sequentials_children_and_runs_as_eager():
    torch.manual_seed(1)
    net = Net()
    model = nn.Sequential(net.layer1, net.layer2, net.layer3, net.layer4).eval()
    opts = popsim.Options().deviceIterations(4)
    x = torch.randn(2, 1, 28, 28)
    plan = popsim.plan(model, x, opts, ipus=2)
    assert plan.candidates == ["0", "1", "2", "3"] and plan.fits
    run_options = plan.apply(model, opts)
    batch = torch.randn(8, 1, 28, 28)
    torch.testing.assert_close(popsim.inferenceModel(model, run_options)(batch), model(batch))


def test_when_nothing_fits_the_plan_says_what_would():
    model, batch, opts = job()
    opts.Simulator.memoryPerIpu("256KiB")
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2, candidates=CANDIDATES)
    assert not plan.fits and plan.chosen is None
    text = str(plan)
    assert "No plan fits." in text
    assert "IPUs would hold them" in text and "smaller micro-batch" in text
    with pytest.raises(popsim.OptionError, match=r"found no split of WithLoss over 2 IPUs that "
                                                 r"fits: The candidates need about"):
        plan.apply(model, opts)


class SmallUNet(nn.Module):
    """Blocks at the top level, each a Sequential of layers (with more children
    than the model has blocks), joined by a skip connection."""

    def __init__(self):
        super().__init__()
        def block(inputs, outputs):
            return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(outputs, outputs, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(outputs, outputs, 1), nn.ReLU())
        self.down = block(3, 8)
        self.middle = block(8, 16)
        self.up = block(24, 8)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x, target):
        skip = self.down(x)
        middle = self.middle(nn.functional.max_pool2d(skip, 2))
        joined = torch.cat([nn.functional.interpolate(middle, scale_factor=2), skip], 1)
        return nn.functional.cross_entropy(self.out(self.up(joined)), target)


class LayerList(nn.Module):
    """An embedding, a ModuleList of layers and a head."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(20, 32)
        self.layers = nn.ModuleList(nn.Linear(32, 32) for _ in range(6))
        self.head = nn.Linear(32, 20)

    def forward(self, ids, labels):
        hidden = self.embedding(ids)
        for layer in self.layers:
            hidden = torch.relu(layer(hidden))
        return nn.functional.cross_entropy(self.head(hidden).flatten(0, 1), labels.flatten())


def test_the_default_candidates_are_the_children_that_hold_the_model():
    """Not named, the candidates are the children of the model or of a module in it,
    whichever has the most children holding parameters, weighed by the share of the
    parameters under it: a UNet's top-level blocks (not the layers of one block, though a
    block has more children), a transformer's list of layers, a wrapped ResNet's stem,
    stages and head (not the 3 blocks of its largest stage)."""
    torch.manual_seed(6)
    opts = popsim.Options()
    opts.Training.gradientAccumulation(6)
    unet = SmallUNet()
    batch = (torch.randn(2, 3, 8, 8), torch.randint(0, 2, (2, 8, 8)))
    plan = popsim.plan(unet, batch, opts, optimizer_of(unet), ipus=2)
    assert plan.candidates == ["down", "middle", "up", "out"]
    layers = LayerList()
    batch = (torch.randint(0, 20, (2, 5)), torch.randint(0, 20, (2, 5)))
    plan = popsim.plan(layers, batch, opts, optimizer_of(layers), ipus=2)
    assert plan.candidates == [f"layers.{index}" for index in range(6)]
    resnet = WithLoss(torchvision.models.resnet18(num_classes=10))
    batch = (torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,)))
    opts.Training.gradientAccumulation(8)  # 4 IPUs need 7
    plan = popsim.plan(resnet, batch, opts, optimizer_of(resnet), ipus=4)
    assert plan.candidates == [f"model.{name}" for name in (
        "conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool",
        "fc")]


class ListsOfBlocks(nn.Module):
    """A UNet whose down and up paths are ModuleLists of blocks among its other children,
    as Stable Diffusion's UNet holds them: the lists themselves are never called."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.downs = nn.ModuleList(nn.Conv2d(8, 8, 3, padding=1) for _ in range(2))
        self.middle = nn.Conv2d(8, 8, 3, padding=1)
        self.ups = nn.ModuleList(nn.Conv2d(16, 8, 3, padding=1) for _ in range(2))
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x, target):
        h = self.stem(x)
        skips = []
        for down in self.downs:
            h = torch.relu(down(h))
            skips.append(h)
        h = self.middle(h)
        for up in self.ups:
            h = torch.relu(up(torch.cat([h, skips.pop()], 1)))
        return nn.functional.cross_entropy(self.out(h), target)


def test_a_list_of_modules_among_the_candidates_stands_for_its_modules():
    """The default candidates name the modules in a ModuleList in its place; a ModuleList
    named as a candidate is refused with the names to give instead."""
    torch.manual_seed(6)
    opts = popsim.Options()
    opts.Training.gradientAccumulation(6)
    model = ListsOfBlocks()
    batch = (torch.randn(2, 3, 8, 8), torch.randint(0, 2, (2, 8, 8)))
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2)
    assert plan.candidates == ["stem", "downs.0", "downs.1", "middle", "ups.0", "ups.1", "out"]
    with pytest.raises(popsim.OptionError,
                       match=r"popsim.plan: candidate 'downs' is a ModuleList, which forward\(\) "
                             r"never calls \(it calls the modules in it\); name those instead: "
                             r"\['downs.0', 'downs.1'\]"):
        popsim.plan(model, batch, opts, optimizer_of(model), ipus=2,
                    candidates=["stem", "downs", "middle"])


class TwoTowers(nn.Module):
    """CLIP's shape: an image tower and a text tower, the batch's similarities between
    them trained against torch.arange labels."""

    def __init__(self):
        super().__init__()
        self.image = nn.Sequential(*(nn.Linear(16, 16) for _ in range(4)))
        self.text = nn.Sequential(nn.Embedding(20, 16), nn.Linear(16, 16), nn.Linear(16, 16))

    def forward(self, images, tokens):
        similarities = self.image(images) @ self.text(tokens).mean(1).t()
        return nn.functional.cross_entropy(similarities, torch.arange(similarities.shape[0]))


def test_a_second_tower_of_a_model_joins_the_default_candidates():
    """Beside the image tower's layers (the best split), the text tower's, which score
    over a third as high, are candidates too: both towers split over the IPUs."""
    torch.manual_seed(6)
    opts = popsim.Options()
    opts.Training.gradientAccumulation(6)
    model = TwoTowers()
    batch = (torch.randn(2, 16), torch.randint(0, 20, (2, 5)))
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2)
    assert plan.candidates == [f"image.{index}" for index in range(4)] + [
        f"text.{index}" for index in range(3)]


def test_refined_candidates_keep_the_coarse_candidates_splits():
    """Six candidates refine two (2 and 4 each): the profile's best split of the six
    cuts inside the second; the coarse candidates' only split, at their boundary, is
    ranked too, as the profile cannot see what a cut inside a module costs."""
    cycles = [1.0, 1.0, 10.0, 1.0, 1.0, 1.0]
    memory = [{"weights": 100, "code": 1000} for _ in cycles]
    assert _ranked_splits(cycles, memory, 10**9, 2, keep=1) == [(3, 3)]
    assert _ranked_splits(cycles, memory, 10**9, 2, keep=1, spans=[2, 4]) == [(3, 3), (2, 4)]
    # Candidates that refine nothing rank as they are.
    assert _ranked_splits(cycles, memory, 10**9, 2, keep=1, spans=[1] * 6) == [(3, 3)]


def test_a_default_candidate_slower_than_an_ipus_share_splits_into_its_modules():
    """By parameters the translator's parts are its candidates, and the transformer, which
    takes most of the time, cannot be split; profiled, it splits into its encoder and
    decoder (and what is still too slow, into their layers), and the plan is faster than
    the parts' best."""
    torch.manual_seed(7)
    opts = popsim.Options()
    opts.Training.gradientAccumulation(8)
    model = Translator()
    batch = tuple(torch.randint(0, 8000, (2, 64)) for _ in range(3))
    parts = ["source", "target", "transformer", "out"]
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=4)
    assert plan.candidates[:2] == parts[:2] and plan.candidates[-1] == "out"
    assert "transformer" not in plan.candidates
    assert any(name.startswith("transformer.decoder") for name in plan.candidates)
    by_parts = popsim.plan(model, batch, opts, optimizer_of(model), ipus=4, candidates=parts)
    assert plan.chosen.throughput > 1.1 * by_parts.chosen.throughput


def test_default_candidates_fewer_than_the_ipus_are_refined_before_they_are_counted():
    """The translator's 4 parts cannot fill 5 IPUs, but its transformer, refined by time
    into smaller candidates, can: the count is checked after refining."""
    torch.manual_seed(7)
    opts = popsim.Options()
    opts.Training.gradientAccumulation(12)
    model = Translator()
    batch = tuple(torch.randint(0, 8000, (2, 64)) for _ in range(3))
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=5)
    assert len(plan.candidates) >= 5 and len(plan.chosen.split) == 5


class Tied(nn.Module):
    """An embedding, two layers and a decoder tied to the embedding."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 16)
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(2))
        self.head = nn.LayerNorm(16)

    def forward(self, ids, labels):
        hidden = self.embedding(ids)
        for layer in self.layers:
            hidden = torch.relu(layer(hidden))
        logits = self.head(hidden) @ self.embedding.weight.t()
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def test_a_tail_that_shares_weights_with_the_first_ipu_runs_there():
    torch.manual_seed(2)
    model = Tied()
    opts = popsim.Options()
    opts.Training.gradientAccumulation(5)
    batch = (torch.randint(0, 50, (2, 3)), torch.randint(0, 50, (2, 3)))
    candidates = ["embedding", "layers.0", "layers.1"]
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2, candidates=candidates,
                       tail="head")
    assert plan.fits
    assert plan.chosen.annotations()[-1] == \
        'popsim.BeginBlock(model.get_submodule("head"), "tail", ipu_id=0)'
    assert ", then the tail from head" in str(plan)
    # Unnamed, it is found: what follows the last candidate, which forward() calls from a
    # ModuleList (as GPT-2's blocks), as no module it calls holds the candidates.
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2, candidates=candidates)
    assert plan.fits and plan.automatic_tail == "layers.1"
    assert plan.chosen.annotations()[-1] == \
        'popsim.BeginBlock(model.get_submodule("layers.1"), "tail", ipu_id=0, after=True)'
    opts.Training.gradientAccumulation(3)  # 2 IPUs and a tail stage need 5
    with pytest.raises(popsim.OptionError, match=r"Layers that share weights must run on the "
                                                 r"same IPU.*name the module where that part "
                                                 r"starts with tail=.*gradientAccumulation of at "
                                                 r"least 5 for the extra stage"):
        popsim.plan(model, batch, opts, optimizer_of(model), ipus=2, candidates=candidates)


@pytest.mark.parametrize("call,message", [
    (lambda m, b, o: popsim.plan(m, b, o, ipus=1), r"ipus must be an int of 2 or more"),
    (lambda m, b, o: popsim.plan(m, b, o, ipus=2, candidates=["model.nothing"]),
     r"candidate 'model.nothing' is not a submodule of WithLoss"),
    (lambda m, b, o: popsim.plan(m, b, o, ipus=5, candidates=CANDIDATES),
     r"4 candidate modules cannot fill 5 IPUs"),
    (lambda m, b, o: popsim.plan(m, b, o, ipus=2, candidates=CANDIDATES, tail="model.layer4"),
     r"the tail 'model.layer4' is also a candidate"),
    (lambda m, b, o: popsim.plan(m, b, o, ipus=2, candidates=CANDIDATES, tail_after="head"),
     r"tail_after 'head' is not a submodule of WithLoss; name modules as "
     r"model.named_modules\(\) gives them"),
    (lambda m, b, o: popsim.plan(m, b, o, ipus=5, candidates=CANDIDATES * 2),
     r"candidates .* name a module twice"),
    (lambda m, b, o: popsim.plan(m, b, o, optimizer_of(m), ipus=4, candidates=CANDIDATES,
                                 tail="loss"),
     r"pipelined training over 4 IPUs with a tail stage needs Training.gradientAccumulation of "
     r"at least 9 \(each of its 5 stages but the last runs its backward pass as a stage of its "
     r"own\), got 8"),
    (lambda m, b, o: popsim.plan(nn.Linear(2, 2), b, o, ipus=2),
     r"Linear has no modules to split at: neither it nor a module in it has 2 or more "
     r"children; name the "
     r"modules to split at with candidates="),
])
def test_bad_plans_are_refused_naming_the_problem(call, message):
    model, batch, opts = job()
    with pytest.raises(popsim.OptionError, match=message):
        call(model, batch, opts)


def test_a_model_with_its_own_blocks_is_refused():
    model, batch, opts = job()
    popsim.BeginBlock(model.model.layer3, "mine", ipu_id=1)
    with pytest.raises(popsim.OptionError, match=r"already has BeginBlock annotations; .* "
                                                 r"popsim.removeBlocks\(model\) first"):
        popsim.plan(model, batch, opts, ipus=2, candidates=CANDIDATES)


def test_spare_memory_goes_to_matmuls_that_ran_in_passes():
    """With a small availableMemoryProportion the matmuls run in serial passes;
    the planner gives their IPUs' spare memory to the temporaries (fewer
    passes, a faster plan) and says so."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).eval()
    opts = popsim.Options().deviceIterations(4)
    opts.setAvailableMemoryProportion({"IPU0": 0.01, "IPU1": 0.01})
    opts.Simulator.memoryPerIpu("64MiB")
    plan = popsim.plan(model, torch.randn(256, 1024), opts, ipus=2)
    chosen = plan.chosen
    assert chosen.memory_proportions and all(v > 0.01 for v in chosen.memory_proportions.values())
    same_split = [p for p in plan.runners_up if p.layout == chosen.layout
                  and not p.memory_proportions]
    assert same_split and chosen.throughput > same_split[0].throughput
    assert "opts.setAvailableMemoryProportion({" in str(plan)
    applied = plan.apply(model, opts)
    assert all(applied.available_memory_proportion[ipu] == value
               for ipu, value in chosen.memory_proportions.items())
    popsim.removeBlocks(model)


class TiedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 16)
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(3))

    def forward(self, ids):
        hidden = self.embedding(ids)
        for layer in self.layers:
            hidden = torch.relu(layer(hidden))
        return hidden


class TiedHeads(nn.Module):
    """An encoder, then heads written in forward() (no module starts them),
    the decoder tied to the encoder's embedding."""

    def __init__(self):
        super().__init__()
        self.encoder = TiedEncoder()

    def forward(self, ids, labels):
        hidden = self.encoder(ids)
        logits = hidden[:, :2] @ self.encoder.embedding.weight.t()
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels[:, :2].flatten())


def test_a_tail_after_a_module_takes_everything_after_it_to_ipu_0():
    """tail_after: the heads start when the encoder returns (no module marks
    them), with BeginBlock(after=True); the run matches the prediction."""
    torch.manual_seed(4)
    model = TiedHeads()
    opts = popsim.Options()
    opts.Training.gradientAccumulation(5)
    batch = (torch.randint(0, 50, (2, 4)), torch.randint(0, 50, (2, 4)))
    candidates = ["encoder.embedding", "encoder.layers.0", "encoder.layers.1", "encoder.layers.2"]
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2, candidates=candidates,
                       tail_after="encoder")
    assert plan.chosen.annotations()[-1] == \
        'popsim.BeginBlock(model.get_submodule("encoder"), "tail", ipu_id=0, after=True)'
    assert ", then the tail after encoder" in str(plan)
    trainer = popsim.trainingModel(model, plan.apply(model, opts), optimizer_of(model))
    trainer(torch.randint(0, 50, (10, 4)), torch.randint(0, 50, (10, 4)))
    assert trainer.sizingReport().throughput == pytest.approx(plan.chosen.throughput, rel=1e-12)
    trainer.destroy()
    popsim.removeBlocks(model)
    with pytest.raises(popsim.OptionError, match="takes tail or tail_after, not both"):
        popsim.plan(model, batch, opts, optimizer_of(model), ipus=2, candidates=candidates,
                    tail="encoder", tail_after="encoder")


def test_begin_block_after_a_module_starts_the_block_when_it_returns():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    popsim.BeginBlock(model[0], "A", ipu_id=0, after=True)
    assert "after=True" in repr(model[0]._popsim_block_after)
    assert "Linear(in_features=3, out_features=3, bias=True) then BeginBlock(user_id=A, " \
        "ipu_id=0, after=True)" in popsim.module_repr(model)
    with pytest.raises(popsim.OptionError, match=r"BeginBlock\(after=True\): this Linear module has "
                       r"already been assigned to a block"):
        popsim.BeginBlock(model[0], "B", ipu_id=1, after=True)
    with pytest.raises(popsim.OptionError, match=r"after=True\) takes a torch.nn.Module"):
        popsim.BeginBlock(torch.relu, "C", after=True)
    popsim.removeBlocks(model)
    assert not model[0]._forward_hooks


def test_a_tail_that_shares_weights_is_found_without_being_named():
    """No tail given: the heads after the encoder share its embedding, so the
    planner runs what follows the encoder (the innermost module holding the
    candidates) on IPU 0 by itself, and says so."""
    torch.manual_seed(5)
    model = TiedHeads()
    opts = popsim.Options()
    opts.Training.gradientAccumulation(5)
    batch = (torch.randint(0, 50, (2, 4)), torch.randint(0, 50, (2, 4)))
    plan = popsim.plan(model, batch, opts, optimizer_of(model), ipus=2,
                       candidates=["encoder.layers.0", "encoder.layers.1", "encoder.layers.2"])
    assert plan.fits and plan.automatic_tail == "encoder"
    assert "What follows encoder shares weights with the first IPU's layers" in str(plan)
    assert plan.chosen.annotations()[-1] == \
        'popsim.BeginBlock(model.get_submodule("encoder"), "tail", ipu_id=0, after=True)'
    opts.Training.gradientAccumulation(3)  # 2 IPUs and a tail stage need 5
    with pytest.raises(popsim.OptionError, match=r"share weights must run on the same IPU.*"
                                                 r"with Training.gradientAccumulation of at "
                                                 r"least 5 for the extra stage"):
        popsim.plan(model, batch, opts, optimizer_of(model), ipus=2,
                    candidates=["encoder.layers.0", "encoder.layers.1", "encoder.layers.2"])
