"""Training models that share modules: a GAN's two training models, each running the
generator and the discriminator and training one of them.

Each training model takes the weights the others trained before it runs, so that
alternating them trains as eager PyTorch's alternating steps do; the host model,
inference models and destroy() see all of them. Each test checks against eager
PyTorch training the same schedule.
"""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from conftest import assert_close

LATENT, FEATURES = 4, 6


def generator():
    # A batch norm: its running statistics are buffers both training models update (the
    # discriminator's step runs the generator in train mode too). No bias before it: its
    # exact gradient is zero, and Adam would turn rounding noise into full steps.
    return nn.Sequential(nn.Linear(LATENT, 8, bias=False), nn.BatchNorm1d(8), nn.ReLU(),
                         nn.Linear(8, FEATURES))


def discriminator():
    return nn.Sequential(nn.Linear(FEATURES, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))


class GeneratorLoss(nn.Module):
    """The generator's step: fool the discriminator."""

    def __init__(self, g, d):
        super().__init__()
        self.g, self.d = g, d

    def forward(self, z):
        scores = self.d(self.g(z))
        return F.binary_cross_entropy_with_logits(scores, torch.ones_like(scores))


class DiscriminatorLoss(nn.Module):
    """The discriminator's step: real rows score 1, generated ones 0."""

    def __init__(self, g, d):
        super().__init__()
        self.g, self.d = g, d

    def forward(self, real, z):
        real_scores = self.d(real)
        fake_scores = self.d(self.g(z).detach())
        return (F.binary_cross_entropy_with_logits(real_scores, torch.ones_like(real_scores))
                + F.binary_cross_entropy_with_logits(fake_scores, torch.zeros_like(fake_scores)))


def batches(count, rows=8):
    return [(torch.randn(rows, FEATURES) + 2.0, torch.randn(rows, LATENT)) for _ in range(count)]


def eager_step(loss_model, optimizer, *inputs):
    optimizer.zero_grad()
    loss = loss_model(*inputs)
    loss.backward()
    optimizer.step()
    return loss.detach()


class Gan:
    """popsim's two training models over one generator and discriminator, and eager
    copies trained on the same batches."""

    def __init__(self):
        self.g, self.d = generator(), discriminator()
        self.eager_g, self.eager_d = copy.deepcopy(self.g), copy.deepcopy(self.d)
        self.g_optimizer = torch.optim.Adam(self.g.parameters(), lr=1e-2)
        self.d_optimizer = torch.optim.Adam(self.d.parameters(), lr=1e-2)
        self.eager_g_optimizer = torch.optim.Adam(self.eager_g.parameters(), lr=1e-2)
        self.eager_d_optimizer = torch.optim.Adam(self.eager_d.parameters(), lr=1e-2)
        self.g_trainer = popsim.trainingModel(GeneratorLoss(self.g, self.d),
                                              optimizer=self.g_optimizer)
        self.d_trainer = popsim.trainingModel(DiscriminatorLoss(self.g, self.d),
                                              optimizer=self.d_optimizer)

    def step_d(self, real, z):
        expected = eager_step(DiscriminatorLoss(self.eager_g, self.eager_d),
                              self.eager_d_optimizer, real, z)
        assert_close(self.d_trainer(real, z), expected)

    def step_g(self, z):
        expected = eager_step(GeneratorLoss(self.eager_g, self.eager_d),
                              self.eager_g_optimizer, z)
        assert_close(self.g_trainer(z), expected)

    def assert_host_matches_eager(self):
        for model, eager in ((self.g, self.eager_g), (self.d, self.eager_d)):
            state = model.state_dict()
            for name, expected in eager.state_dict().items():
                assert_close(state[name], expected)


def test_alternating_training_models_that_share_modules_train_as_eager():
    gan = Gan()
    for real, z in batches(5):
        gan.step_d(real, z)
        gan.step_g(z)
    gan.assert_host_matches_eager()
    # Several steps of one model in a row, then the other's.
    data = batches(3)
    for real, z in data:
        gan.step_d(real, z)
    for _, z in data:
        gan.step_g(z)
    gan.assert_host_matches_eager()


def test_an_inference_model_of_a_shared_module_sees_the_weights_both_trained():
    gan = Gan()
    z = torch.randn(8, LATENT)
    sample = popsim.inferenceModel(gan.g.eval())
    assert_close(sample(z), gan.eager_g.eval()(z))  # compiled in eval mode, and stays so
    gan.g.train()
    gan.eager_g.train()
    for real, noise in batches(2):
        gan.step_d(real, noise)
        gan.step_g(noise)
    assert_close(sample(z), gan.eager_g.eval()(z))
    gan.eager_g.train()


def test_a_training_model_wrapped_while_another_holds_newer_weights_leaves_them():
    # A third training model sharing the generator comes while the discriminator's model
    # holds weights newer than the host's: they go home before that model uploads.
    gan = Gan()
    data = batches(3)
    optimizer = torch.optim.SGD(gan.g.parameters(), lr=0.1)  # (using the host model syncs it)
    gan.step_d(*data[0])
    gan.step_d(*data[1])
    popsim.trainingModel(Regression(gan.g), optimizer=optimizer)
    gan.step_d(*data[2])
    gan.step_g(data[2][1])
    gan.assert_host_matches_eager()


def test_destroying_one_of_two_training_models_leaves_the_other_syncing_the_shared_modules():
    gan = Gan()
    g_class, d_class = type(gan.g), type(gan.d)
    data = batches(2)
    gan.step_d(*data[0])
    gan.step_g(data[0][1])
    gan.step_d(*data[1])
    gan.assert_host_matches_eager()
    # The shared module is wrapped by neither: which destroy() it would mean is unclear.
    with pytest.raises(AttributeError):
        gan.g.destroy
    # The generator's training model holds the discriminator as it was before the last
    # step: destroying it leaves the host's newer weights alone.
    gan.g_trainer.model.destroy()
    assert not gan.g_trainer.isCompiled()
    gan.assert_host_matches_eager()
    assert type(gan.g) is not g_class  # still synced: the other model trains it
    gan.d_trainer.destroy()
    assert type(gan.g) is g_class and type(gan.d) is d_class
    gan.assert_host_matches_eager()


def test_a_training_model_whose_sharer_went_keeps_the_weights_it_trained_since():
    gan = Gan()
    data = batches(3)
    gan.step_d(*data[0])
    gan.step_g(data[0][1])
    gan.step_d(*data[1])  # the discriminator's model now holds newer weights than the host
    gan.g_trainer.destroy()
    gan.step_d(*data[2])  # they go home before it takes the host's
    gan.assert_host_matches_eager()


def test_wrapping_a_shared_module_for_training_again_while_its_models_train():
    # A third training model, of the generator alone, joins the other two.
    gan = Gan()
    real, z = batches(1)[0]
    gan.step_d(real, z)
    target = torch.randn(8, FEATURES)
    alone_optimizer = torch.optim.SGD(gan.g.parameters(), lr=0.1)
    eager_alone_optimizer = torch.optim.SGD(gan.eager_g.parameters(), lr=0.1)
    alone = popsim.trainingModel(Regression(gan.g), optimizer=alone_optimizer)
    assert_close(alone(z, target),
                 eager_step(Regression(gan.eager_g), eager_alone_optimizer, z, target))
    gan.step_g(z)
    gan.step_d(real, z)
    assert_close(alone(z, target),
                 eager_step(Regression(gan.eager_g), eager_alone_optimizer, z, target))
    gan.assert_host_matches_eager()
    with pytest.raises(popsim.InputError, match="^This model is already wrapped"):
        popsim.trainingModel(alone.model)


class Regression(nn.Module):
    def __init__(self, g):
        super().__init__()
        self.g = g

    def forward(self, z, target):
        return F.mse_loss(self.g(z), target)


def test_copy_weights_to_host_of_a_model_another_one_ran_past_keeps_its_steps():
    # The discriminator's model last saw the generator before the generator's step: its
    # explicit copy home takes that step first instead of undoing it.
    gan = Gan()
    real, z = batches(1)[0]
    gan.step_d(real, z)
    gan.step_g(z)
    gan.assert_host_matches_eager()
    gan.d_trainer.copyWeightsToHost()
    gan.assert_host_matches_eager()
    gan.step_d(real, z)
    gan.assert_host_matches_eager()


def test_weights_written_to_one_device_reach_the_other_models():
    # A checkpoint loaded through one training model right after the other one ran, and a
    # host edit copied to one device: both hold for every model that shares them.
    gan = Gan()
    data = batches(3)
    checkpoint = copy.deepcopy(gan.g_trainer.state_dict())
    eager_checkpoint = copy.deepcopy(GeneratorLoss(gan.eager_g, gan.eager_d).state_dict())
    gan.step_g(data[0][1])
    gan.step_d(*data[0])
    gan.g_trainer.load_state_dict(checkpoint)
    GeneratorLoss(gan.eager_g, gan.eager_d).load_state_dict(eager_checkpoint)
    gan.assert_host_matches_eager()
    gan.step_d(*data[1])
    gan.step_g(data[1][1])
    gan.assert_host_matches_eager()
    with torch.no_grad():
        gan.g[3].weight.mul_(0.5)
        gan.eager_g[3].weight.mul_(0.5)
    gan.g_trainer.copyWeightsToDevice()
    gan.step_d(*data[2])  # trains on the edited generator, and does not send its old copy home
    gan.assert_host_matches_eager()


def test_host_load_state_dict_is_not_overwritten_by_a_later_copy_home():
    gan = Gan()
    checkpoint = copy.deepcopy(gan.d.state_dict())
    real, z = batches(1)[0]
    gan.step_d(real, z)
    gan.d.load_state_dict(checkpoint)  # no read of the host model in between
    torch.testing.assert_close(gan.d.state_dict(), checkpoint, rtol=0, atol=0)


def test_one_optimizer_for_two_training_models_is_refused():
    gan = Gan()
    message = (r"^This optimizer already trains another training model \(popsim training model "
               r"\(not compiled\) of GeneratorLoss\)\. Each training model keeps its optimizer's "
               r"state .* on its own device, so two cannot share one: give each its own")
    with pytest.raises(popsim.InputError, match=message):
        popsim.trainingModel(Regression(gan.g), optimizer=gan.g_optimizer)
    with pytest.raises(popsim.InputError, match=message):
        gan.d_trainer.setOptimizer(gan.g_optimizer)
    gan.g_trainer.destroy()
    popsim.trainingModel(Regression(gan.g), optimizer=gan.g_optimizer)  # free again


def test_a_parameter_tied_between_modules_of_two_training_models_trains_as_eager():
    # No module is shared, only the tensor: b.weight is a.weight.
    a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    b.weight = a.weight
    eager = copy.deepcopy(nn.ModuleList([a, b]))
    trainers = [popsim.trainingModel(Regression(m), optimizer=torch.optim.SGD(m.parameters(), 0.1))
                for m in (a, b)]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in eager]
    for index in (0, 1, 0, 1):
        z, target = torch.randn(4, 3), torch.randn(4, 3)
        expected = eager_step(Regression(eager[index]), optimizers[index], z, target)
        assert_close(trainers[index](z, target), expected)
    assert_close(b.weight, eager[1].weight)
    assert_close(a.bias, eager[0].bias)
