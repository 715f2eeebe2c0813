"""Options.replicationFactor: replicas of a model that split every call's
combined batch (as PopTorch lays it out) and, in training, sum their
gradients before each step, so n replicas of micro-batch b train as one
replica of micro-batch n x b."""

import copy

import pytest
import torch
from torch import nn

import popsim
from popsim.errors import ExecutionError, OptionError

from conftest import assert_close


class Classifier(nn.Module):
    def __init__(self, norm=False):
        super().__init__()
        self.first = nn.Linear(6, 12)
        self.norm = nn.BatchNorm1d(12) if norm else nn.Identity()
        self.second = nn.Linear(12, 4)

    def forward(self, x, labels):
        out = self.second(torch.relu(self.norm(self.first(x))))
        return out, nn.functional.cross_entropy(out, labels)


class BlockedClassifier(Classifier):
    def forward(self, x, labels):
        with popsim.Block("B0", ipu_id=0):
            hidden = torch.relu(self.first(x))
        with popsim.Block("B1", ipu_id=1):
            out = self.second(hidden)
            return out, nn.functional.cross_entropy(out, labels)


def batches(count, samples, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(samples, 6, generator=generator),
             torch.randint(0, 4, (samples,), generator=generator)) for _ in range(count)]


def train(model, replicas, data, optimizer=popsim.optim.SGD, iterations=1, accumulation=1,
          reduction=popsim.ReductionType.Mean, engine_options=None, **optimizer_args):
    model = copy.deepcopy(model)
    opts = popsim.Options().replicationFactor(replicas).deviceIterations(iterations)
    if engine_options is not None:
        opts._Popart.setEngineOptions(engine_options)
    opts.Training.gradientAccumulation(accumulation)
    opts.Training.accumulationAndReplicationReductionType(reduction)
    if isinstance(model, BlockedClassifier):
        opts.setExecutionStrategy(popsim.PipelinedExecution("B0", "B1"))
    trainer = popsim.trainingModel(
        model, opts, optimizer(model.parameters(), lr=optimizer_args.pop("lr", 0.05),
                               **optimizer_args))
    losses = [trainer(x, y)[1] for x, y in data]
    trainer.copyWeightsToHost()
    return model, losses, trainer


def assert_same_weights(actual, expected):
    for (name, value), (_, reference) in zip(actual.state_dict().items(),
                                             expected.state_dict().items()):
        assert_close(value, reference, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("replicas", [2, 4])
def test_replicas_train_as_one_replica_with_their_combined_micro_batch(replicas):
    model, data = Classifier(), batches(3, 16)
    single, single_losses, _ = train(model, 1, data)
    replicated, losses, trainer = train(model, replicas, data)
    assert_same_weights(replicated, single)
    # Final mode: one loss per replica, each the mean over its own samples,
    # so their mean is the single replica's loss.
    assert losses[-1].shape == (replicas,)
    assert_close(losses[-1].mean(), single_losses[-1])
    assert trainer.options.replication_factor == replicas


def test_the_step_combines_accumulation_iterations_and_replicas():
    # Dimension 0 holds, for each of the 2 x 3 micro-batch steps, 2 replicas'
    # micro-batches of 4: one replica's micro-batch of 8 holds the same samples.
    model, data = Classifier(), batches(2, 4 * 2 * 3 * 2)
    single, _, _ = train(model, 1, data, iterations=2, accumulation=3,
                         optimizer=popsim.optim.Adam, lr=0.01)
    replicated, _, _ = train(model, 2, data, iterations=2, accumulation=3,
                             optimizer=popsim.optim.Adam, lr=0.01)
    assert_same_weights(replicated, single)


def test_sum_reduction_sums_over_replicas():
    model, data = Classifier(), batches(2, 8)
    # Two replicas' mean losses summed: one replica's mean loss, doubled.
    single, _, _ = train(model, 1, data, lr=0.1)
    replicated, _, _ = train(model, 2, data, reduction=popsim.ReductionType.Sum, lr=0.05)
    assert_same_weights(replicated, single)


def test_gradient_clipping_sees_the_summed_gradients():
    model, data = Classifier(), batches(3, 8)
    single, _, _ = train(model, 1, data, max_grad_norm=0.05)
    replicated, _, _ = train(model, 2, data, max_grad_norm=0.05)
    assert_same_weights(replicated, single)


def test_a_replicated_pipeline_trains_as_one_replica():
    model, data = BlockedClassifier(), batches(2, 4 * 4 * 2)
    single, _, _ = train(model, 1, data, accumulation=4)
    replicated, _, trainer = train(model, 2, data, accumulation=4)
    assert_same_weights(replicated, single)
    steps = {step.op: step for step in trainer._executable.program()}
    assert steps["replica_all_reduce"].task.startswith("N")


def test_outputs_come_back_step_by_step_replica_by_replica():
    model = nn.Linear(3, 2)
    x = torch.randn(2 * 3 * 4, 3)  # 3 iterations x 2 replicas x micro-batch 4
    expected = model(x).detach()
    for mode, rows in [(popsim.OutputMode.All, slice(None)),
                       (popsim.OutputMode.Final, slice(16, 24)),
                       (popsim.OutputMode.Sum, None)]:
        opts = popsim.Options().replicationFactor(2).deviceIterations(3).outputMode(mode)
        result = popsim.inferenceModel(model, opts)(x)
        if rows is None:  # per replica, the sum over its iterations
            assert_close(result, expected.reshape(3, 8, 2).sum(0))
        else:
            assert_close(result, expected[rows])
    opts = popsim.Options().replicationFactor(2).deviceIterations(4).outputMode(
        popsim.OutputMode.EveryN, 2)
    x = torch.randn(4 * 2 * 1, 3)
    assert_close(popsim.inferenceModel(model, opts)(x),
                 model(x).detach().reshape(4, 2, 2)[[1, 3]].reshape(4, 2))


def test_scalar_outputs_are_stacked_per_replica_and_step():
    class Total(nn.Module):
        def forward(self, x):
            return x.sum()

    opts = popsim.Options().replicationFactor(2).deviceIterations(3)
    x = torch.randn(12, 5)
    assert_close(popsim.inferenceModel(Total(), opts)(x), x.reshape(6, 10).sum(1))


def test_inputs_written_in_place_come_back_in_place():
    class Count(nn.Module):
        def forward(self, x, counter):
            counter += x.sum(1)
            return x * 2

    opts = popsim.Options().replicationFactor(2).deviceIterations(2)
    x, counter = torch.randn(8, 3), torch.zeros(8)
    popsim.inferenceModel(Count(), opts)(x, counter)
    assert_close(counter, x.sum(1))


def test_buffers_follow_broadcast_buffers():
    model, data = Classifier(norm=True), batches(2, 8)
    for broadcast in (True, False):
        copied = copy.deepcopy(model)
        opts = popsim.Options().replicationFactor(2).broadcastBuffers(broadcast)
        trainer = popsim.trainingModel(copied, opts, popsim.optim.SGD(copied.parameters(), lr=0.1))
        for x, y in data:
            trainer(x, y)
        replicas = trainer._executable.replicas
        means = [r.read_variables(["norm.running_mean"])["norm.running_mean"] for r in replicas]
        # Replica 0's statistics, from its own samples, reach the host either way.
        assert_close(copied.norm.running_mean, means[0])
        assert torch.equal(means[0], means[1]) == broadcast


def test_a_failing_replica_stops_the_others_with_its_own_error():
    model = Classifier()
    trainer = popsim.trainingModel(model, popsim.Options().replicationFactor(2),
                                   popsim.optim.SGD(model.parameters(), lr=0.1))
    x, y = batches(1, 8)[0]
    trainer(x, y)
    bad = y.clone()
    bad[5] = 7  # a class the model does not have, in replica 1's half
    with pytest.raises(ExecutionError,
                       match=r"replica 1, task FB0 on IPU0, .*target 7") as error:
        trainer(x, bad)
    assert "another replica failed" not in str(error.value)
    trainer(x, y)  # the replicas run on after a failed call


def test_simulator_num_ipus_counts_every_replica():
    model, data = BlockedClassifier(), batches(1, 16)
    opts = popsim.Options().replicationFactor(2)
    opts.Simulator.numIpus(3)
    opts.Training.gradientAccumulation(4)
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(OptionError, match=r"Simulator.numIpus\(3\) must hold replicationFactor "
                       r"\(2\) replicas of the model, which uses 2 IPU\(s\) each"):
        trainer(*data[0])


def test_the_all_reduce_is_charged_on_the_simulated_clock():
    # Each replica runs what one replica runs with its micro-batch, and then the ring.
    # A stream-callback thread per replica keeps the two from taking turns for the host.
    model = Classifier()
    threads = {"streamCallbacks.multiThreadMode": "collaborative",
               "streamCallbacks.numWorkerThreads": "auto"}
    _, _, single = train(model, 1, batches(1, 8))
    _, _, replicated = train(model, 2, batches(1, 16), engine_options=threads)
    steps = [s for s in replicated._executable.program() if s.op == "replica_all_reduce"]
    assert len(steps) == 4  # one per trained parameter
    ring = sum(s.cycles for s in steps)
    assert ring > 4 * 2 * 3000  # 2 x (replicas - 1) link latencies each, at least
    assert replicated.cycleCount() == single.cycleCount() + ring


def test_replicated_inference_runs_every_replica():
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh())
    x = torch.randn(6, 5)
    result = popsim.inferenceModel(model, popsim.Options().replicationFactor(3))(x)
    assert_close(result, model(x).detach())


class Wide(nn.Module):
    """Weights of 600 and 180 elements, biases of 30 and 6."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(20, 30)
        self.second = nn.Linear(30, 6)

    def forward(self, x, labels):
        out = self.second(torch.tanh(self.first(x)))
        return out, nn.functional.cross_entropy(out, labels)


def sharded_run(sharding, optimizer=popsim.optim.Adam, steps=3, min_elements=0, off_chip=False,
                replicas=4, dtype=torch.float32, **optimizer_args):
    model = Wide()
    torch.manual_seed(0)
    model.load_state_dict(Wide().state_dict())
    model.to(dtype)
    opts = popsim.Options().replicationFactor(replicas)
    opts.Training.gradientAccumulation(2)
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useReplicatedTensorSharding(sharding)
        .minElementsForReplicatedTensorSharding(min_elements).useOnChipStorage(not off_chip))
    optim = optimizer(model.parameters(), lr=0.01, **optimizer_args)
    trainer = popsim.trainingModel(model, opts, optim)
    generator = torch.Generator().manual_seed(3)
    for _ in range(steps):
        trainer(torch.randn(replicas * 2 * 4, 20, generator=generator).to(dtype),
                torch.randint(0, 6, (replicas * 2 * 4,), generator=generator))
    trainer.copyWeightsToHost()
    return model, optim, trainer


def optimizer_state_bytes(trainer):
    return trainer.memoryReport()["ipus"][0]["categories"]["optimizer state"]["bytes"]


@pytest.mark.parametrize("optimizer,args", [(popsim.optim.Adam, {}),
                                            (popsim.optim.SGD, {"momentum": 0.9}),
                                            (popsim.optim.RMSprop, {"centered": True}),
                                            (popsim.optim.LAMB, {"weight_decay": 0.1}),
                                            (popsim.optim.LAMB, {"max_weight_norm": 0.5})])
def test_sharded_optimizer_state_trains_as_the_whole_state(optimizer, args):
    whole, whole_optim, whole_trainer = sharded_run(False, optimizer, **args)
    sharded, sharded_optim, trainer = sharded_run(True, optimizer, **args)
    assert_same_weights(sharded, whole)
    # The optimizer's state comes home whole, gathered from the replicas' shards
    # (state_dict() reads it from the device).
    whole_state = whole_optim.state_dict()["state"]
    sharded_state = sharded_optim.state_dict()["state"]
    assert len(whole_state) == 4 and all(whole_state.values())
    for index, keys in whole_state.items():
        for key, value in keys.items():
            assert_close(sharded_state[index][key], value)
    # Each replica keeps a quarter of the state, and a quarter of the weight
    # to update: at most (1 + 1) / 4 of the whole state with one tensor per
    # parameter (SGD's momentum).
    assert optimizer_state_bytes(trainer) < 0.6 * optimizer_state_bytes(whole_trainer)
    if optimizer is popsim.optim.LAMB:  # its trust ratio sums the shards' norms
        ops = [step.op for step in trainer._executable.program()]
        assert ops.count("lamb_update_sharded") == 4 and "lamb_update" not in ops


@pytest.mark.parametrize("optimizer,args", [(popsim.optim.SGD, {"momentum": 0.9}),
                                            (popsim.optim.LAMBNoBias, {})])
def test_float16_weights_update_their_shard_in_float16(optimizer, args):
    """A float16 weight's shard is float16 (its update writes the weight's
    dtype), and training matches the whole state's."""
    whole, _, _ = sharded_run(False, optimizer, dtype=torch.float16, **args)
    sharded, _, trainer = sharded_run(True, optimizer, dtype=torch.float16, **args)
    assert_same_weights(sharded, whole)
    assert "f16[150] = replica_shard" in trainer._debug_ir(optimized=True)


def test_sharding_skips_small_tensors_and_works_off_chip():
    whole, _, _ = sharded_run(False)
    sharded, _, trainer = sharded_run(True, min_elements=100, off_chip=True)
    assert_same_weights(sharded, whole)
    ops = {}
    for step in trainer._executable.program():
        ops.setdefault(step.op, 0)
        ops[step.op] += 1
    assert ops["replica_reduce_scatter"] == ops["replica_all_gather"] == 2  # the weights
    assert ops["replica_all_reduce"] == 2  # the biases, below 100 elements
    assert optimizer_state_bytes(trainer) == 0  # in Streaming Memory


def test_clipping_a_sharded_step_uses_the_whole_norm():
    whole, _, _ = sharded_run(False, max_grad_norm=0.02)
    sharded, _, _ = sharded_run(True, max_grad_norm=0.02)
    assert_same_weights(sharded, whole)


def test_sharding_costs_what_the_all_reduce_did():
    # A reduce-scatter and an all-gather are the two halves of the ring.
    _, _, whole = sharded_run(False, steps=1)
    _, _, sharded = sharded_run(True, steps=1)

    def cycles(trainer, op):
        return sum(s.cycles for s in trainer._executable.program() if s.op == op)

    halves = cycles(sharded, "replica_reduce_scatter") + cycles(sharded, "replica_all_gather")
    assert abs(halves - cycles(whole, "replica_all_reduce")) < 0.1 * halves


@pytest.mark.parametrize("kind,parts", [(popsim.CommGroupType.Consecutive, [0, 0, 1, 1]),
                                        (popsim.CommGroupType.Orthogonal, [0, 1, 0, 1]),
                                        (popsim.CommGroupType.All, [0, 0, 0, 0]),
                                        (popsim.CommGroupType.Ungrouped, [0, 1, 2, 3])])
def test_input_replica_groups_share_their_data(kind, parts):
    model = nn.Linear(3, 2)
    opts = popsim.Options().replicationFactor(4).deviceIterations(2)
    opts.inputReplicaGrouping(2, kind)
    inputs = max(parts) + 1  # micro-batches of 5 per step
    x = torch.randn(2 * inputs * 5, 3)
    result = popsim.inferenceModel(model, opts)(x)
    steps = model(x).detach().reshape(2, inputs, 5, 2)
    assert_close(result, steps[:, parts].reshape(2 * 4 * 5, 2))
    loader = popsim.DataLoader(opts, torch.utils.data.TensorDataset(torch.arange(100)),
                               batch_size=5)
    assert loader.combinedBatchSize == 2 * inputs * 5


def test_input_replica_groups_must_divide_the_replicas():
    opts = popsim.Options().replicationFactor(4).inputReplicaGrouping(
        3, popsim.CommGroupType.Consecutive)
    with pytest.raises(OptionError, match=r"inputReplicaGrouping\(3, Consecutive\): groups of 3 "
                       r"replicas do not divide replicationFactor \(4\)"):
        popsim.inferenceModel(nn.Linear(3, 2), opts)(torch.randn(8, 3))
    with pytest.raises(OptionError, match="expects a popsim.CommGroupType"):
        popsim.Options().inputReplicaGrouping(2, "consecutive")


def test_the_profile_shows_the_all_reduce_per_ipu(tmp_path):
    from popsim import profiling

    model = BlockedClassifier()
    opts = popsim.Options().replicationFactor(2).enableProfiling(str(tmp_path))
    opts.Training.gradientAccumulation(4)
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1))
    trainer(*batches(1, 32)[0])
    profile = profiling.load(trainer.profileDirectory())
    ring = {str(ipu): sum(s.cycles for s in trainer._executable.program()
                          if s.op == "replica_all_reduce" and s.ipu == ipu)
            for ipu in (0, 1)}
    assert profile.replication == {"replicas": 2, "collective_cycles": ring}
    summary = profile.summary()
    assert "Replicas: 2, each on IPUs of its own" in summary
    assert f"IPU0 {ring['0']:,} cycles (" in summary and f"IPU1 {ring['1']:,} cycles (" in summary
    names = {(e.get("name"), e.get("tid")) for e in profile.chrome_trace["traceEvents"]}
    assert {name for name, _ in names if name == "replica_all_reduce"}


def test_replicas_detach_attach_and_load_from_the_executable_cache(tmp_path, counted):
    model, data = Classifier(), batches(4, 16)
    reference, _, _ = train(model, 2, data, optimizer=popsim.optim.Adam, lr=0.01)
    compiled = counted["compile"]

    def trainer_of(copied):
        opts = popsim.Options().replicationFactor(2).enableExecutableCaching(str(tmp_path))
        return popsim.trainingModel(copied, opts,
                                    popsim.optim.Adam(copied.parameters(), lr=0.01))

    first = copy.deepcopy(model)
    trainer = trainer_of(first)
    for x, y in data[:2]:
        trainer(x, y)
    trainer.detachFromDevice()  # weights and Adam's moments go home ...
    trainer.attachToDevice()  # ... and back to both replicas
    trainer(*data[2])
    trainer.destroy()
    assert counted["compile"] == compiled + 1
    resumed = trainer_of(first)  # the cached program, with first's optimizer state
    resumed.setOptimizer(trainer._optimizer)
    resumed(*data[3])
    resumed.copyWeightsToHost()
    assert counted["compile"] == compiled + 1  # the cached program, loaded for both replicas
    assert_same_weights(first, reference)


def test_replicas_draw_their_own_dropout_masks_also_after_a_detach():
    class Dropped(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(16))

        def forward(self, x):
            y = nn.functional.dropout(x * self.scale, 0.5)
            return y, popsim.identity_loss(y.sum(), reduction="none")

    model = Dropped()
    opts = popsim.Options().replicationFactor(2).outputMode(popsim.OutputMode.All)
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.0))
    x = torch.ones(2 * 4, 16)
    masks = []
    for _ in range(2):
        kept = trainer(x)[0] != 0
        assert not torch.equal(kept[:4], kept[4:])  # the replicas draw apart
        masks.append(kept)
        trainer.detachFromDevice()  # the counter goes home as replica 0's ...
        trainer.attachToDevice()  # ... and each replica gets its own back
    assert not torch.equal(masks[0], masks[1])
    trainer.detachFromDevice()
    assert trainer._detached_state[popsim._C.RANDOM_COUNTER_NAME] == 2  # replica 0's count


def test_a_wrong_batch_of_grouped_replicas_names_the_input_groups():
    opts = popsim.Options().replicationFactor(4).inputReplicaGrouping(
        2, popsim.CommGroupType.Consecutive)
    model = popsim.inferenceModel(nn.Linear(3, 2), opts)
    model(torch.randn(10, 3))  # 2 input groups of micro-batches of 5
    with pytest.raises(popsim.InputError, match=r"compiled for 10 per call \(micro-batch 5 x "
                       r"deviceIterations 1 x gradientAccumulation 1 x input groups of "
                       r"replicas 2\)"):
        model(torch.randn(12, 3))
