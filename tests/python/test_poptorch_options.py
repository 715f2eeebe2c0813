"""PopTorch options beyond the simulator's own, as PopTorch documents them:
outputMode's period ignored outside EveryN, autoRoundNumIPUs,
logCycleCount, showCompilationProgressBar, connectionType and
useOfflineIpuTarget, updatableNamedBuffers with copyNamedBuffersToDevice,
loadFromFile, modelName, relaxOptimizerAttributesChecks, and the options
popsim records (syncPattern, which the clock also follows, enableStableNorm,
_Popart.set)."""

import copy
import logging
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import popsim
from models import MnistNetwork

IMAGES = torch.randn(8, 1, 28, 28)


class ThreeBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, x):
        for ipu, layer in enumerate(self.layers):
            with popsim.Block(f"B{ipu}", ipu_id=ipu):
                x = torch.relu(layer(x))
        return x


def test_output_return_period_is_ignored_outside_every_n(caplog):
    with caplog.at_level(logging.INFO, logger="popsim"):
        opts = popsim.Options().outputMode(popsim.OutputMode.All, 3)
    assert opts.output_mode == popsim.OutputMode.All and opts.output_return_period == 1
    assert "output_return_period is ignored; only OutputMode.EveryN uses it" in caplog.text


@pytest.mark.parametrize("auto_round,ipus", [(False, 3), (True, 4)])
def test_auto_round_num_ipus_rounds_the_system_up_to_a_power_of_two(auto_round, ipus):
    opts = popsim.Options().deviceIterations(3).autoRoundNumIPUs(auto_round)
    model = popsim.inferenceModel(ThreeBlocks(), opts)
    model(torch.randn(6, 4))
    report = model.memoryReport()["ipus"]
    assert [entry["ipu"] for entry in report] == list(range(ipus))
    assert report[2]["total"] > 0
    if auto_round:
        assert report[3]["total"] == 0  # the extra IPU idles
    # Simulator.numIpus, when set, decides.
    fixed = opts.clone()
    fixed.Simulator.numIpus(8)
    model = popsim.inferenceModel(ThreeBlocks(), fixed)
    model(torch.randn(6, 4))
    assert len(model.memoryReport()["ipus"]) == 8


def test_log_cycle_count_logs_each_call(caplog):
    model = popsim.inferenceModel(MnistNetwork(), popsim.Options().logCycleCount(True))
    with caplog.at_level(logging.INFO, logger="popsim"):
        model(IMAGES)
    assert model.cycleCount() > 0
    assert f"Total number of IPU cycles: {model.cycleCount()}" in caplog.text
    silent = popsim.inferenceModel(MnistNetwork())
    with caplog.at_level(logging.INFO, logger="popsim"):
        caplog.clear()
        silent(IMAGES)
    assert "cycles" not in caplog.text


@pytest.mark.timeout(60)
def test_show_compilation_progress_bar_false_hides_the_bar(monkeypatch, capsys):
    monkeypatch.setenv("POPSIM_PROGRESS", "1")
    hidden = popsim.Options().showCompilationProgressBar(False)
    popsim.inferenceModel(MnistNetwork(), hidden).compile(IMAGES)
    assert capsys.readouterr().err == ""
    shown = popsim.Options().showCompilationProgressBar(True)
    popsim.inferenceModel(MnistNetwork(), shown).compile(IMAGES)
    assert "Graph compilation" in capsys.readouterr().err


def test_on_demand_attaches_when_the_model_first_runs():
    network = MnistNetwork().eval()
    opts = popsim.Options().connectionType(popsim.ConnectionType.OnDemand)
    model = popsim.inferenceModel(network, opts)
    model.compile(IMAGES)
    assert model.isCompiled() and not model.isAttachedToDevice()
    with torch.no_grad():
        expected = network(IMAGES)
    torch.testing.assert_close(model(IMAGES), expected)
    assert model.isAttachedToDevice()


@pytest.mark.parametrize("opts", [
    popsim.Options().connectionType(popsim.ConnectionType.Never),
    popsim.Options().useOfflineIpuTarget(1),
])
def test_an_offline_target_compiles_but_does_not_run(opts):
    model = popsim.inferenceModel(MnistNetwork(), opts)
    # A call is refused before it compiles, with PopTorch's words and class (an assertion).
    offline = r"Trying to run a model on an offline device \(ConnectionType.Never\): use model.compile"
    with pytest.raises(AssertionError, match=offline) as refused:
        model(IMAGES)
    assert isinstance(refused.value, popsim.OptionError)
    assert refused.value.option == "connectionType"
    assert not model.isCompiled()
    model.compile(IMAGES)
    assert model.isCompiled() and not model.isAttachedToDevice()
    assert model.memoryReport()["ipus"][0]["total"] > 0
    with pytest.raises(popsim.OfflineTargetError, match=offline):
        model(IMAGES)
    message = (r"compiled with connectionType\(ConnectionType.Never\) \(which useOfflineIpuTarget "
               r"sets\): it compiles for an offline target and cannot run")
    with pytest.raises(popsim.OptionError, match=message):
        model.attachToDevice()


def test_use_offline_ipu_target_picks_the_generation():
    assert popsim.Options().useOfflineIpuTarget(1).Simulator.ipu_version == "Mk1"
    assert popsim.Options().useOfflineIpuTarget().Simulator.ipu_version == "Mk2"
    assert popsim.Options().useOfflineIpuTarget(21).Simulator.ipu_version == "Bow"


class Shifted(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.register_buffer("shift", torch.zeros(3))
        self.register_buffer("scale", torch.ones(3))

    def forward(self, x):
        return self.linear(x) * self.scale + self.shift


def test_copy_named_buffers_to_device_copies_those_buffers_only():
    host = Shifted()
    opts = popsim.Options().updatableNamedBuffers(["shift"])
    model = popsim.inferenceModel(host, opts)
    x = torch.randn(2, 3)
    before = model(x)
    with torch.no_grad():
        host.shift.fill_(10.0)
        host.scale.fill_(2.0)   # not named: stays 1 on the device
        host.linear.bias.add_(1.0)  # a weight: only copyWeightsToDevice copies it
    model.copyNamedBuffersToDevice()
    torch.testing.assert_close(model(x), before + 10.0)
    model.copyWeightsToDevice()
    torch.testing.assert_close(model(x), (before + 1.0) * 2.0 + 10.0)


def test_copy_named_buffers_to_device_names_what_is_wrong():
    model = popsim.inferenceModel(Shifted())
    model(torch.randn(2, 3))
    with pytest.raises(popsim.OptionError, match=r"Options.updatableNamedBuffers\(\[\.\.\.\]\), "
                                                 r"and this model's options name none"):
        model.copyNamedBuffersToDevice()
    wrong = popsim.inferenceModel(Shifted(), popsim.Options().updatableNamedBuffers(["shfit"]))
    wrong(torch.randn(2, 3))
    with pytest.raises(popsim.OptionError, match=r"names \['shfit'\], which the model does not "
                                                 r"have; its buffers are \['scale', 'shift'\]"):
        wrong.copyNamedBuffersToDevice()


def test_recorded_options_show_in_to_dict():
    opts = (popsim.Options().syncPattern(popsim.SyncPattern.SinglePipeline)
            .broadcastBuffers(False).enableStableNorm(True).logCycleCount(True))
    opts._Popart.set("enableOutlining", False)
    opts._Popart.setEngineOptions({"debug.allowOutOfMemory": "true"})
    values = opts.toDict()
    assert values["sync_pattern"] == "SinglePipeline" and values["broadcast_buffers"] is False
    assert values["_Popart"] == {"enableStableNorm": True,
                                 "instrumentWithHardwareCycleCounter": True,
                                 "enableOutlining": False,
                                 "engineOptions": {"debug.allowOutOfMemory": "true"}}
    assert opts._Popart.enableOutlining is False
    # Recorded options reach the model's frozen copy.
    model = popsim.inferenceModel(MnistNetwork(), opts)
    assert model.options._Popart.enableOutlining is False
    with pytest.raises(popsim.OptionError, match="Can't modify frozen Options"):
        opts._Popart.set("enableOutlining", True)


@pytest.mark.timeout(120)
def test_popsim_log_level_info_prints_the_cycle_counts():
    script = ("import torch, popsim\n"
              "model = popsim.inferenceModel(torch.nn.Linear(3, 3),\n"
              "                              popsim.Options().logCycleCount(True))\n"
              "model(torch.randn(2, 3))\n"
              "print(model.cycleCount())\n")
    env = dict(os.environ, POPSIM_LOG_LEVEL="info", POPSIM_PROGRESS="0")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=100, check=True)
    cycles = int(done.stdout.strip())
    assert f"[popsim info] Total number of IPU cycles: {cycles}" in done.stderr


def test_precision_and_jit_options_chain_and_check_their_values():
    opts = popsim.Options()
    opts.Precision.setPartialsType(torch.half).runningStatisticsAlwaysFloat(True)
    opts.Precision.halfFloatCasting(popsim.HalfFloatCastingBehavior.HalfUpcastToFloat)
    opts.Precision.enableFloatingPointExceptions(True).enableStochasticRounding(True)
    opts.Jit.traceModel(True)
    precision = opts.toDict()["Precision"]
    assert precision["half_float_casting"] == "HalfUpcastToFloat"
    assert precision["partials_type"] == torch.half and precision["stochastic_rounding"]
    for setter, message in [
            (lambda: opts.Precision.setPartialsType(torch.int32),
             r"setPartialsType expects torch.float or torch.half"),
            (lambda: opts.Precision.halfFloatCasting("half"),
             r"halfFloatCasting expects a popsim.HalfFloatCastingBehavior"),
            (lambda: opts.Jit.traceModel("yes"), r"Jit.traceModel expects True or False")]:
        with pytest.raises(popsim.OptionError, match=message):
            setter()


def test_synthetic_data_runs_without_host_io():
    """enableSyntheticData: the device's own random-normal data instead of the
    inputs, nothing copied back, no host transfers on the simulated clock."""
    from popsim.compile import compilation as _compilation

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 3)

        def forward(self, x, labels):
            out = self.fc(x)
            return out, torch.nn.functional.cross_entropy(out, labels)

    x, labels = torch.randn(8, 6), torch.randint(0, 3, (8,))
    models = []
    for synthetic in (True, False):
        torch.manual_seed(0)
        model = Classifier()
        opts = popsim.Options().randomSeed(5).enableSyntheticData(synthetic)
        trainer = popsim.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
        inputs = (x, labels) if synthetic else _compilation.synthetic_inputs([x, labels], 5)
        outputs = [trainer(*inputs) for _ in range(2)][-1]
        trainer.copyWeightsToHost()
        events = {event["kind"] for event in trainer.executionTrace().events}
        models.append((model, outputs, events, trainer.cycleCount()))
    (synthetic, outputs, events, cycles), (real, real_outputs, real_events, real_cycles) = models
    # The device trained on its own data: the same as feeding that data in.
    assert torch.equal(synthetic.fc.weight, real.fc.weight)
    assert all(torch.equal(o, torch.zeros_like(o)) for o in outputs)
    assert not torch.equal(real_outputs[0], torch.zeros_like(real_outputs[0]))
    assert "host_input" in real_events and not {"host_input", "host_output"} & events
    assert cycles < real_cycles
    assert popsim.Options().enableSyntheticData(True)._Popart.toDict()["syntheticDataMode"] == 2


def test_anchor_mode_is_poptorchs_earlier_name_for_output_mode():
    import popsim.enums

    assert popsim.AnchorMode is popsim.OutputMode is popsim.enums.AnchorMode
    opts = popsim.Options().outputMode(popsim.AnchorMode.EveryN, 2)
    assert opts.output_mode == popsim.OutputMode.EveryN and opts.output_return_period == 2
    # PopTorch 2's setter, deprecated: it sets the output mode, and a model returns as set.
    with pytest.warns(DeprecationWarning, match=r"^Options.anchorMode is deprecated \(as in "
                      r"PopTorch\): use Options.outputMode\(mode, output_return_period\).$"):
        opts = popsim.Options().deviceIterations(4).anchorMode(popsim.AnchorMode.EveryN, 2)
    assert opts.output_mode == popsim.OutputMode.EveryN and opts.output_return_period == 2
    with pytest.warns(DeprecationWarning, match="defaultAnchorMode is deprecated"):
        assert not opts.defaultAnchorMode()
    x = torch.randn(4, 3)
    assert popsim.inferenceModel(torch.nn.Linear(3, 2).eval(), opts)(x).shape == (2, 2)


def test_options_load_from_a_file_of_setter_calls(tmp_path):
    config = tmp_path / "poptorch.conf"
    config.write_text("# the tutorial's settings\n"
                      "deviceIterations(4)  # a comment after a setter is left out\n"
                      "\n"
                      "  Training.gradientAccumulation(2)\n"
                      "setExecutionStrategy(poptorch.ShardedExecution())\n"
                      "outputMode(poptorch.OutputMode.EveryN, output_return_period=2)\n"
                      "Training.setMeanAccumulationAndReplicationReductionStrategy("
                      "poptorch.MeanReductionStrategy.Running)\n"
                      "Simulator.memoryPerIpu(64 * 1024 ** 2)\n"
                      "modelName('net # 1')  # a # in a string is not a comment\n")
    opts = popsim.Options().loadFromFile(str(config))
    assert opts.model_name == "net # 1"
    assert opts.device_iterations == 4 and opts.Training.gradient_accumulation == 2
    assert isinstance(opts.execution_strategy, popsim.ShardedExecution)
    assert (opts.output_mode, opts.output_return_period) == (popsim.OutputMode.EveryN, 2)


@pytest.mark.parametrize("line,message", [
    ("deviceIterations(0)", r"bad.conf'\), line 1 \('deviceIterations\(0\)'\): "
                            "deviceIterations expects a positive integer"),
    ("import os", "each line must call one option setter"),
    ("Training.noSuchOption(1)", "Options.Training has no setter 'noSuchOption'"),
    ("__class__(1)", "each line must call one option setter"),
    ("deviceIterations(open('x'))", "cannot evaluate its arguments: the name 'open' is not "
                                    "known here"),
    ("deviceIterations(__import__('os').system('true'))", "the name '__import__' is not known"),
    ("deviceIterations(torch.load('x'))", "only popsim's classes and bool, dict, float, int, "
                                          "list, str, tuple are called, not 'load'"),
    ("deviceIterations(popsim._C.compile)", "the attribute '_C' is private"),
    ("deviceIterations(2 ** 10 ** 10)", "exponents above 64 are not read"),
    ("deviceIterations([x for x in 'ab'])", "ListComp expressions are not read"),
    ("deviceIterations(1), __import__('os')", "the line is not one call"),
])
def test_bad_option_file_lines_name_the_file_and_line(tmp_path, line, message):
    config = tmp_path / "bad.conf"
    config.write_text(line + "\n")
    with pytest.raises(popsim.OptionError, match=message):
        popsim.Options().loadFromFile(str(config))
    with pytest.raises(popsim.OptionError, match="cannot read it"):
        popsim.Options().loadFromFile(str(tmp_path / "missing.conf"))


def test_a_line_that_is_not_python_is_a_config_file_error_as_poptorchs(tmp_path):
    """PopTorch reads each line as options.<line>: a syntax error is a ConfigFileError
    naming the line's number and the line."""
    config = tmp_path / "tmp.conf"
    config.write_text("deviceIterations(2)\n\n# a comment\nreplicationFactor(1)\n"
                      "outputMode(poptorch.OutputMode.All\n")
    with pytest.raises(popsim.options.ConfigFileError) as error:
        popsim.Options().loadFromFile(str(config))
    assert f"SyntaxError at line 5 of {config}: '(' was never closed\n" \
        "> options.outputMode(poptorch.OutputMode.All" in str(error.value)
    assert isinstance(error.value, popsim.OptionError)
    config.write_text("Training.noSuchOption(1)\n")
    with pytest.raises(popsim.options.ConfigFileError, match="has no setter 'noSuchOption'"):
        popsim.Options().loadFromFile(str(config))


def test_model_name_names_the_profile_subdirectory(tmp_path):
    opts = popsim.Options().enableProfiling(str(tmp_path)).modelName("mnist")
    model = popsim.inferenceModel(nn.Linear(3, 2), opts)
    model(torch.randn(2, 3))
    assert model.profileDirectory() == str(tmp_path / "mnist")
    other = popsim.inferenceModel(nn.Linear(3, 2), opts)
    other(torch.randn(2, 3))
    assert other.profileDirectory() == str(tmp_path / "mnist_1")
    # popsim.profiling finds profiles by their model's name too.
    from popsim import profiling
    assert [os.path.basename(p.directory) for p in profiling.load_all(tmp_path)] == [
        "mnist", "mnist_1"]
    assert profiling.load(tmp_path / "mnist").directory == str(tmp_path / "mnist")
    with pytest.raises(popsim.OptionError, match="modelName expects a non-empty name"):
        popsim.Options().modelName("a/b")


def test_unused_optimizer_attributes_are_warned_about_once_unless_relaxed(caplog):
    class Regression(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 1)

        def forward(self, x):
            return nn.functional.mse_loss(self.linear(x), torch.zeros(x.shape[0], 1))

    x = torch.randn(4, 3)
    for relax in (False, True):
        model = Regression()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        optimizer.param_groups[0]["my_schedule_phase"] = 3
        torch.optim.lr_scheduler.StepLR(optimizer, 1)  # adds initial_lr: expected
        trainer = popsim.trainingModel(
            model, popsim.Options().relaxOptimizerAttributesChecks(relax), optimizer)
        with caplog.at_level(logging.DEBUG, logger="popsim"):
            if relax:
                trainer(x)
            else:
                with pytest.warns(UserWarning, match="has an attribute 'my_schedule_phase' "
                                  "that SGD does not define; popsim ignores it"):
                    trainer(x)
        trainer.setOptimizer(optimizer)  # said once only
        assert ("my_schedule_phase" in caplog.text) == relax
        caplog.clear()


def test_popart_prefetch_buffering_depth_is_the_prefetch_depth():
    def prefetch_bytes(opts):
        model = popsim.inferenceModel(nn.Linear(64, 8), opts.deviceIterations(8))
        model(torch.randn(8 * 4, 64))
        return model.memoryReport()["ipus"][0]["categories"]["prefetch buffers"]["bytes"]

    # PopTorch's guide: opts._Popart.set("defaultPrefetchBufferingDepth", 3).
    opts = popsim.Options()
    opts._Popart.set("defaultPrefetchBufferingDepth", 3)
    assert opts.prefetch_depth == 3
    assert prefetch_bytes(opts) == 3 * prefetch_bytes(popsim.Options().prefetchDepth(1)) > 0
    assert popsim.Options().prefetchDepth(2)._Popart.defaultPrefetchBufferingDepth == 2
    with pytest.raises(popsim.OptionError, match=r"_Popart.set\('defaultPrefetchBufferingDepth', "
                       r"...\) expects a non-negative integer"):
        popsim.Options()._Popart.set("defaultPrefetchBufferingDepth", -1)


def test_default_output_mode_says_whether_the_mode_is_still_the_default():
    opts = popsim.Options()
    assert opts.defaultOutputMode() is True
    opts.outputMode(popsim.OutputMode.All)
    assert opts.defaultOutputMode() is False
    assert opts.outputMode(popsim.OutputMode.Default).defaultOutputMode() is True


def test_tensor_locations_read_back_as_poptorchs_dictionaries():
    """opts.TensorLocations.location_* hold PopTorch's keys, switches as 0 or 1,
    and a deep copy keeps the settings it was taken with."""
    opts = popsim.Options()
    opts.TensorLocations.setWeightLocation(popsim.TensorLocationSettings().useOnChipStorage(True))
    kept = copy.deepcopy(opts)
    opts.TensorLocations.setWeightLocation(
        popsim.TensorLocationSettings().useOnChipStorage(False).minElementsForOffChip(64))
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useReplicatedTensorSharding(True)
        .minElementsForReplicatedTensorSharding(8))
    assert kept.TensorLocations.location_weight["onChip"] == 1
    assert opts.TensorLocations.location_weight == {
        "onChip": 0, "minElementsForOffChip": 64, "useReplicatedTensorSharding": 0,
        "minElementsForReplicatedTensorSharding": 0, "useIOTilesToLoad": 0,
        "useIOTilesToStore": 0}
    optimizer = opts.TensorLocations.location_optimizer
    assert (optimizer["useReplicatedTensorSharding"],
            optimizer["minElementsForReplicatedTensorSharding"]) == (1, 8)
    assert opts.TensorLocations.location_accumulator["onChip"] == 1
    assert opts.TensorLocations.location_activation["onChip"] == 1
    opts.TensorLocations.location_weight["onChip"] = 1  # a copy: the options keep theirs
    assert opts.TensorLocations.location_weight["onChip"] == 0


def test_poptorch_keyword_names_and_defaults_of_setters(tmp_path, monkeypatch):
    # PopTorch's code passes these by their names (profile_dir, broadcast_buffers), and
    # enableProfiling() without a directory profiles into the current one.
    monkeypatch.chdir(tmp_path)
    assert popsim.Options().enableProfiling().profile_dir == str(tmp_path)
    assert popsim.Options().enableProfiling(profile_dir="p").profile_dir.endswith("p")
    assert popsim.Options().broadcastBuffers(broadcast_buffers=False).broadcast_buffers is False
