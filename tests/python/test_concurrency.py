"""Calls from several Python threads: one model's calls are serialised (each
output is the one its own inputs give), different models run side by side."""

import copy
import threading

import torch

import popsim
from conftest import assert_close
from models import BlockedMnistNetwork, MnistNetwork, WithLoss

CALLS_PER_THREAD = 6
JOIN_TIMEOUT_SECONDS = 120


def run_threads(*targets):
    """Runs each target in its own thread, started together; re-raises the first error."""
    errors = []
    start = threading.Barrier(len(targets))

    def guarded(target):
        try:
            start.wait(timeout=JOIN_TIMEOUT_SECONDS)
            target()
        except BaseException as error:  # noqa: B902 (reported in the main thread)
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT_SECONDS)
        assert not thread.is_alive(), "a thread did not finish: calls deadlocked"
    if errors:
        raise errors[0]


def test_two_threads_calling_one_inference_model_each_get_their_own_outputs():
    network = MnistNetwork().eval()
    model = popsim.inferenceModel(network, popsim.Options().deviceIterations(4))
    inputs = [torch.randn(4 * 8, 1, 28, 28) for _ in range(2)]
    model(inputs[0])  # compiled before the threads start
    results = [[], []]

    def caller(index):
        def call():
            for _ in range(CALLS_PER_THREAD):
                results[index].append(model(inputs[index]))
        return call

    run_threads(caller(0), caller(1))
    with torch.no_grad():
        expected = [network(x) for x in inputs]
    for index in range(2):
        assert len(results[index]) == CALLS_PER_THREAD
        for output in results[index]:
            assert_close(output, expected[index])


def test_the_first_call_compiles_once_when_two_threads_race_for_it():
    network = MnistNetwork().eval()
    model = popsim.inferenceModel(network)
    x = torch.randn(8, 1, 28, 28)
    outputs = []
    run_threads(lambda: outputs.append(model(x)), lambda: outputs.append(model(x)))
    with torch.no_grad():
        expected = network(x)
    assert len(outputs) == 2
    for output in outputs:
        assert_close(output, expected)


def test_different_models_run_concurrently_and_correctly():
    single = MnistNetwork().eval()
    pipelined = BlockedMnistNetwork().eval()
    opts = popsim.Options().deviceIterations(4)
    opts.setExecutionStrategy(popsim.PipelinedExecution(
        popsim.Stage("B1").ipu(0), popsim.Stage("B2").ipu(1), popsim.Stage("B3").ipu(2),
        popsim.Stage("B4").ipu(3)))
    models = [popsim.inferenceModel(single, popsim.Options().deviceIterations(4)),
              popsim.inferenceModel(pipelined, opts)]
    inputs = [torch.randn(32, 1, 28, 28), torch.randn(32, 1, 28, 28)]
    results = [[], []]

    def caller(index):
        def call():
            for _ in range(CALLS_PER_THREAD):
                results[index].append(models[index](inputs[index]))
        return call

    run_threads(caller(0), caller(1))
    with torch.no_grad():
        expected = [single(inputs[0]), pipelined(inputs[1])]
    for index in range(2):
        for output in results[index]:
            assert_close(output, expected[index])


def train(model, images, labels, calls):
    opts = popsim.Options().deviceIterations(2)
    trainer = popsim.trainingModel(WithLoss(model), opts,
                                   popsim.optim.SGD(model.parameters(), lr=0.05))
    for _ in range(calls):
        trainer(images, labels)
    return trainer


def test_training_models_in_two_threads_match_training_them_one_after_the_other():
    torch.manual_seed(1)
    first, second = MnistNetwork(), MnistNetwork()
    first_copy, second_copy = copy.deepcopy(first), copy.deepcopy(second)
    images = [torch.randn(2 * 8, 1, 28, 28) for _ in range(2)]
    labels = [torch.randint(0, 10, (2 * 8,)) for _ in range(2)]

    trainers = []
    run_threads(lambda: trainers.append(train(first, images[0], labels[0], CALLS_PER_THREAD)),
                lambda: trainers.append(train(second, images[1], labels[1], CALLS_PER_THREAD)))
    # Tracing swaps torch.Tensor.backward out while it runs; two traces at once
    # must not leave it swapped.
    leaf = torch.ones(2, requires_grad=True)
    (leaf * 3).sum().backward()
    assert torch.equal(leaf.grad, torch.full((2,), 3.0))
    expected = [train(first_copy, images[0], labels[0], CALLS_PER_THREAD),
                train(second_copy, images[1], labels[1], CALLS_PER_THREAD)]
    for trainer in trainers + expected:
        trainer.copyWeightsToHost()
    for got, want in [(first, first_copy), (second, second_copy)]:
        for (name, actual), reference in zip(got.named_parameters(), want.parameters()):
            assert torch.equal(actual, reference), name


def test_one_training_model_called_from_two_threads_takes_every_step():
    torch.manual_seed(2)
    network = MnistNetwork()
    reference_network = copy.deepcopy(network)
    images = torch.randn(2 * 8, 1, 28, 28)
    labels = torch.randint(0, 10, (2 * 8,))
    opts = popsim.Options().deviceIterations(2)
    trainer = popsim.trainingModel(WithLoss(network), opts,
                                   popsim.optim.SGD(network.parameters(), lr=0.05))

    def calls():
        for _ in range(CALLS_PER_THREAD):
            trainer(images, labels)

    run_threads(calls, calls)
    # Every call feeds the same batch, so 2 x CALLS_PER_THREAD calls in any
    # order give the weights of as many calls in one thread.
    train(reference_network, images, labels, 2 * CALLS_PER_THREAD).copyWeightsToHost()
    trainer.copyWeightsToHost()
    for (name, actual), expected in zip(network.named_parameters(),
                                        reference_network.parameters()):
        assert torch.equal(actual, expected), name
