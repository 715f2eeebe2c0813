"""Replicated tensor sharding of weights
(``TensorLocations.setWeightLocation(TensorLocationSettings()
.useReplicatedTensorSharding(True))``): each replica stores a shard of every
trained weight, gathers the whole weight in each task that reads it, and
updates its shard from its shard of the summed gradient. Training must give
the weights the whole-weight run gives, and the host must see whole weights."""

import copy

import pytest
import torch
from torch import nn

import popsim
from popsim.errors import OptionError

from conftest import assert_close
from test_replication import Wide, assert_same_weights


class BlockedWide(Wide):
    def forward(self, x, labels):
        with popsim.Block("B0", ipu_id=0):
            hidden = torch.tanh(self.first(x))
        with popsim.Block("B1", ipu_id=1):
            out = self.second(hidden)
            return out, nn.functional.cross_entropy(out, labels)


def start(model_class=Wide):
    torch.manual_seed(0)
    return model_class()


def options(sharded, replicas=4, accumulation=2, min_elements=0, on_chip=True):
    opts = popsim.Options().replicationFactor(replicas)
    opts.Training.gradientAccumulation(accumulation)
    opts.TensorLocations.setWeightLocation(
        popsim.TensorLocationSettings().useReplicatedTensorSharding(sharded)
        .minElementsForReplicatedTensorSharding(min_elements).useOnChipStorage(on_chip))
    return opts


def batches(steps, samples, seed=3):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(samples, 20, generator=generator),
             torch.randint(0, 6, (samples,), generator=generator)) for _ in range(steps)]


def train(model, opts, optimizer=popsim.optim.Adam, steps=3, **optimizer_args):
    optim = optimizer(model.parameters(), lr=optimizer_args.pop("lr", 0.01), **optimizer_args)
    trainer = popsim.trainingModel(model, opts, optim)
    samples = opts.replication_factor * opts.Training.gradient_accumulation * 4
    for x, labels in batches(steps, samples):
        trainer(x, labels)
    trainer.copyWeightsToHost()
    return trainer, optim


def category_bytes(trainer, category, ipu=0):
    return trainer.memoryReport()["ipus"][ipu]["categories"][category]["bytes"]


def ops_by_task(trainer, op):
    tasks = {}
    for step in trainer._executable.program():
        if step.op == op:
            tasks[step.task] = tasks.get(step.task, 0) + 1
    return tasks


@pytest.mark.parametrize("optimizer,args", [(popsim.optim.Adam, {}),
                                            (popsim.optim.SGD, {"momentum": 0.9}),
                                            (popsim.optim.RMSprop, {"centered": True}),
                                            (popsim.optim.LAMB, {"weight_decay": 0.1}),
                                            (popsim.optim.SGD, {"max_grad_norm": 0.05})])
def test_sharded_weights_train_as_whole_weights(optimizer, args):
    whole, sharded = start(), start()
    whole_trainer, whole_optim = train(whole, options(False), optimizer, **args)
    trainer, optim = train(sharded, options(True), optimizer, **args)
    assert_same_weights(sharded, whole)
    # The optimizer state follows its weight's shards, and comes home whole.
    for index, keys in whole_optim.state_dict()["state"].items():
        for key, value in keys.items():
            assert_close(optim.state_dict()["state"][index][key], value)
    # A quarter of each weight, zero-padded to a multiple of 4 elements
    # (150 + 8 + 45 + 2 of 816), and its state beside it; no whole copy.
    assert category_bytes(trainer, "weights") < 0.3 * category_bytes(whole_trainer, "weights")
    if any(whole_optim.state_dict()["state"].values()):  # + hyper-parameters
        assert (category_bytes(trainer, "optimizer state")
                < 0.35 * category_bytes(whole_trainer, "optimizer state"))
    # Each micro-batch gathers the 4 weights; each step reduce-scatters their gradients.
    assert ops_by_task(trainer, "replica_all_gather") == {"FB0": 4}
    # Only clipping all-reduces: the shards' sum of squares.
    assert sum(ops_by_task(trainer, "replica_all_reduce").values()) == \
        (1 if "max_grad_norm" in args else 0)
    assert sum(ops_by_task(trainer, "replica_reduce_scatter").values()) == 4


def train_pipelined(model_class, recomputation, optimizer=popsim.optim.Adam, **optimizer_args):
    """The two-stage model trained pipelined with whole and with sharded
    weights, which must end equal: (whole weights' trainer, sharded's)."""
    trainers, models = [], []
    for sharding in (False, True):
        opts = options(sharding, replicas=2, accumulation=4)
        opts.setExecutionStrategy(popsim.PipelinedExecution("B0", "B1"))
        opts.Training.recomputation(recomputation)
        models.append(start(model_class))
        trainers.append(train(models[-1], opts, optimizer, **dict(optimizer_args))[0])
    assert_same_weights(models[1], models[0])
    return trainers


@pytest.mark.parametrize("recomputation", [False, True])
def test_a_pipeline_gathers_a_sharded_weight_in_each_task_that_reads_it(recomputation):
    whole_trainer, trainer = train_pipelined(BlockedWide, recomputation, popsim.optim.SGD,
                                             momentum=0.9)
    # first's weights are read in F0 (and again in B0 when it recomputes
    # first's output; x needs no gradient), second's in FB1's forward and
    # backward parts, one task. No gathered weight crosses tasks, so the
    # pipeline stashes what it stashed with whole weights.
    gathers = ops_by_task(trainer, "replica_all_gather")
    assert gathers == {"F0": 2, "FB1": 2, **({"B0": 2} if recomputation else {})}
    assert category_bytes(trainer, "stash") == category_bytes(whole_trainer, "stash")


class Deep(nn.Module):
    """A weight its stage's backward task reads again (the input gradient of
    the second layer of the stage)."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(20, 16)
        self.middle = nn.Linear(16, 16)
        self.last = nn.Linear(16, 6)

    def forward(self, x, labels):
        with popsim.Block("B0", ipu_id=0):
            hidden = torch.tanh(self.middle(torch.tanh(self.first(x))))
        with popsim.Block("B1", ipu_id=1):
            out = self.last(hidden)
            return out, nn.functional.cross_entropy(out, labels)


@pytest.mark.parametrize("recomputation", [False, True])
def test_a_backward_task_gathers_the_weight_again(recomputation):
    whole_trainer, trainer = train_pipelined(Deep, recomputation)
    gathers = ops_by_task(trainer, "replica_all_gather")
    # middle.weight: read by F0 and by B0 (first's output gradient); with
    # recomputation, B0 also recomputes middle's forward from the stashed input.
    assert gathers["F0"] == 4 and gathers["FB1"] == 2
    assert gathers["B0"] == (4 if recomputation else 1)
    assert category_bytes(trainer, "stash") == category_bytes(whole_trainer, "stash")


def test_the_host_reads_whole_weights_and_writes_them_back_as_shards():
    models = {sharding: start() for sharding in (False, True)}
    trainers = {}
    for sharding, model in models.items():
        trainers[sharding], _ = train(model, options(sharding), popsim.optim.SGD, steps=1,
                                      lr=0.1)
        with torch.no_grad():  # a change on the host reaches every replica's shard
            model.first.weight.mul_(0.5)
            model.second.bias.add_(1.0)
        trainers[sharding].copyWeightsToDevice()
        for x, labels in batches(2, 32, seed=5):
            trainers[sharding](x, labels)
        trainers[sharding].copyWeightsToHost()
    assert_same_weights(models[True], models[False])
    assert models[True].first.weight.shape == (30, 20)
    assert dict(models[True].named_parameters()).keys() == \
        dict(models[False].named_parameters()).keys()


def test_small_weights_stay_whole_and_sharded_weights_can_live_off_chip():
    whole = start()
    train(whole, options(False))
    small_whole = start()
    trainer, _ = train(small_whole, options(True, min_elements=100))
    assert_same_weights(small_whole, whole)
    assert ops_by_task(trainer, "replica_all_gather") == {"FB0": 2}  # the two weights
    assert sum(ops_by_task(trainer, "replica_all_reduce").values()) == 2  # the biases
    off_chip = start()
    trainer, _ = train(off_chip, options(True, on_chip=False))
    assert_same_weights(off_chip, whole)
    assert category_bytes(trainer, "weights") == 0  # the shards live in Streaming Memory


def test_one_replica_keeps_whole_weights():
    whole, single = start(), start()
    train(whole, options(False, replicas=1))
    trainer, _ = train(single, options(True, replicas=1))
    assert_same_weights(single, whole)
    assert not ops_by_task(trainer, "replica_all_gather")


def test_an_inference_model_shards_its_weights_too():
    model = start()
    x, labels = torch.randn(4 * 5, 20), torch.zeros(4 * 5, dtype=torch.long)
    expected = model(x, labels)[0].detach()
    results = {}
    for sharding in (False, True):
        opts = options(sharding, replicas=4, accumulation=1)
        results[sharding] = popsim.inferenceModel(copy.deepcopy(model), opts)
        assert_close(results[sharding](x, labels)[0], expected)
    assert ops_by_task(results[True], "replica_all_gather") == {"F0": 4}
    assert category_bytes(results[True], "weights") < 0.3 * category_bytes(results[False],
                                                                           "weights")
    # The host reads whole weights back (gathered from the replicas' shards).
    with torch.no_grad():
        for parameter in results[True].model.parameters():
            parameter.zero_()
    results[True].copyWeightsToHost()
    assert_same_weights(results[True].model, model)


def test_refusals_name_the_setting():
    model = start()
    opts = popsim.Options().replicationFactor(2)
    opts.TensorLocations.setAccumulatorLocation(
        popsim.TensorLocationSettings().useReplicatedTensorSharding(True))
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(OptionError, match="setAccumulatorLocation: popsim shards the optimizer "
                       "state and the weights across replicas, not the accumulators"):
        trainer(*batches(1, 8)[0])
    for training in (True, False):
        grouped = copy.deepcopy(model)
        opts = options(True, replicas=2, accumulation=1)
        wrapped = (popsim.trainingModel(grouped, opts,
                                        popsim.optim.SGD(grouped.parameters(), lr=0.1))
                   if training else popsim.inferenceModel(grouped, opts))
        wrapped.per_replica_params["first.weight"] = (popsim.CommGroupType.Consecutive, 1,
                                                      popsim.VariableRetrievalMode.OnePerGroup)
        with pytest.raises(OptionError, match="replicaGrouping of 'first.weight': replicated "
                           "tensor sharding spreads the weights over every replica"):
            wrapped(*batches(1, 8)[0])


def test_the_profile_counts_every_micro_batch_s_gathers(tmp_path):
    from popsim import profiling

    model = start()
    opts = options(True, replicas=2, accumulation=3).enableProfiling(str(tmp_path))
    trainer, _ = train(model, opts, popsim.optim.SGD, steps=1, lr=0.1)
    program = trainer._executable.program()
    gathers = sum(s.cycles for s in program if s.op == "replica_all_gather")
    scatters = sum(s.cycles for s in program if s.op == "replica_reduce_scatter")
    profile = profiling.load(trainer.profileDirectory())
    # The gathers run in each of the step's 3 micro-batches, the reduce-scatters once.
    assert profile.replication["collective_cycles"] == {"0": 3 * gathers + scatters}
    assert "gathering sharded weights" in profile.summary()


class HalfWide(nn.Module):
    def __init__(self):
        super().__init__()
        self.wide = start().half()

    def forward(self, x, labels):
        out = self.wide.second(torch.tanh(self.wide.first(x.half()))).float()
        return out, nn.functional.cross_entropy(out, labels)


def test_float16_weights_shard_in_float16_and_survive_detaching():
    whole, sharded = HalfWide(), HalfWide()
    train(whole, options(False), popsim.optim.SGD, lr=0.1)
    trainer, _ = train(sharded, options(True), popsim.optim.SGD, lr=0.1)
    assert sharded.wide.first.weight.dtype == torch.float16
    assert_same_weights(sharded, whole)
    before = copy.deepcopy(sharded.state_dict())
    trainer.detachFromDevice()  # the host keeps the gathered weights ...
    trainer.attachToDevice()  # ... and gives each replica its shards back
    with torch.no_grad():
        for parameter in sharded.parameters():
            parameter.zero_()
    trainer.copyWeightsToHost()
    for name, value in sharded.state_dict().items():
        assert torch.equal(value, before[name]), name


class ClampedWide(Wide):
    def forward(self, x, labels):
        with torch.no_grad():
            self.first.weight.clamp_(-0.1, 0.1)
        return super().forward(x, labels)


def test_a_weight_the_forward_pass_writes_cannot_be_sharded():
    model = ClampedWide()
    trainer = popsim.trainingModel(model, options(True, replicas=2, accumulation=1),
                                   popsim.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(OptionError, match=r"assign at .*test_sharded_weights.py:\d+ writes the "
                       r"weight 'first.weight' in the forward pass, but each replica stores only "
                       r"a shard of it. Raise minElementsForReplicatedTensorSharding above its "
                       r"600 elements"):
        trainer(*batches(1, 8)[0])
