"""Options.Distributed, as PopTorch's: the process ID and count come from the
launcher's environment (torchrun's RANK / WORLD_SIZE, else OpenMPI's) or
configureProcessId; popsim.DataLoader gives each process its own part of
every epoch, as PopTorch partitions it; inference runs in every process on
its own data, and training needs the processes to reach each other
(test_distributed_training.py trains across them). One test launches two
processes with torchrun on 127.0.0.1."""

import json
import os
import subprocess
import textwrap

import pytest
import torch

import popsim

from conftest import torchrun_command

LAUNCHERS = ("WORLD_SIZE", "RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")


@pytest.fixture
def environment(monkeypatch):
    for variable in LAUNCHERS:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_the_launchers_environment_names_the_process(environment):
    assert (popsim.Options().Distributed.processId,
            popsim.Options().Distributed.numProcesses) == (0, 1)
    environment.setenv("OMPI_COMM_WORLD_SIZE", "4")
    environment.setenv("OMPI_COMM_WORLD_RANK", "3")
    assert popsim.Options().Distributed.processId == 3
    environment.setenv("WORLD_SIZE", "2")  # torchrun's come first
    environment.setenv("RANK", "1")
    distributed = popsim.Options().Distributed
    assert (distributed.processId, distributed.numProcesses) == (1, 2)
    assert distributed.disable().numProcesses == 1
    environment.setenv("MY_SIZE", "8")
    environment.setenv("MY_RANK", "5")
    distributed = popsim.Options().Distributed.setEnvVarNames("MY_SIZE", "MY_RANK")
    assert (distributed.processId, distributed.numProcesses) == (5, 8)


@pytest.mark.parametrize("call,message", [
    (lambda d: d.configureProcessId(2, 2), r"a process ID from 0 to 1 for 2 process\(es\), got 2"),
    (lambda d: d.configureProcessId(0, 0), r"configureProcessId\(num_processes\) expects a "
     r"positive integer"),
    (lambda d: d.setEnvVarNames("BAD_SIZE", "RANK"), r"BAD_SIZE is 'two', not an integer"),
])
def test_bad_process_ids_are_refused(environment, call, message):
    environment.setenv("BAD_SIZE", "two")
    with pytest.raises(popsim.OptionError, match=message):
        call(popsim.Options().Distributed)


def process_samples(processes, process_id, epochs=1, **loader_arguments):
    """The sample IDs each epoch gives process `process_id` of `processes`."""
    options = popsim.Options().deviceIterations(2).randomSeed(7)
    options.Distributed.configureProcessId(process_id, processes)
    dataset = torch.utils.data.TensorDataset(torch.arange(100))
    loader = popsim.DataLoader(options, dataset, batch_size=2, **loader_arguments)
    return [torch.cat([ids.clone() for (ids,) in loader]).tolist() for _ in range(epochs)]


def test_each_process_reads_its_own_contiguous_part():
    # 100 samples, combined batches of 4, 3 processes: 8 batches (32 samples) each.
    parts = [process_samples(3, rank)[0] for rank in range(3)]
    assert parts == [list(range(0, 32)), list(range(32, 64)), list(range(64, 96))]


@pytest.mark.parametrize("loader_arguments", [
    {}, {"num_workers": 2}, {"mode": popsim.DataLoaderMode.Async}])
def test_shuffled_parts_reshuffle_every_epoch_and_never_overlap(loader_arguments):
    """As torch's DistributedSampler with set_epoch: every epoch each process
    takes its contiguous range of a permutation of the whole dataset that all
    processes draw alike from the seed and the epoch, so the parts never
    overlap, each epoch reshuffles, and other samples are left over each
    epoch; also with workers that persist across epochs, and loading in the
    background."""
    epochs = [process_samples(3, rank, epochs=4, shuffle=True, **loader_arguments)
              for rank in range(3)]
    for epoch in range(4):
        permutation = torch.randperm(100, generator=torch.Generator().manual_seed(7 + epoch))
        for rank in range(3):
            assert epochs[rank][epoch] == permutation[32 * rank:32 * (rank + 1)].tolist()
    assert set(epochs[0][0]) != set(epochs[0][1])
    assert len(set().union(*epochs[0])) > 64  # process 0 sees more than one part's worth


def test_partitioning_needs_a_seed_to_shuffle_and_a_map_style_dataset():
    options = popsim.Options()
    options.Distributed.configureProcessId(0, 2)
    dataset = torch.utils.data.TensorDataset(torch.arange(16))
    with pytest.raises(popsim.OptionError, match=r"you must set Options.randomSeed\(\), the same "
                       r"in every process"):
        popsim.DataLoader(options, dataset, shuffle=True)

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(8))

    with pytest.raises(popsim.OptionError, match=r"cannot split an iterable dataset for process "
                       r"0 of 2 .*auto_distributed_partitioning=False"):
        popsim.DataLoader(options, Stream())
    whole = popsim.DataLoader(options, dataset, auto_distributed_partitioning=False)
    assert len(whole) == 16


def test_training_needs_the_launchers_rendezvous_and_inference_runs_alone(environment):
    environment.setenv("WORLD_SIZE", "2")
    environment.setenv("RANK", "1")
    environment.delenv("MASTER_ADDR", raising=False)
    environment.delenv("MASTER_PORT", raising=False)
    class Regression(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 2)

        def forward(self, x):
            return torch.nn.functional.mse_loss(self.linear(x), torch.zeros(x.shape[0], 2))

    trainer = popsim.trainingModel(Regression(), popsim.Options())
    with pytest.raises(popsim.OptionError, match=r"this is process 1 of 2, but MASTER_ADDR and "
                       r"MASTER_PORT are not set, so popsim cannot reach the other processes. "
                       r"Launch the script with torchrun"):
        trainer(torch.randn(4, 3))
    model = torch.nn.Linear(3, 2)
    inference = popsim.inferenceModel(model, popsim.Options())
    x = torch.randn(4, 3)
    assert torch.equal(inference(x), popsim.inferenceModel(model)(x))


WORKER = textwrap.dedent("""
    import json
    import sys
    import torch
    import torch.distributed as dist
    import popsim

    dist.init_process_group("gloo", timeout=__import__("datetime").timedelta(seconds=60))
    options = popsim.Options().deviceIterations(2).randomSeed(3)
    dataset = torch.utils.data.TensorDataset(torch.arange(40), torch.randn(40, 3))
    loader = popsim.DataLoader(options, dataset, batch_size=4, shuffle=True)
    torch.manual_seed(0)
    model = popsim.inferenceModel(torch.nn.Linear(3, 2), options)
    ids, rows = [], 0
    for batch_ids, x in loader:
        rows += model(x).shape[0]
        ids.append(batch_ids)
    mine = torch.cat(ids)
    gathered = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, mine)
    if dist.get_rank() == 0:
        with open(sys.argv[1], "w") as out:
            json.dump({"parts": [g.tolist() for g in gathered], "rows": rows,
                       "process": options.Distributed.processId,
                       "processes": options.Distributed.numProcesses}, out)
    dist.destroy_process_group()
""")


def test_two_processes_launched_by_torchrun_read_disjoint_parts(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    report_path = tmp_path / "report.json"
    command = torchrun_command(2, tmp_path / "logs", script, report_path)
    environment = {k: v for k, v in os.environ.items() if k not in LAUNCHERS}
    environment["OMP_NUM_THREADS"] = "1"
    result = subprocess.run(command, env=environment, capture_output=True, text=True,
                            timeout=240, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert (report["process"], report["processes"]) == (0, 2)
    first, second = (set(part) for part in report["parts"])
    assert len(first) == len(second) == 16  # 40 samples: 2 combined batches of 8 each
    assert not first & second
    assert report["rows"] == 16
