"""PopTorch's environment helpers: isRunningOnIpu inside a forward,
ipuHardwareIsAvailable, ipuHardwareVersion, setLogLevel and the logger."""

import pytest
import torch

import popsim
import popsim as poptorch
from popsim.errors import OptionError


class BranchesOnTheDevice(torch.nn.Module):
    def forward(self, x):
        if poptorch.isRunningOnIpu():
            return x + 1
        return x - 1


def test_is_running_on_ipu_chooses_the_branch_the_ipus_run():
    model = BranchesOnTheDevice()
    x = torch.randn(3, 4)
    torch.testing.assert_close(model(x), x - 1)  # eagerly, on the CPU
    compiled = popsim.inferenceModel(model)
    torch.testing.assert_close(compiled(x), x + 1)
    assert not popsim.isRunningOnIpu()  # only while the forward is traced
    torch.testing.assert_close(model(x), x - 1)


def test_is_running_on_ipu_during_training_compilation():
    seen = []

    class Recording(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 2)

        def forward(self, x):
            seen.append(poptorch.isRunningOnIpu())
            return poptorch.identity_loss(self.linear(x).sum(), reduction="sum")

    model = Recording()
    trainer = poptorch.trainingModel(model, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.1))
    trainer(torch.randn(2, 4))
    assert seen and all(seen)


def test_simulated_ipus_are_available_in_any_number():
    assert poptorch.ipuHardwareIsAvailable()
    assert poptorch.ipuHardwareIsAvailable(64)
    with pytest.raises(OptionError, match=r"ipuHardwareIsAvailable expects a positive number "
                                          r"of IPUs, got 0"):
        poptorch.ipuHardwareIsAvailable(0)


def test_the_hardware_version_is_the_simulated_mk2_for_offline_targets():
    # PopTorch's precompilation recipe: compile for the machine's IPU version.
    opts = poptorch.Options().useOfflineIpuTarget(poptorch.ipuHardwareVersion())
    assert poptorch.ipuHardwareVersion() == 2 and opts.Simulator.ipu_version == "Mk2"


@pytest.fixture
def restore_log_level():
    yield
    popsim.setLogLevel("WARN")
    popsim.logger.setLevel("NOTSET")


def test_set_log_level_shows_the_core_and_python_messages(restore_log_level, capfd):
    poptorch.setLogLevel("INFO")
    popsim.logger.info("from the Python side")
    popsim.inferenceModel(torch.nn.Linear(3, 2))(torch.randn(2, 3))
    shown = capfd.readouterr().err
    assert "[popsim info] from the Python side" in shown
    assert "[popsim info] compiled" in shown  # the C++ core's compilation summary

    poptorch.setLogLevel("OFF")
    popsim.logger.warning("hidden")
    popsim.inferenceModel(torch.nn.Linear(3, 2))(torch.randn(2, 3))
    assert capfd.readouterr().err == ""


def test_set_log_level_names_the_levels_it_accepts(restore_log_level):
    """PopTorch's names (in any case) and its integers 0 (TRACE) to 4 (ERR); anything else is
    a ValueError whose words PopTorch's own checks match."""
    with pytest.raises(ValueError, match=r"Unknown log level: LOUD\. Valid values are DEBUG, ERR, "
                                         r"INFO, OFF, TRACE and WARN"):
        poptorch.setLogLevel("LOUD")
    for level in range(5):
        poptorch.setLogLevel(level)
    with pytest.raises(OptionError, match=r"Invalid log level integer 5: setLogLevel takes 0 "
                                          r"\(TRACE\) to 4 \(ERR\)"):
        poptorch.setLogLevel(5)
    poptorch.setLogLevel("debug")  # PopTorch's names in any case


def test_default_options_from_the_environment(monkeypatch):
    """POPTORCH_DEFAULT_OPTIONS: a JSON object of setters (dotted for the
    groups) and their value, applied to every new Options."""
    monkeypatch.setenv("POPTORCH_DEFAULT_OPTIONS", '{"deviceIterations": 3, '
                       '"Precision.enableStochasticRounding": true, '
                       '"Training.gradientAccumulation": 2}')
    opts = popsim.Options()
    assert (opts.device_iterations, opts.Precision.stochastic_rounding,
            opts.Training.gradient_accumulation) == (3, True, 2)
    assert popsim.Options().deviceIterations(5).device_iterations == 5  # later setters win
    for text, message in [
            ("{deviceIterations: 3}", r"POPTORCH_DEFAULT_OPTIONS is not JSON"),
            ('["deviceIterations"]', r"must be a JSON object of setters and values"),
            ('{"deviceIteration": 3}', r"Options has no option 'deviceIteration'\. Did you mean "
                                       r"'deviceIterations'\?"),
            ('{"deviceIterations": 0}', r"deviceIterations expects a positive integer")]:
        monkeypatch.setenv("POPTORCH_DEFAULT_OPTIONS", text)
        with pytest.raises(OptionError, match=message):
            popsim.Options()
