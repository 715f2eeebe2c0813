"""Replica-grouped parameters (PopTorch's replicaGrouping, CommGroupType,
VariableRetrievalMode): one value per group of replicas, each replica
computing with its group's, gradients summed within the group only (divided
by every replica for the mean, as PopART's Post strategy does), and the host
reading one value per group back. Checked against the same arithmetic done
replica by replica in eager PyTorch."""

import copy
import pickle

import pytest
import torch
from torch import nn

import popsim
from conftest import assert_close

REPLICAS = 4
ROWS = 3  # per replica and micro-batch


class Grouped(nn.Module):
    """A linear map whose weight has one value per group (leading dimension)
    and an ordinary bias shared by every replica."""

    def __init__(self, groups):
        super().__init__()
        torch.manual_seed(0)
        self.weight = nn.Parameter(torch.randn(groups, 2, 5))
        self.bias = nn.Parameter(torch.randn(2))

    def forward(self, x, target):  # the traced weight is one group's: [2, 5]
        out = x @ self.weight.t() + self.bias
        return out, nn.functional.mse_loss(out, target)


def groups_of(kind, shards):
    if kind == popsim.CommGroupType.Consecutive:
        return [r // shards for r in range(REPLICAS)]
    if kind == popsim.CommGroupType.Orthogonal:
        return [r % (REPLICAS // shards) for r in range(REPLICAS)]
    return list(range(REPLICAS))  # Ungrouped / NoGrouping


def batches(steps):
    generator = torch.Generator().manual_seed(5)
    return [(torch.randn(REPLICAS * ROWS, 5, generator=generator),
             torch.randn(REPLICAS * ROWS, 2, generator=generator)) for _ in range(steps)]


def eager_steps(weight, bias, groups, steps, lr):
    """SGD as the replicas do it: replica r takes rows r*ROWS.. of each batch
    with its group's weight; a group's weight moves by its replicas' summed
    gradients / REPLICAS, the bias by every replica's."""
    weight, bias = weight.clone(), bias.clone()
    for x, target in batches(steps):
        weight_grads = torch.zeros_like(weight)
        bias_grad = torch.zeros_like(bias)
        for r in range(REPLICAS):
            w = weight[groups[r]].clone().requires_grad_()
            b = bias.clone().requires_grad_()
            rows = slice(r * ROWS, (r + 1) * ROWS)
            loss = nn.functional.mse_loss(x[rows] @ w.t() + b, target[rows])
            loss.backward()
            weight_grads[groups[r]] += w.grad
            bias_grad += b.grad
        weight -= lr * weight_grads / REPLICAS
        bias -= lr * bias_grad / REPLICAS
    return weight, bias


@pytest.mark.parametrize("kind,shards", [(popsim.CommGroupType.Consecutive, 2),
                                         (popsim.CommGroupType.Orthogonal, 2),
                                         (popsim.CommGroupType.NoGrouping, 0)])
def test_groups_train_on_their_own_replicas_gradients(kind, shards):
    groups = groups_of(kind, shards)
    model = Grouped(max(groups) + 1)
    start_weight, start_bias = model.weight.detach().clone(), model.bias.detach().clone()
    trainer = popsim.trainingModel(model, popsim.Options().replicationFactor(REPLICAS),
                                   popsim.optim.SGD(model.parameters(), lr=0.1))
    trainer.weight.replicaGrouping(kind, shards, popsim.VariableRetrievalMode.OnePerGroup)
    for x, target in batches(3):
        trainer(x, target)
    weight, bias = eager_steps(start_weight, start_bias, groups, 3, 0.1)
    trainer.copyWeightsToHost()
    assert model.weight.shape == weight.shape
    assert_close(model.weight.detach(), weight)
    assert_close(model.bias.detach(), bias)
    # Every group moved away from where it started, each its own way.
    assert not torch.equal(model.weight[0], model.weight[1])
    # Groups of one reduce nothing: only the bias is summed over the replicas.
    reductions = [step for step in trainer._executable.program()
                  if step.op == "replica_all_reduce"]
    assert len(reductions) == (1 if kind == popsim.CommGroupType.NoGrouping else 2)


@pytest.mark.parametrize("kind,shards", [(popsim.CommGroupType.NoGrouping, 0),
                                         (popsim.CommGroupType.Consecutive, 1)])
def test_all_replicas_retrieval_of_groups_of_one_reads_each_replica(kind, shards):
    """With a group per replica, AllReplicas (a value per replica) reads what
    OnePerGroup does."""
    results = []
    for mode in (popsim.VariableRetrievalMode.OnePerGroup,
                 popsim.VariableRetrievalMode.AllReplicas):
        model = Grouped(REPLICAS)
        trainer = popsim.trainingModel(model, popsim.Options().replicationFactor(REPLICAS),
                                       popsim.optim.SGD(model.parameters(), lr=0.1))
        trainer.weight.replicaGrouping(kind, shards, mode)
        for x, target in batches(2):
            trainer(x, target)
        trainer.copyWeightsToHost()
        results.append(model.weight.detach().clone())
    assert torch.equal(results[0], results[1])
    assert not torch.equal(results[1][0], results[1][1])


def test_the_running_strategy_takes_each_groups_mean():
    """gradientAccumulation 2 with MeanReductionStrategy.Running: each replica
    averages its micro-batches, then a grouped weight takes its group's mean
    and the bias every replica's."""
    kind, shards = popsim.CommGroupType.Consecutive, 2
    groups = groups_of(kind, shards)
    model = Grouped(2)
    start_weight, start_bias = model.weight.detach().clone(), model.bias.detach().clone()
    opts = popsim.Options().replicationFactor(REPLICAS)
    opts.Training.gradientAccumulation(2).setMeanAccumulationAndReplicationReductionStrategy(
        popsim.MeanReductionStrategy.Running)
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1))
    trainer.weight.replicaGrouping(kind, shards, popsim.VariableRetrievalMode.OnePerGroup)
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(2 * REPLICAS * ROWS, 5, generator=generator)
    target = torch.randn(2 * REPLICAS * ROWS, 2, generator=generator)
    trainer(x, target)
    # Replica r takes micro-batch rows [m][r] of the combined batch (replica-major).
    weight_grads, bias_grad = torch.zeros_like(start_weight), torch.zeros_like(start_bias)
    for r in range(REPLICAS):
        for m in range(2):
            w = start_weight[groups[r]].clone().requires_grad_()
            b = start_bias.clone().requires_grad_()
            rows = slice((m * REPLICAS + r) * ROWS, (m * REPLICAS + r + 1) * ROWS)
            nn.functional.mse_loss(x[rows] @ w.t() + b, target[rows]).backward()
            weight_grads[groups[r]] += w.grad / 2 / shards  # the group's mean
            bias_grad += b.grad / 2 / REPLICAS
    trainer.copyWeightsToHost()
    assert_close(model.weight.detach(), start_weight - 0.1 * weight_grads)
    assert_close(model.bias.detach(), start_bias - 0.1 * bias_grad)


def test_momentum_is_kept_per_group_and_read_back_per_group():
    model = Grouped(2)
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    trainer = popsim.trainingModel(model, popsim.Options().replicationFactor(REPLICAS),
                                   optimizer)
    trainer.per_replica_params["weight"] = (popsim.CommGroupType.Consecutive, 2,
                                            popsim.VariableRetrievalMode.OnePerGroup)
    for x, target in batches(2):
        trainer(x, target)
    state = optimizer.state_dict()["state"]
    momentum = [entry["momentum_buffer"] for entry in state.values()]
    assert [tuple(m.shape) for m in momentum] == [(2, 2, 5), (2,)]
    assert not torch.equal(momentum[0][0], momentum[0][1])
    # The state goes back to the replicas per group: a model that resumes from it
    # trains on as this one does.
    saved = optimizer.state_dict()
    twin = Grouped(2)
    twin.load_state_dict(model.state_dict())
    twin_optimizer = popsim.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    twin_optimizer.load_state_dict(saved)
    resumed = popsim.trainingModel(twin, popsim.Options().replicationFactor(REPLICAS),
                                   twin_optimizer)
    resumed.per_replica_params["weight"] = trainer.per_replica_params["weight"]
    x, target = batches(3)[2]
    trainer(x, target)
    resumed(x, target)
    assert_close(twin.weight.detach(), model.weight.detach())


def test_poptorch_state_of_a_grouped_parameter_has_a_row_per_group_its_step_too():
    """ipu_state, as PopTorch lays it out for a replica-grouped parameter: every entry,
    the step count included, has one row per group; loaded back, it resumes training."""
    model = Grouped(REPLICAS)
    optimizer = popsim.optim.AdamW(model.parameters(), lr=0.1)
    trainer = popsim.trainingModel(model, popsim.Options().replicationFactor(REPLICAS),
                                   optimizer)
    trainer.weight.replicaGrouping(popsim.CommGroupType.NoGrouping, 0,
                                   popsim.VariableRetrievalMode.OnePerGroup)
    x, target = batches(1)[0]
    trainer(x, target)
    ipu_state = optimizer.state_dict()["ipu_state"]
    grouped = {key: value for key, value in ipu_state.items() if key.endswith("model.weight")}
    assert sorted(grouped) == ["Accl1___model.weight", "Accl2___model.weight",
                               "Step___model.weight"]
    assert all(value.shape[0] == REPLICAS for value in grouped.values())
    assert grouped["Step___model.weight"].tolist() == [1] * REPLICAS
    assert ipu_state["Step___model.bias"].dim() == 0
    optimizer.load_state_dict(optimizer.state_dict())  # the rows read back as one count
    trainer(x, target)
    assert optimizer.state_dict()["ipu_state"]["Step___model.weight"].tolist() == [2] * REPLICAS
    uneven = dict(optimizer.state_dict(), ipu_state={
        **ipu_state, "Step___model.weight": torch.tensor([1, 2, 1, 1])})
    with pytest.raises(popsim.OptionError, match=r"should hold one step count per replica "
                                                 r"group of weight \(4\), all the same"):
        optimizer.load_state_dict(uneven)


def test_inference_replicas_compute_with_their_groups_values():
    model = Grouped(2)
    ipu = popsim.inferenceModel(model, popsim.Options().replicationFactor(REPLICAS))
    ipu.weight.replicaGrouping(popsim.CommGroupType.Orthogonal, 2,
                               popsim.VariableRetrievalMode.OnePerGroup)
    x, target = batches(1)[0]
    out, _ = ipu(x, target)
    for r, group in enumerate(groups_of(popsim.CommGroupType.Orthogonal, 2)):
        rows = slice(r * ROWS, (r + 1) * ROWS)
        assert_close(out[rows], x[rows] @ model.weight[group].detach().t() + model.bias.detach())


def test_groupings_that_cannot_hold_are_refused():
    def compiled(setting, groups=2, options=None, optimizer=None):
        model = Grouped(groups)
        options = options or popsim.Options().replicationFactor(REPLICAS)
        trainer = popsim.trainingModel(model, options,
                                       optimizer(model) if optimizer else None)
        trainer.per_replica_params["weight"] = setting
        trainer.compile(*batches(1)[0])

    one_per_group = popsim.VariableRetrievalMode.OnePerGroup
    with pytest.raises(popsim.OptionError, match=r"^replicaGrouping of 'weight': "
                                                 r"CommGroupType\.Consecutive groups of 3 "
                                                 r"replicas must divide replicationFactor \(4\)"):
        compiled((popsim.CommGroupType.Consecutive, 3, one_per_group))
    with pytest.raises(popsim.OptionError, match=r"its 4 groups need one value each, along a "
                                                 r"leading dimension of 4, but the parameter's "
                                                 r"shape is \[2, 2, 5\]"):
        compiled((popsim.CommGroupType.NoGrouping, 0, one_per_group))
    with pytest.raises(popsim.OptionError, match=r"VariableRetrievalMode\.AllReplicas would "
                                                 r"read back one value per replica \(4\), but "
                                                 r"the host parameter holds one per group \(2\)"):
        compiled((popsim.CommGroupType.Consecutive, 2, popsim.VariableRetrievalMode.AllReplicas))
    with pytest.raises(popsim.OptionError, match=r"^max_grad_norm with replicaGrouping "
                                                 r"\(weight\)"):
        compiled((popsim.CommGroupType.Consecutive, 2, one_per_group),
                 optimizer=lambda m: popsim.optim.SGD(m.parameters(), lr=0.1, max_grad_norm=1.0))
    model = Grouped(2)
    trainer = popsim.trainingModel(model, popsim.Options().replicationFactor(REPLICAS))
    trainer.weight.replicaGrouping(popsim.CommGroupType.Consecutive, 2, one_per_group)
    trainer.compile(*batches(1)[0])
    with pytest.raises(popsim.OptionError, match=r"the model has compiled already"):
        trainer.weight.replicaGrouping(popsim.CommGroupType.Consecutive, 2, one_per_group)


def test_poptorch_spelling():
    import popsim as poptorch

    assert poptorch.enums.CommGroupType.NoGrouping == poptorch.CommGroupType.Ungrouped
    assert poptorch.enums.VariableRetrievalMode.AllReplicas == 2
    model = Grouped(2)
    ipu = poptorch.inferenceModel(model, poptorch.Options().replicationFactor(REPLICAS))
    assert isinstance(ipu.weight, torch.nn.Parameter)  # still the model's parameter
    ipu.weight.perReplica(poptorch.CommGroupType.Consecutive, 2,
                          poptorch.VariableRetrievalMode.OnePerGroup)
    assert ipu.per_replica_params == {"weight": (poptorch.CommGroupType.Consecutive, 2,
                                                 poptorch.VariableRetrievalMode.OnePerGroup)}
    # The model still copies and pickles; a copied handle reaches no executor.
    pickle.loads(pickle.dumps(copy.deepcopy(model)))
    handle = pickle.loads(pickle.dumps(ipu.weight.replicaGrouping))
    with pytest.raises(popsim.OptionError, match=r"the model it was read from no longer "
                                                 r"exists"):
        handle(poptorch.CommGroupType.All, 0, poptorch.VariableRetrievalMode.OnePerGroup)


def test_weight_blocks_split_over_replica_groups_train_as_the_whole_weight():
    """PopTorch's grouped-weights scenario: 8 replicas, each multiplies one of
    2 halves of the batch (Consecutive input groups of 4) by one of 4 column
    blocks of a weight (Orthogonal weight groups of 2: replicas r and r + 4
    share block r % 4). SGD on the blocks equals SGD on the whole weight."""
    class Blocks(nn.Module):
        def __init__(self, blocks):
            super().__init__()
            self.W = nn.Parameter(blocks)

        def forward(self, x):
            z = x @ self.W
            return z, popsim.identity_loss(z ** 2, reduction="mean")

    generator = torch.Generator().manual_seed(100)
    x = torch.randn(24, 40, generator=generator)
    whole = torch.randn(40, 56, generator=generator) / 40 ** 0.5
    reference = whole.clone().requires_grad_()
    optimizer = torch.optim.SGD([reference], lr=0.01)
    for _ in range(4):
        optimizer.zero_grad()
        ((x @ reference) ** 2).mean().backward()
        optimizer.step()

    model = Blocks(whole.reshape(40, 4, 14).transpose(0, 1).contiguous())
    options = popsim.Options().replicationFactor(8)
    options.inputReplicaGrouping(4, popsim.CommGroupType.Consecutive)
    trainer = popsim.trainingModel(model, options, torch.optim.SGD(model.parameters(), lr=0.01))
    trainer.W.replicaGrouping(popsim.CommGroupType.Orthogonal, 2,
                              popsim.VariableRetrievalMode.OnePerGroup)
    for _ in range(4):
        trainer(x.reshape(2, 12, 40))
    trainer.copyWeightsToHost()
    assert_close(model.W.detach().transpose(0, 1).reshape(40, 56), reference.detach())
