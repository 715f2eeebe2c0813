"""The Python side of the C++ API's tests: exports the tutorial network (export_mnist.py) and
runs it through popsim's Python API with the options the C++ tests use, so that they can check
that C++ and Python give the same outputs, cycles and memory.

    .venv/bin/python tests/cpp_api/make_reference.py DIR

writes DIR/mnist_traced.pt, DIR/mnist_scripted.pt, DIR/mnist_training.pt (the network with its
cross-entropy loss) and DIR/reference.pt, a TorchScript module whose buffers are the inputs,
Python's outputs, figures and trained weights, for the C++ tests to load; and the profiles of
the pipelined inference and the SGD training in DIR/python_profiles/mnist and
DIR/python_profiles/mnist_training, with their sizing reports printed beside them (and the
inference's execution trace and performance counters).
"""

import inspect
import json
import os
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import torch

os.environ.setdefault("POPSIM_PROGRESS", "0")
import popsim  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "cpp"))
import export_mnist  # noqa: E402

LAYERS = ("layer1", "layer2", "layer3", "layer4")
DEVICE_ITERATIONS = 8
MICRO_BATCH = 4


class Tensors(torch.nn.Module):
    """Tensors as buffers of a module, which LibTorch loads with torch::jit::load."""

    def __init__(self, tensors):
        super().__init__()
        for name, tensor in tensors.items():
            self.register_buffer(name, tensor)

    def forward(self):
        return self.images


def python_run(strategy, profile=None):
    """Inference pipelined or sharded over 4 IPUs; with `profile`, its profile is written
    there as model "mnist", for the C++ tests to compare with theirs."""
    model = export_mnist.network()
    for ipu, layer in enumerate(LAYERS):
        popsim.BeginBlock(getattr(model, layer), layer, ipu_id=ipu)
    opts = popsim.Options().deviceIterations(DEVICE_ITERATIONS)
    opts.setExecutionStrategy(strategy(popsim.AutoStage.SameAsIpu))
    if profile is not None:
        opts.enableProfiling(profile).modelName("mnist")
    session = popsim.inferenceModel(model, opts)
    torch.manual_seed(1)
    images = torch.randn(DEVICE_ITERATIONS * MICRO_BATCH, 1, 28, 28)
    outputs = session(images)
    if profile is not None:  # and its sizing report and trace, as str() prints them
        Path(profile, "mnist_sizing.txt").write_text(str(session.sizingReport()))
        Path(profile, "mnist_trace.txt").write_text(str(session.executionTrace()))
        counters = dict(session.getPerfCounters(), latency=session.getLatency(),
                        host_ipu_latency=session.getHostIpuLatency(),
                        compute_latency=session.getComputeLatency(),
                        ipu_host_latency=session.getIpuHostLatency())
        Path(profile, "mnist_counters.json").write_text(json.dumps(counters))
    memory = torch.tensor([ipu["total"] for ipu in session.memoryReport()["ipus"]])
    return images, outputs, torch.tensor([session.cycleCount()]), memory


def python_out_of_memory(directory):
    """The pipelined network on IPUs of 64 KiB: Python's OutOfMemoryError's fields, for
    the C++ tests to compare with their error's site."""
    model = export_mnist.network()
    for ipu, layer in enumerate(LAYERS):
        popsim.BeginBlock(getattr(model, layer), layer, ipu_id=ipu)
    opts = popsim.Options().deviceIterations(DEVICE_ITERATIONS)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.SameAsIpu))
    opts.Simulator.memoryPerIpu("64KiB")
    try:
        popsim.inferenceModel(model, opts).compile(
            torch.zeros(DEVICE_ITERATIONS * MICRO_BATCH, 1, 28, 28))
    except popsim.OutOfMemoryError as error:
        fields = {name: getattr(error, name) for name in
                  ("ipu", "category", "required_bytes", "capacity_bytes", "largest_tensors")}
        Path(directory, PROFILES, "mnist_out_of_memory.json").write_text(json.dumps(fields))
        return
    raise AssertionError("the network fits IPUs of 64 KiB")


class WithLoss(torch.nn.Module):
    """The network returning its logits and their cross-entropy loss, for training."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, images, labels):
        logits = self.model(images)
        return logits, torch.nn.functional.cross_entropy(logits, labels)


TRAIN_ITERATIONS, TRAIN_ACCUMULATION = 2, 8
# Where Python's profiles go, in the fixtures directory.
PROFILES = "python_profiles"


def _sgd(params):
    return popsim.optim.SGD(params, lr=0.05, momentum=0.9)


def _scaled_sgd(params):
    """SGD with loss scaling compiled in (a constant factor, as C++'s lossScaling is)."""
    optimizer = popsim.optim.SGD(params, lr=0.05, momentum=0.9, loss_scaling=128.0)
    optimizer.variable_attrs.markAsConstant("loss_scaling")
    return optimizer


def _variable_scaled_sgd(params):
    """SGD with loss scaling in device state (Python's default; C++'s variableLossScaling)."""
    return popsim.optim.SGD(params, lr=0.05, momentum=0.9, loss_scaling=128.0)


def _sum(training):
    training.accumulationAndReplicationReductionType(popsim.ReductionType.Sum)


def _running(training):
    training.setMeanAccumulationAndReplicationReductionStrategy(
        popsim.MeanReductionStrategy.Running)


def _grouped_sgd(params):
    """Two parameter groups: the first layer's with lr 0.1 and momentum, the rest with the
    defaults (lr 0.01, no momentum)."""
    params = list(params)
    return popsim.optim.SGD([{"params": params[:2], "lr": 0.1, "momentum": 0.9},
                             {"params": params[2:]}], lr=0.01)


# The training references, by the prefix of their results: the optimizer, and what they change
# in opts.Training.
OPTIMIZERS = {
    "train": (_sgd, None),
    "lamb": (lambda params: popsim.optim.LAMB(params, lr=0.01, max_weight_norm=10.0), None),
    "rmsprop": (lambda params: popsim.optim.RMSprop(params, lr=0.001, alpha=0.9, momentum=0.5,
                                                    centered=True, use_tf_variant=True), None),
    "sum": (lambda params: popsim.optim.SGD(params, lr=0.005, momentum=0.9), _sum),
    "running": (_sgd, _running),
    "scaled": (_scaled_sgd, None),
    "rescaled": (_variable_scaled_sgd, None),
    "halfstate": (lambda params: popsim.optim.Adam(
        params, lr=1e-3, accum_type=torch.float16, first_order_momentum_accum_type=torch.float16,
        second_order_momentum_accum_type=torch.float16), None),
    "anchored": (_scaled_sgd, None),
    "grouped": (_grouped_sgd, None),
}
# The anchors of the "anchored" reference (short name: long name).
ANCHORS = {"grad": "Gradient___model.layer4.weight", "bias": "UpdatedVar___model.layer1.conv.bias",
           "scale": "finalLossScale"}


def python_training(directory: Path, prefix: str = "train"):
    """One call (2 optimizer steps, 8 micro-batches each) pipelined over 4 IPUs."""
    torch.manual_seed(2)
    samples = TRAIN_ITERATIONS * TRAIN_ACCUMULATION * MICRO_BATCH
    images, labels = torch.randn(samples, 1, 28, 28), torch.randint(0, 10, (samples,))
    torch.jit.trace(WithLoss(export_mnist.network().train()),
                    (images[:MICRO_BATCH], labels[:MICRO_BATCH])).save(
        str(directory / "mnist_training.pt"))
    model = WithLoss(export_mnist.network().train())
    for ipu, layer in enumerate(LAYERS):
        popsim.BeginBlock(getattr(model.model, layer), f"model.{layer}", ipu_id=ipu)
    opts = popsim.Options().deviceIterations(TRAIN_ITERATIONS)
    opts.Training.gradientAccumulation(TRAIN_ACCUMULATION)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.SameAsIpu))
    make_optimizer, configure = OPTIMIZERS[prefix]
    if configure is not None:
        configure(opts.Training)
    for short, long in (ANCHORS.items() if prefix == "anchored" else ()):
        opts.anchorTensor(short, long)
    if prefix == "train":  # its profile, for the C++ tests to compare with theirs
        opts.enableProfiling(str(directory / PROFILES)).modelName("mnist_training")
    optimizer = make_optimizer(model.parameters())
    trainer = popsim.trainingModel(model, opts, optimizer)
    logits, loss = trainer(images, labels)
    if prefix == "rescaled":  # a second call after setOptimizer changes the loss scaling
        optimizer.loss_scaling = 64.0
        trainer.setOptimizer(optimizer)
        logits, loss = trainer(images, labels)
    if prefix == "train":
        Path(directory, PROFILES, "mnist_training_sizing.txt").write_text(
            str(trainer.sizingReport()))
        # The same job sized without computing, for 2 replicas.
        sized_model = WithLoss(export_mnist.network().train())
        for ipu, layer in enumerate(LAYERS):
            popsim.BeginBlock(getattr(sized_model.model, layer), f"model.{layer}", ipu_id=ipu)
        sized = popsim.Options().deviceIterations(TRAIN_ITERATIONS).replicationFactor(2)
        sized.Training.gradientAccumulation(TRAIN_ACCUMULATION)
        sized.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.SameAsIpu))
        Path(directory, PROFILES, "mnist_training_size_job.txt").write_text(str(popsim.sizeJob(
            sized_model, (images[:MICRO_BATCH], labels[:MICRO_BATCH]), sized,
            _sgd(sized_model.parameters()))))
    trainer.copyWeightsToHost()
    tensors = {f"{prefix}_logits": logits, f"{prefix}_loss": loss.reshape(1),
               f"{prefix}_cycles": torch.tensor([trainer.cycleCount()])}
    if prefix == "train":
        tensors.update(train_images=images, train_labels=labels)
    for short in (ANCHORS if prefix == "anchored" else ()):
        tensors[f"anchored_{short}"] = trainer.getAnchoredTensor(short)
    if prefix == "anchored":
        # The optimizer's state by PopTorch's names (its state_dict()'s "ipu_state" and
        # "ipu_param") is Python's alone: the C++ API lists the rest, in the same order.
        state = optimizer.state_dict()
        poptorch_state = set(state["ipu_state"]) | set(state["ipu_param"])
        Path(directory, PROFILES, "mnist_tensor_names.txt").write_text(
            "\n".join(name for name in trainer.getTensorNames() if name not in poptorch_state))
    weights = "trained" if prefix == "train" else f"{prefix}_trained"
    for name, value in model.state_dict().items():
        tensors[f"{weights}_" + name.replace(".", "_")] = value.detach().clone()
    return tensors


class Mixed(torch.nn.Module):
    """float32 inputs times a float16 weight: the op mixes float16 and float32 operands, so
    Precision.halfFloatCasting decides the dtype it computes in."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 2.0, 16).to(torch.half))

    def forward(self, x):
        return x * self.scale + 0.3


def python_mixed(directory: Path):
    """The mixed-precision module under each halfFloatCasting behaviour."""
    torch.manual_seed(3)
    inputs = torch.randn(8, 16)
    torch.jit.trace(Mixed(), inputs[:1]).save(str(directory / "mixed.pt"))
    tensors = {"mixed_inputs": inputs}
    for name, behaviour in (("upcast", popsim.HalfFloatCastingBehavior.HalfUpcastToFloat),
                            ("downcast", popsim.HalfFloatCastingBehavior.FloatDowncastToHalf)):
        opts = popsim.Options().deviceIterations(8)
        opts.Precision.halfFloatCasting(behaviour)
        tensors[f"mixed_{name}"] = popsim.inferenceModel(Mixed(), opts)(inputs)
    return tensors


class ControlFlow(torch.nn.Module):
    """Control flow a scripted model has, decided when it compiles: batch norm's training
    flag, adaptive pooling's sizes, cross entropy's None checks, a shape check that raises
    and a loop of a constant count."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.norm = torch.nn.BatchNorm2d(4)
        self.pool = torch.nn.AdaptiveAvgPool2d((2, 2))
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x, labels):
        if x.dim() != 4:
            raise ValueError("expected a batch of images")
        y = self.norm(self.conv(x))
        for _ in range(2):
            y = torch.relu(y) * 0.5
        out = self.head(self.pool(y).flatten(1))
        return out, torch.nn.functional.cross_entropy(out, labels)


class RuntimeDecision(torch.nn.Module):
    """A branch that a tensor decides while the model runs."""

    def forward(self, x):
        if bool(x.sum() > 0):
            return x * 2
        return x


def python_control_flow(directory: Path):
    """The scripted control-flow module and eager PyTorch's answers, in eval and train mode."""
    torch.manual_seed(5)
    model = ControlFlow()
    images, labels = torch.randn(8, 1, 12, 12), torch.randint(0, 10, (8,))
    torch.jit.script(model).save(str(directory / "control_flow.pt"))
    torch.jit.script(RuntimeDecision()).save(str(directory / "runtime_decision.pt"))
    with torch.no_grad():
        eval_logits, eval_loss = model.eval()(images, labels)
        train_logits, train_loss = model.train()(images, labels)
    # The line of the branch, which popsim's refusal names (the user's file, not
    # TorchScript's serialized code).
    lines, first = inspect.getsourcelines(RuntimeDecision.forward)
    branch = first + next(i for i, line in enumerate(lines) if "if bool(" in line)
    return {"control_images": images, "control_labels": labels,
            "runtime_decision_line": torch.tensor(branch),
            "control_eval_logits": eval_logits, "control_eval_loss": eval_loss,
            "control_train_logits": train_logits, "control_train_loss": train_loss}


class Nested(torch.nn.Module):
    """Inputs in a tuple, a dict and a list, read by key, membership and items(); the
    result a tuple of a dict and a list."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, pair: Tuple[torch.Tensor, torch.Tensor], batch: Dict[str, torch.Tensor],
                extra: List[torch.Tensor]) -> Tuple[Dict[str, torch.Tensor], List[torch.Tensor]]:
        a, b = pair
        h = self.linear(a + b * batch["scale"])
        if "shift" in batch:
            h = h + batch["shift"]
        for _, value in batch.items():
            h = h + value.mean()
        return {"logits": h, "relu": torch.relu(h)}, [extra[0] * 2, extra[1] + h.sum()]


def python_nested(directory: Path):
    """The nested-input module and LibTorch's answer."""
    torch.manual_seed(9)
    model = Nested().eval()
    a, b, scale = (torch.randn(4, 4) for _ in range(3))
    shift = torch.randn(4, 3)
    extra = [torch.randn(4, 2), torch.randn(4, 5)]
    scripted = torch.jit.script(model)
    scripted.save(str(directory / "nested.pt"))
    with torch.no_grad():
        outputs, listed = scripted((a, b), {"scale": scale, "shift": shift}, extra)
    return {"nested_a": a, "nested_b": b, "nested_scale": scale, "nested_shift": shift,
            "nested_extra0": extra[0], "nested_extra1": extra[1],
            "nested_logits": outputs["logits"], "nested_relu": outputs["relu"],
            "nested_listed0": listed[0], "nested_listed1": listed[1]}


REPLICAS = 2


class Tied(torch.nn.Module):
    """An encoder and a decoder that share one weight: the module lists the tensor under two
    names, and a session trains it once."""

    def __init__(self):
        super().__init__()
        self.encode = torch.nn.Linear(6, 4, bias=False)
        self.decode = torch.nn.Linear(4, 6, bias=False)
        self.decode.weight = self.encode.weight

    def forward(self, x):
        y = torch.nn.functional.linear(self.encode(x), self.decode.weight.t())
        return y, torch.nn.functional.mse_loss(y, x)


def python_tied(directory: Path):
    """The tied module, scripted (its two parameter names for one tensor kept)."""
    torch.manual_seed(5)
    torch.jit.script(Tied()).save(str(directory / "tied.pt"))
    return {"tied_inputs": torch.randn(4, 6)}


def python_replicated(directory: Path):
    """The pipelined inference and the SGD training again with 2 replicas: each call's
    batch holds both replicas' micro-batches, and training sums their gradients."""
    torch.manual_seed(4)
    images = torch.randn(REPLICAS * DEVICE_ITERATIONS * MICRO_BATCH, 1, 28, 28)
    model = export_mnist.network()
    for ipu, layer in enumerate(LAYERS):
        popsim.BeginBlock(getattr(model, layer), layer, ipu_id=ipu)
    opts = popsim.Options().deviceIterations(DEVICE_ITERATIONS).replicationFactor(REPLICAS)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.SameAsIpu))
    session = popsim.inferenceModel(model, opts)
    tensors = {"replicated_images": images, "replicated_outputs": session(images),
               "replicated_cycles": torch.tensor([session.cycleCount()])}
    samples = REPLICAS * TRAIN_ITERATIONS * TRAIN_ACCUMULATION * MICRO_BATCH
    train_images, labels = torch.randn(samples, 1, 28, 28), torch.randint(0, 10, (samples,))
    model = WithLoss(export_mnist.network().train())
    for ipu, layer in enumerate(LAYERS):
        popsim.BeginBlock(getattr(model.model, layer), f"model.{layer}", ipu_id=ipu)
    opts = popsim.Options().deviceIterations(TRAIN_ITERATIONS).replicationFactor(REPLICAS)
    opts.Training.gradientAccumulation(TRAIN_ACCUMULATION)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.SameAsIpu))
    trainer = popsim.trainingModel(model, opts, _sgd(model.parameters()))
    logits, loss = trainer(train_images, labels)
    trainer.copyWeightsToHost()
    tensors.update(replicated_train_images=train_images, replicated_train_labels=labels,
                   replicated_logits=logits, replicated_loss=loss,
                   replicated_train_cycles=torch.tensor([trainer.cycleCount()]))
    for name, value in model.state_dict().items():
        tensors["replicated_trained_" + name.replace(".", "_")] = value.detach().clone()
    return tensors


def main(directory: str) -> None:
    export_mnist.main(directory)
    tensors = python_mixed(Path(directory))
    tensors.update(python_control_flow(Path(directory)))
    tensors.update(python_nested(Path(directory)))
    tensors.update(python_replicated(Path(directory)))
    tensors.update(python_tied(Path(directory)))
    for prefix in OPTIMIZERS:
        tensors.update(python_training(Path(directory), prefix))
    for name, strategy in (("pipelined", popsim.PipelinedExecution),
                           ("sharded", popsim.ShardedExecution)):
        profile = str(Path(directory) / PROFILES) if name == "pipelined" else None
        images, outputs, cycles, memory = python_run(strategy, profile)
        tensors.update({"images": images, f"{name}_outputs": outputs,
                        f"{name}_cycles": cycles, f"{name}_memory": memory})
    python_out_of_memory(directory)
    torch.jit.script(Tensors(tensors)).save(str(Path(directory) / "reference.pt"))
    print(f"wrote {Path(directory) / 'reference.pt'}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
