"""popsim.Options: chaining, reading, freezing, cloning, PopTorch-style names."""

import inspect
import json
import os
import re

import pytest
import torch

import popsim
from popsim.api.option_fields import _setter_name
from models import MnistNetwork


def test_setters_chain_and_values_read_back():
    opts = popsim.Options().deviceIterations(10).outputMode(popsim.OutputMode.EveryN, 5)
    opts.Training.gradientAccumulation(2)
    assert opts.Simulator.numIpus(4).ipuVersion("bow").memoryPerIpu("1.5MiB") is opts.Simulator
    assert opts.device_iterations == 10
    assert opts.output_mode == popsim.OutputMode.EveryN
    assert opts.output_return_period == 5
    assert opts.Training.gradient_accumulation == 2
    assert opts.Simulator.num_ipus == 4
    assert opts.Simulator.ipu_version == "Bow"
    assert opts.Simulator.memory_per_ipu == 1572864


@pytest.mark.parametrize("text,size", [("100", 100), ("2KB", 2000), ("2 KiB", 2048),
                                       ("64MiB", 64 * 2**20), ("1gb", 10**9)])
def test_memory_sizes(text, size):
    assert popsim.Options().Simulator.memoryPerIpu(text).memory_per_ipu == size


def test_unknown_option_names_suggest_the_closest():
    opts = popsim.Options()
    with pytest.raises(AttributeError, match=r"Options has no option 'deviceIteration'\. Did you "
                                             r"mean 'deviceIterations'\?"):
        opts.deviceIteration(4)
    with pytest.raises(AttributeError, match=r"Options.Training has no option 'gradient_acumulation'"):
        opts.Training.gradient_acumulation  # noqa: B018


def test_assigning_a_field_goes_through_its_setter():
    """opts.replication_factor = 2, as PopTorch code writes it: the setter runs,
    with its checks and the freeze."""
    opts = popsim.Options()
    opts.replication_factor = 2
    opts.Training.gradient_accumulation = 4
    assert (opts.replication_factor, opts.Training.gradient_accumulation) == (2, 4)
    with pytest.raises(popsim.OptionError, match=r"replicationFactor expects a positive "
                                                 r"integer"):
        opts.replication_factor = 0
    frozen = popsim.Options()
    frozen._freeze()
    with pytest.raises(popsim.OptionError, match=r"^Can't modify frozen Options"):
        frozen.device_iterations = 3


def test_fields_whose_setters_take_more_are_read_only():
    with pytest.raises(AttributeError, match=r"Options.output_mode is read-only: set it with "
                                             r"the setter method, e.g. "
                                             r"Options.outputMode\(\.\.\.\)\."):
        popsim.Options().output_mode = popsim.OutputMode.All


def test_setters_take_poptorchs_keyword_names():
    opts = popsim.Options().deviceIterations(device_iterations=2)
    opts.replicationFactor(replication_factor=2).randomSeed(random_seed=5)
    opts.setAvailableMemoryProportion(available_memory_proportion={"IPU0": 0.3})
    opts.Training.gradientAccumulation(gradient_accumulation=3)
    opts.Precision.halfFloatCasting(
        half_float_casting=popsim.HalfFloatCastingBehavior.HalfUpcastToFloat)
    opts.outputMode(output_mode=popsim.OutputMode.EveryN, output_return_period=2)
    opts.Jit.traceModel(trace_model=False)
    opts.TensorLocations.setOptimizerLocation(
        location=popsim.TensorLocationSettings().useOnChipStorage(False))
    assert (opts.device_iterations, opts.replication_factor, opts.random_seed,
            opts.Training.gradient_accumulation) == (2, 2, 5, 3)


def test_options_freeze_when_given_to_a_model_and_clone_unfrozen():
    opts = popsim.Options().deviceIterations(2)
    model = popsim.inferenceModel(MnistNetwork(), opts)
    with pytest.raises(popsim.OptionError, match=r"^Can't modify frozen Options"):
        opts.deviceIterations(3)
    with pytest.raises(popsim.OptionError, match=r"^Can't modify frozen Options"):
        opts.Simulator.numIpus(2)
    twin = opts.clone().deviceIterations(3)
    assert twin.device_iterations == 3 and opts.device_iterations == 2
    assert model.options is not opts and model.options.device_iterations == 2


def test_random_seed_seeds_torch():
    popsim.Options().randomSeed(1234)
    first = torch.rand(3)
    popsim.Options().randomSeed(1234)
    assert torch.equal(first, torch.rand(3))


def test_use_ipu_model_is_accepted():
    assert popsim.Options().useIpuModel(True).use_ipu_model is True


def test_to_dict_and_repr():
    opts = popsim.Options().deviceIterations(3)
    values = opts.toDict()
    assert values["device_iterations"] == 3
    assert values["output_mode"] == "Default"
    assert values["Training"] == {"gradient_accumulation": 1,
                                  "accumulation_and_replication_reduction_type": "Mean",
                                  "mean_reduction_strategy": "Post",
                                  "recomputation_enabled": False,
                                  "automatic_loss_scaling": False,
                                  "convolution_dithering": False}
    assert "device_iterations=3" in repr(opts)


def test_execution_strategy_and_recomputation_options():
    opts = popsim.Options()
    opts.setExecutionStrategy(popsim.ShardedExecution(popsim.Stage("A", "B").ipu(1), "C"))
    assert opts.toDict()["execution_strategy"] == "ShardedExecution(Stage('A', 'B').ipu(1), Stage('C'))"
    assert opts.Training.recomputation(True).recomputation_enabled is True
    with pytest.raises(popsim.OptionError, match="Training.recomputation expects a bool"):
        opts.Training.recomputation(1)
    frozen = opts.clone()
    frozen._freeze()
    with pytest.raises(popsim.OptionError, match="Can't modify frozen Options"):
        frozen.setExecutionStrategy(popsim.PipelinedExecution())


def test_log_dir_receives_the_ir_and_memory_report(tmp_path):
    opts = popsim.Options().logDir(tmp_path)  # a pathlib.Path, or a str
    assert opts.log_dir == str(tmp_path)
    for bad in ("", 3, None):
        with pytest.raises(popsim.OptionError, match=r"^logDir expects a directory's path "):
            popsim.Options().logDir(bad)
    popsim.inferenceModel(MnistNetwork(), opts)(torch.randn(8, 1, 28, 28))
    files = sorted(os.listdir(tmp_path))
    assert any(name.endswith(".ir.txt") for name in files)
    report = next(name for name in files if name.endswith(".memory.json"))
    with open(tmp_path / report, encoding="utf-8") as stream:
        data = json.load(stream)
    assert data["memory"]["ipus"][0]["categories"]["weights"]["bytes"] > 0
    assert [step["op"] for step in data["program"]][:2] == ["convolution", "max_pool2d"]


def test_prefetch_depth():
    assert popsim.Options().prefetch_depth == 1
    assert popsim.Options().prefetchDepth(0).prefetch_depth == 0
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(popsim.OptionError,
                           match=r"^prefetchDepth expects a non-negative integer \(the "
                                 r"buffering depth; 2 or more prepares inputs ahead\), got "):
            popsim.Options().prefetchDepth(bad)


def test_every_field_is_assigned_through_its_setter_or_names_it():
    """Each field either takes an assignment through its one-value setter, or
    (its setter takes more) refuses it naming the setter."""
    opts = popsim.Options()
    opts.TensorLocations.weight_location = popsim.TensorLocationSettings().useOnChipStorage(False)
    assert not opts.TensorLocations.weight_location.on_chip
    for group in (opts, opts.Training, opts.Simulator, opts.TensorLocations, opts.Distributed,
                  opts.Precision, opts.Jit):
        for field in group._fields():
            setter = getattr(type(group), _setter_name(field), None)
            assert callable(setter), field
            if len(inspect.signature(setter).parameters) == 2:
                continue
            with pytest.raises(AttributeError) as raised:
                setattr(group, field, None)
            named = re.search(r"\.(\w+)\(\.\.\.\)\.$", str(raised.value)).group(1)
            assert named == _setter_name(field), (field, named)


def test_options_do_not_share_tensor_location_settings():
    first, second = popsim.Options(), popsim.Options()
    first.TensorLocations.weight_location.useOnChipStorage(False)
    assert second.TensorLocations.weight_location.on_chip
    assert popsim.Options().TensorLocations.weight_location.on_chip
    # A model's frozen copy does not follow later changes to the caller's options.
    opts = popsim.Options()
    model = popsim.inferenceModel(MnistNetwork(), opts)
    opts.TensorLocations.activation_location.useOnChipStorage(False)
    assert model.options.TensorLocations.activation_location.on_chip
    twin = model.options.clone()
    twin.TensorLocations.optimizer_location.useOnChipStorage(False)
    assert model.options.TensorLocations.optimizer_location.on_chip
