"""Makes the inputs of the golden IR tests (tests/ir/<pass>.ir) from real
compilations: each pass's input is the IR dump just before it, of a small
model compiled with the options that make the pass do its work. Each file
starts with the popsim-opt command that runs the pass on it; run
`POPSIM_UPDATE_GOLDEN=1 build/release/tests/cpp/popsim_core_tests
--gtest_filter='GoldenIrTest.*'` afterwards to write the expected outputs
(<pass>.expected.ir), and read their diff before committing.

    .venv/bin/python tests/ir/make_inputs.py
"""

import glob
import os
import re
import sys
import tempfile

import torch
import torch.nn as nn

import popsim
import popsim.compile.gradients

HERE = os.path.dirname(os.path.abspath(__file__))


class TwoBlocks(nn.Module):
    """A regression over two blocks: linear, dropout and relu in A; linear,
    a reshape chain and the loss in B."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.a = nn.Linear(6, 8)
        self.b = nn.Linear(8, 2)
        self.dropout = nn.Dropout(dropout) if dropout else nn.Identity()

    def forward(self, x, target):
        with popsim.Block("A"):
            h = torch.relu(self.dropout(self.a(x)))
        with popsim.Block("B"):
            y = self.b(h).reshape(-1, 1, 2).reshape(-1, 2)
            return y, nn.functional.mse_loss(y, target)


STAGES = [popsim.Stage("A").ipu(0), popsim.Stage("B").ipu(1)]


def dumps(compile_model):
    """The IR files a compilation dumps, by pass name, in order."""
    with tempfile.TemporaryDirectory() as directory:
        os.environ["POPSIM_DUMP_IR"] = directory
        try:
            compile_model()
        finally:
            del os.environ["POPSIM_DUMP_IR"]
        files = sorted(glob.glob(os.path.join(directory, "compile-*", "*.ir")))
        return [(re.sub(r"^\d+-", "", os.path.basename(path))[:-3], open(path).read())
                for path in files]


def portable(text):
    """Source locations as file names (the dumps hold this machine's paths)."""
    return re.sub(r"# \S*/([^/\s]+\.py):", r"# \1:", text)


def command_line(options, program):
    """popsim-opt's options for the compile options `options` (_C.CompileOptions)."""
    compiler, training = options.compiler, options.compiler.training
    args = [f"--program={program}"]
    if program == "training":
        args.append(f"--optimizer={training.optimizer.name.lower()}")
        for group in training.groups:
            args.append("--group=" + ",".join(group.parameters))
            if group.has_momentum:
                args.append("--momentum")
        if compiler.gradient_accumulation > 1:
            args.append(f"--accumulation={compiler.gradient_accumulation}")
        if training.max_grad_norm:
            args.append(f"--max-grad-norm={training.max_grad_norm}")
        if training.gradient_scale != 1.0:
            args.append(f"--gradient-scale={training.gradient_scale!r}")
        if training.automatic_loss_scaling:
            args.append("--automatic-loss-scaling")
        elif training.loss_scaling_state:
            args.append("--loss-scaling-state")
    if training.replicas > 1:
        args += [f"--replicas={training.replicas}", f"--system-ipus={training.system_ipus}"]
        if training.sharded_parameters:
            args.append("--sharded-state=" + ",".join(training.sharded_parameters))
        if training.sharded_weights:
            args.append("--sharded-weights=" + ",".join(training.sharded_weights))
    args.append(f"--device-iterations={compiler.device_iterations}")
    args.append(f"--ipus={options.system.num_ipus}")
    for stage in compiler.stages:
        args.append(f"--stage={stage.block}:{stage.stage}:{stage.ipu}")
    if compiler.recomputation:
        args.append("--recomputation")
    if compiler.schedule != popsim._C.ScheduleKind.Interleaved:
        args.append(f"--schedule={compiler.schedule.name.lower()}")
    return " ".join(args)


def write_inputs(files, options, program, passes):
    """Writes tests/ir/<pass>.ir for each pass in `passes`: the dump before it."""
    names = [name for name, _ in files]
    for name in passes:
        before = files[names.index(name) - 1][1]
        with open(os.path.join(HERE, f"{name}.ir"), "w") as out:
            out.write(f"# popsim-opt --passes={name} {command_line(options, program)}\n")
            out.write(portable(before))


def training_inputs():
    """A float16 pipeline of two stages with every training pass at work:
    sharded weights over 2 replicas, dropout, gradient accumulation,
    automatic loss scaling, clipping and recomputation."""
    torch.manual_seed(0)
    model = TwoBlocks(dropout=0.25).half()
    opts = popsim.Options().replicationFactor(2)
    opts.Training.gradientAccumulation(4)
    opts.Training.setAutomaticLossScaling(True)
    opts.Training.recomputation(True)
    opts.setExecutionStrategy(popsim.PipelinedExecution(*STAGES))
    opts.TensorLocations.setWeightLocation(
        popsim.TensorLocationSettings().useReplicatedTensorSharding(True)
        .minElementsForReplicatedTensorSharding(16))
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, max_grad_norm=1.0)
    trainer = popsim.trainingModel(model, opts, optimizer)
    files = dumps(lambda: trainer.compile(torch.randn(16, 6).half(), torch.randn(16, 2).half()))
    write_inputs(files, trainer._compile_options, "training",
                 ["stage-assignment", "weight-sharding", "autodiff", "gradient-accumulation",
                  "random-counters", "replica-reduction", "loss-scaling", "gradient-clipping",
                  "optimizer-step", "simplify-layout", "dead-code-elimination", "task-order",
                  "ipu-copies", "recomputation", "weight-gathers"])


def gradient_program_input():
    """The import of a one-IPU regression, for the gradient program."""
    torch.manual_seed(0)
    model = TwoBlocks()
    files = dumps(lambda: popsim.compile.gradients.gradients(
        _WithoutBlocks(model), torch.randn(4, 6), torch.randn(4, 2)))
    options = popsim._C.CompileOptions()
    write_inputs(files, options, "gradients", ["gradient-program"])


class _WithoutBlocks(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, target):
        y = self.model.b(torch.relu(self.model.a(x)))
        return nn.functional.mse_loss(y, target)


def main():
    training_inputs()
    gradient_program_input()
    print("wrote", sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, "*.ir"))
                          if not p.endswith(".expected.ir")), file=sys.stderr)


if __name__ == "__main__":
    main()
