"""Differential fuzzing: random small models (fuzz_programs.py) with random ways of
calling them and random Options, run on popsim and eagerly; outputs, the inputs
after the call (in-place writes), and trained weights must agree.

`make test` runs a fixed-seed slice (derandomized, so every run checks the same
examples). `make fuzz` runs many more, with fresh seeds each time:
POPSIM_FUZZ_EXAMPLES=N sets how many per test. A failure prints the program
(hypothesis shrinks it first); add it to test_aliasing.py or the test of the
part it breaks once fixed.
"""

import copy
import os

import pytest
import torch
from hypothesis import HealthCheck, given, note, reject, settings
from hypothesis import strategies as st

import popsim
from fuzz_programs import ProgramModel, block_count, call_arguments, input_count, programs

EXAMPLES = int(os.environ.get("POPSIM_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXAMPLES or 200,
    derandomize=EXAMPLES == 0,  # the slice in `make test` is the same every run
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
MODES = [popsim.OutputMode.All, popsim.OutputMode.Final, popsim.OutputMode.Sum]

pytestmark = pytest.mark.timeout(600)


# What popsim refuses by design, with a clear error, where eager's numbers are
# an accident of its kernels.
BY_DESIGN = "reads elements of the tensor it writes at other positions"


def run_or_reject(function):
    try:
        return function()
    except popsim.UnsupportedOperationError as error:
        if BY_DESIGN not in str(error):
            raise
        reject()


def strategy_for(program, kind):
    stages = [f"B{i}" for i in range(block_count(program))]
    if kind == "sharded":
        return popsim.ShardedExecution(*stages)
    return popsim.PipelinedExecution(*stages)


def assert_close(actual, expected, what):
    assert actual.shape == expected.shape, what
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5, msg=what)


def combine(per_micro_batch, mode):
    """Eager outputs of each micro-batch, as popsim returns them in `mode`."""
    if len(per_micro_batch) == 1:
        return per_micro_batch[0]
    if mode == popsim.OutputMode.All:
        return torch.cat(per_micro_batch)
    if mode == popsim.OutputMode.Final:
        return per_micro_batch[-1]
    return torch.stack(per_micro_batch).sum(0)


@FUZZ
@given(st.data())
def test_inference_matches_eager(data):
    program = data.draw(programs(training=False))
    micro = data.draw(st.integers(1, 3), "micro-batch")
    iterations = data.draw(st.integers(1, 3), "deviceIterations")
    mode = data.draw(st.sampled_from(MODES), "outputMode")
    kind = data.draw(st.sampled_from(["pipelined", "sharded"]), "execution")
    if program.blocks and kind == "pipelined":
        iterations = max(iterations, block_count(program))
    note(program.describe())
    note(f"micro-batch {micro}, deviceIterations {iterations}, {mode}, {kind}")

    torch.manual_seed(0)
    model = ProgramModel(program, training=False)
    inputs = [torch.randn(micro * iterations, program.width) for _ in range(input_count(program))]
    eager_inputs = [x.clone() for x in inputs]
    eager = []
    try:
        for i in range(iterations):
            # Views of the caller's tensors: in-place writes land in their rows.
            rows = [x[i * micro:(i + 1) * micro] for x in eager_inputs]
            args, kwargs = call_arguments(program, rows)
            eager.append([o.detach().clone() for o in model(*args, **kwargs)])
    except RuntimeError:
        reject()  # eager PyTorch refuses this program too

    options = popsim.Options().deviceIterations(iterations).outputMode(mode)
    if program.blocks:
        options.setExecutionStrategy(strategy_for(program, kind))
    ours_inputs = [x.clone() for x in inputs]
    args, kwargs = call_arguments(program, ours_inputs)
    compiled = popsim.inferenceModel(model, options)
    ours = run_or_reject(lambda: compiled(*args, **kwargs))
    compiled.destroy()

    for index in range(len(program.outputs)):
        expected = combine([outputs[index] for outputs in eager], mode)
        assert_close(ours[index], expected, f"output {index}")
    for index, (actual, expected) in enumerate(zip(ours_inputs, eager_inputs)):
        assert_close(actual, expected, f"input {index} after the call")


def eager_training(model, batches, iterations, accumulation, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for tensors in batches:
        micro = tensors[0].shape[0] // (iterations * accumulation)
        for step in range(iterations):
            optimizer.zero_grad()
            for m in range(accumulation):
                start = (step * accumulation + m) * micro
                args, kwargs = call_arguments(model.program,
                                              [x[start:start + micro] for x in tensors])
                _, loss = model(*args, **kwargs)
                (loss / accumulation).backward()  # popsim averages accumulated gradients
            optimizer.step()


@FUZZ
@given(st.data())
def test_training_matches_eager(data):
    program = data.draw(programs(training=True))
    micro = data.draw(st.integers(1, 3), "micro-batch")
    iterations = data.draw(st.integers(1, 2), "deviceIterations")
    accumulation = data.draw(st.integers(1, 3), "gradientAccumulation")
    kind = data.draw(st.sampled_from(["pipelined", "sharded"]), "execution")
    if program.blocks and kind == "pipelined":
        accumulation = max(accumulation, 2 * block_count(program) - 1)
    note(program.describe())
    note(f"micro-batch {micro}, deviceIterations {iterations}, gradientAccumulation "
         f"{accumulation}, {kind}")

    torch.manual_seed(0)
    model = ProgramModel(program, training=True)
    reference = copy.deepcopy(model)
    rows = micro * iterations * accumulation
    batches = [[torch.randn(rows, program.width) for _ in range(input_count(program))]
               for _ in range(2)]
    eager_batches = [[x.clone() for x in batch] for batch in batches]
    lr = 0.05
    try:
        eager_training(reference, eager_batches, iterations, accumulation, lr)
    except RuntimeError:
        reject()  # e.g. an in-place write into a value autograd needs
    if not all(value.isfinite().all() for value in reference.state_dict().values()):
        reject()  # training diverged: rounding differences are amplified without bound

    options = popsim.Options().deviceIterations(iterations)
    options.Training.gradientAccumulation(accumulation)
    if program.blocks:
        options.setExecutionStrategy(strategy_for(program, kind))
    trainer = popsim.trainingModel(model, options, torch.optim.SGD(model.parameters(), lr=lr))
    for batch in batches:
        args, kwargs = call_arguments(program, batch)
        run_or_reject(lambda: trainer(*args, **kwargs))
    trainer.copyWeightsToHost()
    trainer.destroy()

    for name, expected in reference.state_dict().items():
        assert_close(model.state_dict()[name], expected, name)
    for call, (ours, theirs) in enumerate(zip(batches, eager_batches)):
        for index, (actual, expected) in enumerate(zip(ours, theirs)):
            assert_close(actual, expected, f"input {index} of call {call} after the call")
