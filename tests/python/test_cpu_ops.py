"""popsim.CPU (PopTorch's CPU ops): a Python function the host runs in the
middle of an inference model, on the device's values, at every call."""

import pytest
import torch

import popsim
import popsim as poptorch
from popsim.errors import ExecutionError, InputError, UnsupportedOperationError


class Doubling(torch.nn.Module):
    """A CPU op between two layers, used twice (PopTorch's own example shape)."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(4, 4)
        self.second = torch.nn.Linear(4, 3)
        self.calls = 0
        self.cpu = poptorch.CPU(self.host_op, "Doubling")

    def host_op(self, x):
        self.calls += 1
        return x * 2.0 + torch.sign(x)  # any torch code, run eagerly on the host

    def forward(self, x):
        return self.second(self.cpu(self.cpu(self.first(x))))


def test_cpu_op_runs_on_the_host_at_every_call():
    model = Doubling()
    x = torch.randn(5, 4)
    expected = model(x)
    compiled = poptorch.inferenceModel(model)
    compiled(x)  # compiling runs the function once per use, untraced
    model.calls = 0
    torch.testing.assert_close(compiled(x), expected)
    assert model.calls == 2
    y = torch.randn(5, 4)
    torch.testing.assert_close(compiled(y), model(y))  # new values reach the host
    assert "host_call" in compiled._debug_ir()


def test_cpu_op_runs_per_device_iteration_with_several_results():
    def split(x):
        return x.max(dim=1).values, (x > 0).sum(dim=1)  # float32 and int64 results

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cpu = poptorch.CPU(split, "Split")

        def forward(self, x):
            values, counts = self.cpu(x.relu())
            return values + 1, counts

    opts = poptorch.Options().deviceIterations(3)
    compiled = poptorch.inferenceModel(Model(), opts)
    x = torch.randn(6, 5)  # 3 iterations of 2 samples
    values, counts = compiled(x)
    torch.testing.assert_close(values, x.relu().max(dim=1).values + 1)
    torch.testing.assert_close(counts, (x.relu() > 0).sum(dim=1))


def test_cpu_op_on_the_second_ipu_of_a_pipeline():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = torch.nn.Linear(4, 4)
            self.cpu = poptorch.CPU(torch.nn.Tanh(), "Tanh")
            self.second = torch.nn.Linear(4, 2)

        def forward(self, x):
            with poptorch.Block("B0", ipu_id=0):
                h = self.first(x)
            with poptorch.Block("B1", ipu_id=1):
                return self.second(self.cpu(h))

    model = Model()
    opts = poptorch.Options().deviceIterations(4)
    opts.setExecutionStrategy(poptorch.PipelinedExecution("B0", "B1"))
    x = torch.randn(8, 4)
    torch.testing.assert_close(poptorch.inferenceModel(model, opts)(x), model(x))


def test_an_exception_on_the_host_names_the_cpu_op():
    def failing(x):
        if x.sum() > 1e9:
            raise RuntimeError("too large for the host")
        return x

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cpu = poptorch.CPU(failing, "Guard")

        def forward(self, x):
            return self.cpu(x) + 1

    compiled = poptorch.inferenceModel(Model())
    compiled(torch.ones(2, 2))
    with pytest.raises(ExecutionError, match=r"The CPU op 'Guard' failed on the host: "
                                             r"RuntimeError: too large for the host"):
        compiled(torch.full((2, 2), 1e10))


def test_a_result_that_changes_type_names_both_types():
    state = {"rows": 2}

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cpu = poptorch.CPU(lambda x: x[: state["rows"]], "Rows")

        def forward(self, x):
            return self.cpu(x)

    compiled = poptorch.inferenceModel(Model())
    compiled(torch.randn(4, 3))
    state["rows"] = 3
    with pytest.raises(ExecutionError, match=r"The CPU op 'Rows' failed on the host: .*result 0 is "
                                             r"torch.float32\[3, 3\], and was torch.float32\[2, 3\] "
                                             r"when the model was compiled"):
        compiled(torch.randn(4, 3))


def test_cpu_ops_in_training_models_are_refused_as_in_poptorch():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 3)
            self.cpu = poptorch.CPU(lambda x: x * 2, "Scale")

        def forward(self, x):
            return poptorch.identity_loss(self.cpu(self.linear(x)).sum(), reduction="sum")

    model = Model()
    trainer = poptorch.trainingModel(model, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(UnsupportedOperationError,
                       match=r"The CPU op 'Scale' is in a training model: CPU ops run in inference "
                             r"models only"):
        trainer(torch.randn(2, 3))


class CallsCpu(torch.nn.Module):
    def __init__(self, function, call):
        super().__init__()
        self.cpu = poptorch.CPU(function, "Odd")
        self.call = call

    def forward(self, x):
        return self.call(self.cpu, x)


def test_bad_arguments_name_the_cpu_op():
    with pytest.raises(InputError, match=r"popsim.CPU expects a non-empty str ID"):
        poptorch.CPU(lambda x: x, "")
    with pytest.raises(InputError, match=r"The CPU op 'Odd' takes tensors; argument 1 is int"):
        popsim.inferenceModel(CallsCpu(lambda x, n: x * n, lambda cpu, x: cpu(x, 3)))(
            torch.randn(2))
    with pytest.raises(InputError, match=r"The CPU op 'Odd' must return float32, int32, int64 or "
                                         r"bool tensors; result 0 is torch.float64"):
        popsim.inferenceModel(CallsCpu(lambda x: x.double(), lambda cpu, x: cpu(x)))(
            torch.randn(2))


def test_eagerly_a_cpu_op_is_its_function():
    cpu = poptorch.CPU(lambda a, b: (a + b, a - b), "Plain")
    a, b = torch.randn(3), torch.randn(3)
    total, difference = cpu(a, b)
    torch.testing.assert_close(total, a + b)
    torch.testing.assert_close(difference, a - b)
