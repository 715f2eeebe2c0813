"""Models shared by the Python tests."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import popsim


# The tutorial's network (tutorials/pipelining/mnist_network.py): plain, and in blocks B1..B4.
from pipelining.mnist_network import BlockedNetwork as BlockedMnistNetwork  # noqa: E402
from pipelining.mnist_network import Network as MnistNetwork  # noqa: E402
# A blocked model's output and its cross-entropy loss, the loss in block B4.
from pipelining.mnist_network import TrainingModelWithLoss as BlockedWithLoss  # noqa: E402


class Function(nn.Module):
    """A module that calls a function of its inputs: a model without parameters."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, *args):
        return self.function(*args)


class WithLoss(nn.Module):
    """Training wrapper: `model`'s output and its cross-entropy loss. The model is the
    attribute `model`, so its tensors are named model.<name> in popsim's messages."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, labels):
        output = self.model(x)
        return output, F.cross_entropy(output, labels)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(48, 64), nn.GELU(), nn.Dropout(0.2),
                                 nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 5),
                                 nn.LogSoftmax(dim=1))

    def forward(self, x):
        return self.net(x)


def resnet18():
    """torchvision's ResNet-18 for 10 classes, with non-trivial batch-norm statistics."""
    model = torchvision.models.resnet18(num_classes=10)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    return model.eval()


class TokenClassifier(nn.Module):
    """Embedding, a transformer encoder layer and a linear head."""

    def __init__(self, norm_first=False, activation="relu", batch_first=True):
        super().__init__()
        self.batch_first = batch_first
        self.embed = nn.Embedding(50, 32)
        self.encoder = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, activation=activation,
                                                  batch_first=batch_first, norm_first=norm_first)
        self.head = nn.Linear(32, 7)

    def forward(self, ids):
        x = self.embed(ids)
        if not self.batch_first:
            x = x.transpose(0, 1)
        x = self.encoder(x)
        if not self.batch_first:
            x = x.transpose(0, 1)
        return self.head(x.mean(dim=1))


def blocked_resnet18(ipus):
    """ResNet-18 split with BeginBlock: the stem and its four stages spread over `ipus` IPUs."""
    model = resnet18()
    starts = [model.conv1, model.layer1, model.layer2, model.layer3, model.layer4]
    for index, module in enumerate(starts):
        popsim.BeginBlock(module, f"R{index}", ipu_id=index * ipus // len(starts))
    return model


def assert_sgd_steps_match_eager(make_model, batches, lr=0.1):
    """Trains make_model() with popsim and copies in eager PyTorch float32 and
    float64, one SGD step per batch of (inputs, target); popsim's weights and
    buffers may be no further from float64's than eager float32's are, plus
    1e-5 of the tensor's largest value and 1e-6 (biases whose gradient is zero
    up to rounding, such as one before a normalisation, are rounding noise in
    every run). The model returns (output, loss)."""
    model = make_model()
    references = {}
    for dtype in (torch.float32, torch.float64):
        reference = make_model().to(dtype)
        reference.load_state_dict(model.state_dict())
        optimizer = torch.optim.SGD(reference.parameters(), lr=lr)
        for batch in batches:
            optimizer.zero_grad()
            reference(*[t.to(dtype) if t.is_floating_point() else t for t in batch])[1].backward()
            optimizer.step()
        references[dtype] = reference.state_dict()
    trainer = popsim.trainingModel(model, None, torch.optim.SGD(model.parameters(), lr=lr))
    for batch in batches:
        trainer(*batch)
    trainer.copyWeightsToHost()
    failures = []
    for name, exact in references[torch.float64].items():
        if not exact.is_floating_point():
            assert torch.equal(model.state_dict()[name], references[torch.float32][name]), name
            continue
        ours = (model.state_dict()[name].double() - exact).abs().max().item()
        eager = (references[torch.float32][name].double() - exact).abs().max().item()
        if ours > eager + 1e-5 * exact.abs().max().item() + 1e-6:
            failures.append(f"{name}: popsim {ours:.3g} from float64, eager float32 {eager:.3g}")
    assert not failures, "further from eager float64 than eager float32:\n" + "\n".join(failures)


def assert_split_training_matches_one_ipu(reference, inputs, kind, accumulation, lr,
                                          split=None):
    """Trains copies of `reference` two steps of `inputs` on one IPU and pipelined or
    sharded (`kind`) over AutoIncrement stages; the weights must agree. `split(model,
    on)` turns a model's blocks on or off (None: the blocks stay as they are)."""
    from conftest import assert_close

    def train(strategy):
        model = copy.deepcopy(reference)
        if split is not None:
            split(model, strategy is not None)
        opts = popsim.Options()
        opts.Training.gradientAccumulation(accumulation)
        if strategy is not None:
            opts.setExecutionStrategy(strategy)
        trainer = popsim.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=lr))
        for _ in range(2):
            trainer(*inputs)
        trainer.copyWeightsToHost()
        return model.state_dict()

    single = train(None)
    stages = popsim.AutoStage.AutoIncrement
    both = train(popsim.PipelinedExecution(stages) if kind == "pipelined"
                 else popsim.ShardedExecution(stages))
    for name, weight in single.items():
        assert_close(both[name], weight, msg=lambda message, name=name: f"{name}: {message}")


class Translator(nn.Module):
    """An encoder-decoder whose embeddings and output projection hold most of the
    parameters (a large vocabulary) while its transformer takes most of the time."""

    def __init__(self, vocabulary=8000, width=64):
        super().__init__()
        self.source = nn.Embedding(vocabulary, width)
        self.target = nn.Embedding(vocabulary, width)
        self.transformer = nn.Transformer(width, 2, 2, 2, 128, dropout=0.0, batch_first=True)
        self.out = nn.Linear(width, vocabulary)

    def forward(self, source, target, labels):
        logits = self.out(self.transformer(self.source(source), self.target(target)))
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
