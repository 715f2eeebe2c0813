"""availableMemoryProportion: each IPU bounds the temporaries of its matmuls and
convolutions, which run in serial passes when they need more."""

import json
import math

import pytest
import torch
import torch.nn as nn

import popsim
from popsim import profiling

# Linear(512, 1024) on a micro-batch of 256: x, the weight and y.
X, W, Y = 256 * 512 * 4, 1024 * 512 * 4, 256 * 1024 * 4
ONE_PASS = X + W + Y  # operands gathered onto tiles + fp32 partial sums
MIB64 = 64 * 2**20


def exchange_cycles(bytes_):
    return math.ceil(bytes_ / (1472 * 4))  # Mk2: 4 bytes per tile-cycle on 1472 tiles


def linear_model(proportions=None, memory=None, profile=None):
    torch.manual_seed(0)
    opts = popsim.Options()
    if proportions is not None:
        opts.setAvailableMemoryProportion(proportions)
    if memory is not None:
        opts.Simulator.memoryPerIpu(memory)
    if profile is not None:
        opts.enableProfiling(str(profile))
    return popsim.inferenceModel(nn.Linear(512, 1024), opts)


def test_by_default_temporaries_are_reported_and_unsplit():
    model = linear_model()
    model(torch.randn(256, 512))
    ipu = model.memoryReport()["ipus"][0]
    # y is the only activation, live while the linear runs: its temporaries come on top.
    assert ipu["categories"]["temporaries"] == {"bytes": ONE_PASS, "always_live": False}
    assert ipu["temporary_budget"] == int(0.6 * ipu["capacity"])


def test_a_binding_proportion_splits_the_op_into_passes(tmp_path):
    x = torch.randn(256, 512)
    free = linear_model(memory=MIB64)
    bound = linear_model({"IPU0": 0.05}, memory=MIB64, profile=tmp_path)
    expected = free(x)
    assert torch.equal(bound(x), expected)  # the same numbers

    # 5% of 64 MiB is 3,355,443 bytes, less than the 3.5 MiB of one pass: two passes.
    budget = int(0.05 * MIB64)
    assert budget < ONE_PASS <= 2 * budget
    ipu = bound.memoryReport()["ipus"][0]
    assert ipu["temporary_budget"] == budget
    assert ipu["categories"]["temporaries"]["bytes"] == ONE_PASS // 2
    assert (free.memoryReport()["ipus"][0]["total"] - ipu["total"]) == ONE_PASS // 2
    # The second pass syncs (40 cycles) and exchanges the smaller operand, x, again.
    assert (bound.executionTrace().total_cycles - free.executionTrace().total_cycles
            == 40 + exchange_cycles(X))

    # The profile shows it: memory.json, the op's trace event and the CLI's advice.
    directory = tmp_path / "inference"
    memory = json.loads((directory / "memory.json").read_text())
    temporaries = memory["ipus"][0]["temporaries"]
    assert temporaries["budget"] == budget and temporaries["available_memory_proportion"] == 0.05
    [split] = temporaries["split_ops"]
    assert (split["op"], split["passes"], split["bytes_per_pass"], split["bytes_in_one_pass"]) == (
        "linear", 2, ONE_PASS // 2, ONE_PASS)
    trace = json.loads((directory / "trace.json").read_text())
    [op] = [e for e in trace["traceEvents"] if e.get("cat") == "op" and e["name"] == "linear"]
    assert op["args"]["passes"] == 2 and op["args"]["temporary_bytes"] == ONE_PASS // 2
    text = profiling.load(str(directory)).summary()
    # 3.5 MiB of 64 MiB is 0.0547: rounded up, one pass needs 0.055.
    assert ("IPU 0: availableMemoryProportion caps each matmul or convolution's temporaries "
            "at 3.20 MiB, so 1 op(s) run in serial passes") in text
    assert "setAvailableMemoryProportion({'IPU0': 0.055}) runs them in one pass" in text


def test_lowering_the_proportion_makes_a_model_fit():
    x = torch.randn(256, 512)
    with pytest.raises(popsim.OutOfMemoryError,
                       match=r"(?s)temporaries: .*lower IPU0's availableMemoryProportion "
                             r"\(Options.setAvailableMemoryProportion\) so matmuls and "
                             r"convolutions run in smaller passes"):
        linear_model(memory="7MiB")(x)
    model = linear_model({"IPU0": 0.2}, memory="7MiB")
    model(x)
    ipu = model.memoryReport()["ipus"][0]
    assert ipu["total"] <= ipu["capacity"]
    assert ipu["categories"]["temporaries"]["bytes"] == math.ceil(ONE_PASS / 3)


class TwoStages(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(512, 1024)
        self.second = nn.Linear(1024, 512)

    def forward(self, x):
        with popsim.Block("A", ipu_id=0):
            x = torch.relu(self.first(x))
        with popsim.Block("B", ipu_id=1):
            return self.second(x)


def test_each_ipu_has_its_own_proportion(tmp_path):
    opts = popsim.Options().deviceIterations(2).enableProfiling(str(tmp_path))
    opts.Simulator.memoryPerIpu(MIB64)
    opts.setAvailableMemoryProportion({"IPU1": 0.05})
    model = popsim.inferenceModel(TwoStages(), opts)
    model(torch.randn(2 * 256, 512))
    memory = json.loads((tmp_path / "inference" / "memory.json").read_text())
    first, second = (ipu["temporaries"] for ipu in memory["ipus"])
    assert first["budget"] == int(0.6 * MIB64) and first["split_ops"] == []
    assert second["budget"] == int(0.05 * MIB64)
    assert [(op["op"], op["passes"]) for op in second["split_ops"]] == [("linear", 2)]


def test_proportion_errors():
    opts = popsim.Options()
    with pytest.raises(popsim.OptionError, match=r"^setAvailableMemoryProportion expects a dict "
                                                 r"such as \{'IPU0': 0.6\}, got 0.5\."):
        opts.setAvailableMemoryProportion(0.5)
    for key in ("ipu0", "GPU1", 0):
        with pytest.raises(popsim.OptionError,
                           match=rf"^setAvailableMemoryProportion: key {key!r} should name an "
                                 r"IPU as 'IPU<n>', such as 'IPU0'\."):
            opts.setAvailableMemoryProportion({key: 0.5})
    for value in (0, 1.5, True, "0.5"):
        with pytest.raises(popsim.OptionError,
                           match=r"^setAvailableMemoryProportion: the proportion for IPU0 must be "
                                 rf"a number in \(0, 1\], got {value!r}\."):
            opts.setAvailableMemoryProportion({"IPU0": value})
    opts.setAvailableMemoryProportion({"IPU0": 1, "IPU3": 0.25})
    assert opts.available_memory_proportion == {0: 1.0, 3: 0.25}


def test_a_proportion_for_an_ipu_the_model_does_not_use_is_left_out(capfd):
    """PopTorch code written for more IPUs than a run uses keeps working, with a warning."""
    opts = popsim.Options()
    opts.setAvailableMemoryProportion({"IPU0": 0.7, "IPU1": 0.2})
    linear = nn.Linear(4, 4)
    x = torch.randn(2, 4)
    torch.testing.assert_close(popsim.inferenceModel(linear, opts)(x), linear(x))
    assert ("setAvailableMemoryProportion names IPU1, which this program does not use (it runs "
            "on 1 IPU(s) per replica, IPU0 to IPU0): the entry has no effect."
            in capfd.readouterr().err)


class TwoLinears(nn.Module):
    """Two Linear(512, 1024)-sized layers on one IPU; `hint` is given to
    set_available_memory on the first one's output (through a view)."""

    def __init__(self, hint):
        super().__init__()
        self.first, self.second = nn.Linear(512, 1024), nn.Linear(1024, 512)
        self.hint = hint

    def forward(self, x):
        y = self.first(x)
        if self.hint is not None:
            y = popsim.set_available_memory(y.reshape(256, 32, 32), self.hint).reshape(256, 1024)
        return self.second(torch.relu(y))


def test_set_available_memory_bounds_only_the_op_that_made_the_tensor(tmp_path):
    x = torch.randn(256, 512)
    results = {}
    for hint in (None, 0.05):
        torch.manual_seed(0)
        opts = popsim.Options().enableProfiling(str(tmp_path / str(hint)))
        opts.Simulator.memoryPerIpu(MIB64)
        model = popsim.inferenceModel(TwoLinears(hint), opts)
        results[hint] = model(x)
        memory = json.loads((tmp_path / str(hint) / "inference" / "memory.json").read_text())
        results[hint, "split"] = [(op["op"], op["passes"], op["bytes_per_pass"])
                                  for op in memory["ipus"][0]["temporaries"]["split_ops"]]
        results[hint, "cycles"] = model.executionTrace().total_cycles
    assert torch.equal(results[0.05], results[None])
    # The first linear alone runs in two passes (5% of 64 MiB < its 3.5 MiB);
    # the second keeps the IPU's budget (60%).
    assert results[None, "split"] == []
    assert results[0.05, "split"] == [("linear", 2, ONE_PASS // 2)]
    assert results[0.05, "cycles"] == results[None, "cycles"] + 40 + exchange_cycles(X)


def test_set_available_memory_on_other_ops_warns_and_checks_its_argument(capfd):
    class Pooled(nn.Module):
        def forward(self, x):
            return popsim.set_available_memory(torch.relu(x), 0.3) * 2

    x = torch.randn(4, 8)
    assert torch.equal(popsim.inferenceModel(Pooled())(x), torch.relu(x) * 2)
    assert ("set_available_memory has no effect on relu at " in capfd.readouterr().err)
    for bad in (0.0, 1.5, "0.3", True):
        with pytest.raises(ValueError, match=r"popsim\.set_available_memory expects "
                                             r"available_memory_proportion in \(0, 1\], got "):
            popsim.set_available_memory(x, bad)
