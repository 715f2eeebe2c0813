import os
import socket
import sys

import pytest
import torch

# The tutorials' models are imported by the tests.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tutorials"))


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    torch.manual_seed(0)


@pytest.fixture
def counted(monkeypatch):
    """How often this process compiles programs and loads them from files (the executable
    cache's entries and loadExecutable's files)."""
    import popsim

    calls = {"compile": 0, "load": 0}
    executable_for, exported_executable = popsim._C.executable_for, popsim._C.exported_executable

    def executable_for_counted(*args):
        executable, origin, problems = executable_for(*args)
        calls["load" if origin == "cache" else "compile"] += 1
        return executable, origin, problems

    def exported_counted(*args):
        executable = exported_executable(*args)
        calls["load"] += 1
        return executable

    monkeypatch.setattr(popsim._C, "executable_for", executable_for_counted)
    monkeypatch.setattr(popsim._C, "exported_executable", exported_counted)
    return calls


def line_in(path, marker):
    """The line of the file at `path` that contains `marker` (error messages name lines)."""
    with open(path, encoding="utf-8") as source:
        lines = source.read().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if marker in line and "line_" not in line)


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, msg=None):
    """popsim results against eager PyTorch: fp32 tolerance of 1e-5 relative. `msg` is
    torch.testing.assert_close's (a string, or a function of its message)."""
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, msg=msg)


# Over many training steps popsim is judged against eager PyTorch in float64:
# its distance from it may not exceed eager float32's, plus a floor for values
# that eager float32 happens to reproduce almost exactly. Both round,
# differently (and which kernels oneDNN and ATen pick depends on the CPU), so
# the configurations of test_training.py stay out of chaotic regimes, where
# one run's distance is chance.
FLOAT64_DISTANCE_FLOOR = 1e-5


def relative_distance(actual, reference):
    """max |actual - reference| / max |reference|, in float64."""
    actual, reference = actual.double(), reference.double()
    if reference.numel() == 0:
        return 0.0
    scale = max(reference.abs().max().item(), 1e-30)
    return (actual - reference).abs().max().item() / scale


def assert_no_further_from_float64(popsim_results, eager32_results, eager64_results,
                                   floor=FLOAT64_DISTANCE_FLOOR):
    """For every named tensor: popsim's distance from eager float64's value is at most
    eager float32's distance + `floor` (both relative to the tensor's largest value)."""
    assert popsim_results.keys() == eager64_results.keys() == eager32_results.keys()
    failures = []
    for name, reference in eager64_results.items():
        if not reference.is_floating_point():
            assert torch.equal(popsim_results[name].long(), reference.long()), name
            continue
        ours = relative_distance(popsim_results[name], reference)
        eager = relative_distance(eager32_results[name], reference)
        if ours > eager + floor:
            failures.append(f"{name}: popsim {ours:.3g} from float64, eager float32 {eager:.3g}")
    assert not failures, "further from eager float64 than eager float32:\n" + "\n".join(failures)


ALIGNMENT = 64  # popsim's memory plan places every tensor on a 64-byte boundary


def aligned(nbytes):
    """The bytes a tensor of `nbytes` takes in popsim's memory plan."""
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


# No compilation progress bars in test output, and no profiles unless a test asks.
os.environ.setdefault("POPSIM_PROGRESS", "0")
os.environ.pop("POPSIM_PROFILE_DIR", None)
# Every program the tests compile is printed and read back after every
# compiler pass (ir/parser.h): the IR text is tested on every graph.
os.environ.setdefault("POPSIM_CHECK_IR_TEXT", "1")


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def torchrun_command(processes, log_dir, *script_and_arguments):
    """torchrun (as `python -m torch.distributed.run`, with this interpreter)
    starting `processes` processes of a script on 127.0.0.1. Debian's torch
    1.13 on Python 3.11 cannot parse torchrun's default "--redirects 0" and
    "--tee 0" (IntFlag iteration skips 0), so the command maps every rank."""
    ranks = ",".join(f"{rank}:1" for rank in range(processes))
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
            "--nproc_per_node", str(processes), "--master_addr", "127.0.0.1",
            "--master_port", str(free_port()), "--redirects", ranks, "--tee", ranks,
            "--log_dir", str(log_dir), *map(str, script_and_arguments)]
