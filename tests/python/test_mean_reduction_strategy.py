"""Training.setMeanAccumulationAndReplicationReductionStrategy, as PopTorch's:
with MeanReductionStrategy.Running the gradient accumulators hold the running
mean of a step's micro-batch gradients (so they cannot overflow where the sum
would); with Post (the default) they hold the sum, divided when the step reads
it. Both train to the mean gradient."""

import copy
import logging

import pytest
import torch
import torch.nn as nn

import popsim
from popsim import MeanReductionStrategy, ReductionType


class Regression(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(5, 3)

    def forward(self, x, target):
        out = self.layer(x)
        return out, nn.functional.mse_loss(out, target)


def train(model, x, target, strategy=None, accumulation=4, calls=2, lr=0.1,
          reduction=ReductionType.Mean, strategy_=None):
    opts = popsim.Options()
    opts.Training.gradientAccumulation(accumulation).accumulationAndReplicationReductionType(
        reduction)
    if strategy is not None:
        opts.Training.setMeanAccumulationAndReplicationReductionStrategy(strategy)
    if strategy_ is not None:
        opts.setExecutionStrategy(strategy_)
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=lr))
    for _ in range(calls):
        trainer(x, target)
    trainer.copyWeightsToHost()
    return model


def eager_mean_gradient_training(model, x, target, accumulation, calls, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(calls):
        optimizer.zero_grad()
        for micro_x, micro_target in zip(x.chunk(accumulation), target.chunk(accumulation)):
            (model(micro_x, micro_target)[1] / accumulation).backward()
        optimizer.step()
    return model


@pytest.mark.parametrize("strategy", [None, MeanReductionStrategy.Post,
                                      MeanReductionStrategy.Running])
def test_both_strategies_train_to_the_mean_gradient(strategy):
    torch.manual_seed(0)
    model = Regression()
    x, target = torch.randn(4 * 6, 5), torch.randn(4 * 6, 3)
    expected = eager_mean_gradient_training(copy.deepcopy(model), x, target, 4, 2, 0.1)
    trained = train(copy.deepcopy(model), x, target, strategy)
    for name, want in expected.state_dict().items():
        torch.testing.assert_close(trained.state_dict()[name], want, rtol=1e-5, atol=1e-6)


class Huge(nn.Module):
    """Gradients of 1e38 per micro-batch: four of them sum past float32's largest."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(3, 1, bias=False)
        with torch.no_grad():
            self.layer.weight.fill_(0.1)

    def forward(self, x):
        return popsim.identity_loss(self.layer(x).sum(), reduction="none")


def test_a_running_mean_stays_finite_where_the_sum_overflows():
    x = torch.full((4, 3), 1e38)  # one row per micro-batch
    results = {}
    for strategy in (MeanReductionStrategy.Post, MeanReductionStrategy.Running):
        model = Huge()
        opts = popsim.Options()
        opts.Training.gradientAccumulation(4)
        opts.Training.setMeanAccumulationAndReplicationReductionStrategy(strategy)
        trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=1e-38))
        trainer(x)
        trainer.copyWeightsToHost()
        results[strategy] = model.layer.weight.detach().clone()
    assert torch.isinf(results[MeanReductionStrategy.Post]).all()  # 4e38 overflowed
    # The mean of four gradients of 1e38, times lr 1e-38: every weight moves by 1.
    torch.testing.assert_close(results[MeanReductionStrategy.Running],
                               torch.full((1, 3), 0.1 - 1.0), rtol=1e-6, atol=0)


def test_a_pipelined_running_mean_equals_one_ipu_exactly():
    class Blocked(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = nn.Linear(5, 8)
            self.second = nn.Linear(8, 3)

        def forward(self, x, target):
            with popsim.Block("A"):
                x = torch.relu(self.first(x))
            with popsim.Block("B"):
                out = self.second(x)
                return out, nn.functional.mse_loss(out, target)

    torch.manual_seed(1)
    model = Blocked()
    x, target = torch.randn(4 * 2, 5), torch.randn(4 * 2, 3)
    one = popsim.PipelinedExecution(popsim.Stage("A", "B").ipu(0))
    two = popsim.PipelinedExecution(popsim.Stage("A").ipu(0), popsim.Stage("B").ipu(1))
    single = train(copy.deepcopy(model), x, target, MeanReductionStrategy.Running, strategy_=one)
    split = train(copy.deepcopy(model), x, target, MeanReductionStrategy.Running, strategy_=two)
    for name, want in single.state_dict().items():
        assert torch.equal(split.state_dict()[name], want), name


def test_with_the_sum_reduction_the_strategy_changes_nothing():
    torch.manual_seed(2)
    model = Regression()
    x, target = torch.randn(4 * 3, 5), torch.randn(4 * 3, 3)
    post = train(copy.deepcopy(model), x, target, MeanReductionStrategy.Post,
                 reduction=ReductionType.Sum)
    running = train(copy.deepcopy(model), x, target, MeanReductionStrategy.Running,
                    reduction=ReductionType.Sum)
    for name, want in post.state_dict().items():
        assert torch.equal(running.state_dict()[name], want), name


def test_the_option_is_validated_recorded_and_post_and_loss_is_deprecated(caplog):
    opts = popsim.Options()
    assert opts.Training.mean_reduction_strategy == MeanReductionStrategy.Post
    with pytest.raises(popsim.OptionError, match="expects a popsim.MeanReductionStrategy"):
        opts.Training.setMeanAccumulationAndReplicationReductionStrategy("Running")
    opts.Training.setMeanAccumulationAndReplicationReductionStrategy(
        MeanReductionStrategy.Running)
    assert opts.Training.toDict()["mean_reduction_strategy"] == "Running"
    with caplog.at_level(logging.WARNING, logger="popsim"):
        opts.Training.setMeanAccumulationAndReplicationReductionStrategy(
            MeanReductionStrategy.PostAndLoss)
    assert "PostAndLoss is deprecated" in caplog.text
