"""mnist_pipeline.py with each strategy and its options, run as users run it."""

import subprocess
import sys

import pytest
import torch

from tutorial_helpers import SCRIPT, child_environment, run_python, run_tutorial

# Two epochs of the offline digits (40 optimizer steps) reach about 90%.
SHORT = ("--epochs", "2")
ACCURACY_FLOOR = 85.0


@pytest.fixture(scope="module")
def pipelined_and_sharded(tmp_path_factory):
    """Both strategies trained the same way; their summaries and weights."""
    runs = {}
    for strategy in ("pipelined", "sharded"):
        directory = tmp_path_factory.mktemp(strategy)
        summary = run_tutorial(directory, *SHORT, "--strategy", strategy,
                               "--save-weights", directory / "weights.pt")
        runs[strategy] = summary, torch.load(directory / "weights.pt")
    return runs


@pytest.mark.timeout(300)
@pytest.mark.parametrize("strategy", ["pipelined", "sharded"])
def test_each_strategy_learns(pipelined_and_sharded, strategy):
    summary, _ = pipelined_and_sharded[strategy]
    assert summary["strategy"] == strategy
    assert summary["test_accuracy"] > ACCURACY_FLOOR, summary
    losses = [epoch["loss"] for epoch in summary["epochs"]]
    assert losses == sorted(losses, reverse=True), f"the loss should fall: {losses}"


@pytest.mark.timeout(300)
def test_sharded_and_pipelined_train_the_same_weights(pipelined_and_sharded):
    (pipelined, pipelined_weights), (sharded, sharded_weights) = (
        pipelined_and_sharded["pipelined"], pipelined_and_sharded["sharded"])
    assert pipelined_weights.keys() == sharded_weights.keys()
    for name, weight in pipelined_weights.items():
        assert torch.equal(weight, sharded_weights[name]), f"{name} differs"
    assert pipelined["test_accuracy"] == sharded["test_accuracy"]


@pytest.mark.timeout(300)
def test_pipelining_is_faster_and_stashes_activations(pipelined_and_sharded):
    pipelined, sharded = (pipelined_and_sharded[s][0] for s in ("pipelined", "sharded"))
    for fast, slow in zip(pipelined["epochs"], sharded["epochs"]):
        assert fast["simulated_seconds"] < slow["simulated_seconds"]
    # Pipelined IPUs hold activations of micro-batches waiting for their backward pass;
    # the last IPU runs forward and backward together, and sharded execution waits for none.
    stash = [[ipu["categories"]["stash"] for ipu in run["training_memory"]]
             for run in (pipelined, sharded)]
    assert all(size > 0 for size in stash[0][:3]) and stash[0][3] == 0, stash
    assert stash[1] == [0, 0, 0, 0], stash


@pytest.mark.timeout(120)
def test_too_little_gradient_accumulation_for_the_pipeline_is_explained(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--epochs", "1",
                             "--gradient-accumulation", "4"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=100,
                            env=child_environment())
    assert result.returncode != 0
    assert "gradientAccumulation must be at least the number of pipeline stages (7)" in (
        result.stderr)


@pytest.mark.timeout(120)
def test_debug_prints_the_pipeline_timeline(tmp_path):
    stdout = run_python(SCRIPT, "--epochs", "1", "--debug", timeout=100, cwd=tmp_path)
    assert "Interleaved schedule, 4 stage(s) on 4 IPU(s)" in stdout
    timeline = {line.split(" |")[0]: line for line in stdout.splitlines() if " | " in line}
    assert timeline["IPU0"].split()[2:4] == ["F0", "F1"]
    assert "FB0" in timeline["IPU3"]  # the last stage runs forward and backward together
    assert "stash" in stdout and "optimizer state" in stdout  # the memory categories


@pytest.mark.timeout(180)
def test_fashion_mnist_trains(tmp_path):
    summary = run_tutorial(tmp_path, "--epochs", "1", "--dataset", "fashion-mnist")
    assert (summary["train_images"], summary["test_images"]) == (60000, 10000)
    assert summary["test_accuracy"] > 72.0, summary


@pytest.mark.timeout(300)
def test_offloading_the_optimiser_saves_memory_not_accuracy(pipelined_and_sharded, tmp_path):
    on_chip, on_chip_weights = pipelined_and_sharded["pipelined"]
    summary = run_tutorial(tmp_path, *SHORT, "--offload-optimiser",
                           "--save-weights", tmp_path / "weights.pt")
    weights = torch.load(tmp_path / "weights.pt")
    for name, weight in weights.items():
        assert torch.equal(weight, on_chip_weights[name]), f"{name} differs"
    on_chip_total = sum(ipu["total"] for ipu in on_chip["training_memory"])
    offloaded_total = sum(ipu["total"] for ipu in summary["training_memory"])
    assert offloaded_total < on_chip_total


@pytest.mark.timeout(300)
@pytest.mark.parametrize("strategy", ["pipelined", "sharded"])
def test_profile_files_are_written(tmp_path, strategy):
    summary = run_tutorial(tmp_path, "--epochs", "1", "--strategy", strategy, "--profile",
                           "--profile-dir", tmp_path / "profile")
    assert summary["test_accuracy"] > 50.0
    for model in ("training", "inference"):
        for name in ("trace.json", "memory.json", "report.html"):
            path = tmp_path / "profile" / model / name
            assert path.is_file() and path.stat().st_size > 0, f"{path} missing or empty"
