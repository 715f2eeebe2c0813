"""Training across processes (Options.Distributed, launched by torchrun): each
process runs its replicas on its own part of the global batch, and the
gradients are summed across all replicas of all processes with
torch.distributed (Gloo), so the job trains as one process would on the
whole batch. Processes talk over 127.0.0.1 only, with bounded timeouts."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import popsim

from conftest import assert_close, free_port, torchrun_command

LAUNCHERS = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
             "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")

MODEL = textwrap.dedent("""
    import torch
    from torch import nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = nn.Linear(6, 10)
            self.second = nn.Linear(10, 3)
            # Written from each replica's own samples: broadcastBuffers makes
            # every replica of every process keep process 0's first replica's.
            self.register_buffer("last_mean", torch.zeros(6))

        def forward(self, x, labels):
            with torch.no_grad():
                self.last_mean.copy_(x.mean(0))
            out = self.second(torch.relu(self.first(x)))
            return out, nn.functional.cross_entropy(out, labels)

    def global_batches(steps, samples):
        generator = torch.Generator().manual_seed(11)
        return [(torch.randn(samples, 6, generator=generator),
                 torch.randint(0, 3, (samples,), generator=generator)) for _ in range(steps)]
""")

TRAINER = MODEL + textwrap.dedent("""
    import sys
    import popsim

    options = popsim.Options().replicationFactor(2)
    options.Training.gradientAccumulation(2)
    process, processes = options.Distributed.processId, options.Distributed.numProcesses
    torch.manual_seed(100 + process)  # process 0's weights reach every process
    model = Classifier()
    trainer = popsim.trainingModel(model, options, popsim.optim.SGD(
        model.parameters(), lr=0.1, momentum=0.9))
    for x, labels in global_batches(3, 32):
        part = slice(process * 16, (process + 1) * 16)  # this process's share
        trainer(x[part], labels[part])
    trainer.copyWeightsToHost()
    torch.save(model.state_dict(), sys.argv[1] + f".{process}")
""")

SHARDED = MODEL + textwrap.dedent("""
    import sys
    import popsim

    options = popsim.Options().replicationFactor(2)
    options.Training.gradientAccumulation(2)
    options.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useReplicatedTensorSharding(True))
    process = options.Distributed.processId
    torch.manual_seed(100 + process)
    model = Classifier()
    optimizer = popsim.optim.Adam(model.parameters(), lr=0.01)
    trainer = popsim.trainingModel(model, options, optimizer)
    for x, labels in global_batches(3, 32):
        part = slice(process * 16, (process + 1) * 16)
        trainer(x[part], labels[part])
    trainer.copyWeightsToHost()
    # In every process: state_dict() gathers the state's shards from all of them.
    state = optimizer.state_dict()["state"]
    categories = trainer.memoryReport()["ipus"][0]["categories"]
    torch.save({"weights": model.state_dict(), "state": state,
                "bytes": {name: categories[name]["bytes"]
                          for name in ("optimizer state", "weights")}},
               sys.argv[1] + f".{process}")
""")

GROUPED = textwrap.dedent("""
    import sys
    import torch
    import popsim
    from test_replica_grouping import ROWS, Grouped, batches

    options = popsim.Options().replicationFactor(2)
    process = options.Distributed.processId
    model = Grouped(2)  # the same start in every process (Grouped seeds itself)
    trainer = popsim.trainingModel(model, options, popsim.optim.SGD(model.parameters(), lr=0.1))
    trainer.weight.replicaGrouping(popsim.CommGroupType.Consecutive, 2,
                                   popsim.VariableRetrievalMode.OnePerGroup)
    for x, target in batches(3):
        part = slice(process * 2 * ROWS, (process + 1) * 2 * ROWS)  # replicas 2p and 2p + 1
        trainer(x[part], target[part])
    trainer.copyWeightsToHost()  # in every process: each group's value, from its process
    torch.save(model.state_dict(), sys.argv[1] + f".{process}")
""")

DYING = MODEL + textwrap.dedent("""
    import os
    import sys
    import popsim

    options = popsim.Options()
    process = options.Distributed.processId
    model = Classifier()
    trainer = popsim.trainingModel(model, options, popsim.optim.SGD(model.parameters(), lr=0.1))
    x, labels = global_batches(1, 8)[0]
    trainer(x, labels)
    if process == 1:
        os._exit(3)  # dies between two steps
    try:
        trainer(x, labels)
        message = "no error"
    except popsim.ExecutionError as error:
        message = str(error)
    with open(sys.argv[1], "w") as out:
        out.write(message)
""")


def clean_environment(**extra):
    environment = {k: v for k, v in os.environ.items() if k not in LAUNCHERS}
    environment.update(OMP_NUM_THREADS="1", POPSIM_DISTRIBUTED_TIMEOUT="30",
                       PYTHONPATH=os.path.dirname(__file__), **extra)
    return environment


def run_two_processes(tmp_path, source):
    """Runs `source` in 2 processes under torchrun; returns what each saved."""
    script = tmp_path / "job.py"
    script.write_text(source)
    saved = tmp_path / "saved.pt"
    command = torchrun_command(2, tmp_path / "logs", script, saved)
    result = subprocess.run(command, env=clean_environment(), capture_output=True, text=True,
                            timeout=240, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return [torch.load(f"{saved}.{process}") for process in range(2)]


def one_process(make_optimizer):
    """The same model trained in this process on every sample: (the model's
    namespace, the model, its optimizer)."""
    namespace = {}
    exec(MODEL, namespace)
    torch.manual_seed(100)
    model = namespace["Classifier"]()
    optimizer = make_optimizer(model)
    trainer = popsim.trainingModel(model, popsim.Options(), optimizer)
    for x, labels in namespace["global_batches"](3, 32):
        trainer(x, labels)
    trainer.copyWeightsToHost()
    return namespace, model, optimizer


def test_two_processes_train_as_one_process_on_the_global_batch(tmp_path):
    first, second = run_two_processes(tmp_path, TRAINER)
    namespace, model, _ = one_process(lambda model: popsim.optim.SGD(
        model.parameters(), lr=0.1, momentum=0.9))
    for name, expected in model.state_dict().items():
        assert torch.equal(first[name], second[name]), name
        if name == "last_mean":  # process 0, step 1 of 2, replica 0: rows 8 to 11
            assert_close(first[name], namespace["global_batches"](3, 32)[-1][0][8:12].mean(0))
            continue
        assert_close(first[name], expected, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("location", ["setOptimizerLocation", "setWeightLocation"])
def test_sharded_across_processes_trains_as_unsharded(tmp_path, location):
    """2 processes x 2 replicas each hold a quarter of Adam's state, and with
    setWeightLocation of the weights too (replicated tensor sharding): the
    weights and the state gathered on the host equal one process's,
    unsharded, on the global batch."""
    first, second = run_two_processes(tmp_path, SHARDED.replace("setOptimizerLocation", location))
    namespace, model, optimizer = one_process(
        lambda model: popsim.optim.Adam(model.parameters(), lr=0.01))
    for name, expected in model.state_dict().items():
        assert torch.equal(first["weights"][name], second["weights"][name]), name
        if name != "last_mean":
            assert_close(first["weights"][name], expected, msg=lambda m, n=name: f"{n}: {m}")
    expected_state = optimizer.state_dict()["state"]
    assert len(expected_state) == 4 and all("exp_avg" in s for s in expected_state.values())
    for index, keys in expected_state.items():
        for key, expected in keys.items():
            for saved in (first, second):
                assert_close(saved["state"][index][key], expected)
    # The shards are the job's quarters (as with 4 replicas in one process), not halves.
    options = popsim.Options().replicationFactor(4)
    getattr(options.TensorLocations, location)(
        popsim.TensorLocationSettings().useReplicatedTensorSharding(True))
    network = namespace["Classifier"]()
    four_replicas = popsim.trainingModel(network, options,
                                         popsim.optim.Adam(network.parameters(), lr=0.01))
    four_replicas.compile(*namespace["global_batches"](1, 4)[0])
    quarters = {name: category["bytes"] for name, category
                in four_replicas.memoryReport()["ipus"][0]["categories"].items()}
    for name in ("optimizer state", "weights"):
        assert first["bytes"][name] == second["bytes"][name] == quarters[name], name


@pytest.mark.parametrize("kind", ["Consecutive", "Orthogonal"])
def test_replica_groups_train_across_processes_as_in_one_process(tmp_path, kind):
    """2 processes x 2 replicas, groups of 2: Consecutive groups lie within a
    process each ({0, 1}, {2, 3}), Orthogonal ones span both ({0, 2}, {1, 3}:
    each process sums its member's gradient with the other's); the bias is
    summed over all 4 replicas. Both processes read both groups back, as one
    process's replica-by-replica arithmetic gives them."""
    from test_replica_grouping import Grouped, eager_steps, groups_of

    first, second = run_two_processes(tmp_path, GROUPED.replace("Consecutive", kind))
    start = Grouped(2)
    weight, bias = eager_steps(start.weight.detach(), start.bias.detach(),
                               groups_of(getattr(popsim.CommGroupType, kind), 2), 3, 0.1)
    for saved in (first, second):
        assert_close(saved["weight"], weight)
        assert_close(saved["bias"], bias)


def test_a_process_dying_makes_the_other_fail_instead_of_hanging(tmp_path):
    script = tmp_path / "dying.py"
    script.write_text(DYING)
    report = tmp_path / "report.txt"
    port = str(free_port())
    workers = [subprocess.Popen([sys.executable, str(script), str(report)],
                                env=clean_environment(MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                                                      WORLD_SIZE="2", RANK=str(rank)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for rank in range(2)]
    try:
        codes = [worker.wait(timeout=180) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    assert codes == [0, 3], workers[0].stderr.read()[-3000:]
    message = report.read_text()
    assert "summing the gradient of 'first.weight' across processes failed (" in message, message
    assert "another process of the job stopped or cannot be reached" in message


RELEASING = textwrap.dedent("""
    import torch
    import torch.distributed as dist
    import popsim
    from popsim.device import process_group as _process_group

    options = popsim.Options()  # process 0 of 1, from WORLD_SIZE and RANK
    options.Distributed.configureProcessId(0, 1)
    add = _process_group.cross_process_sum(options, options.replication_factor, 2)
    add("w", 1, torch.ones(3))
    _process_group._release_at_exit()  # what atexit runs before the interpreter shuts down
    print(dist.is_initialized(), len(_process_group._MADE), len(_process_group._HOLDERS))
""")


def test_process_groups_are_released_before_the_interpreter_shuts_down(tmp_path):
    """A Gloo worker freeing a tensor during interpreter shutdown aborts the
    process; popsim destroys its process groups at exit, while Python runs."""
    script = tmp_path / "release.py"
    script.write_text(RELEASING)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120,
        env=clean_environment(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                              WORLD_SIZE="1", RANK="0"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["False", "0", "0"]
