"""Makes the input of the whole-compilation IR test (tests/ir/pipeline/
training.ir): the first IR dump (settings header and imported graph) of a
small float16 pipeline compiled with every training pass at work. Run
`POPSIM_UPDATE_GOLDEN=1 build/release/tests/cpp/popsim_core_tests
--gtest_filter='IrTest.*'` afterwards to write what popsim-opt compiles it to
(training.expected.ir), and read its diff before committing.

The per-pass cases beside it (tests/ir/<pass>.ir) are written by hand; see
tests/ir/README.md.

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


def pipeline_input():
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
    name, first = files[0]
    assert name == "import", name
    os.makedirs(os.path.join(HERE, "pipeline"), exist_ok=True)
    with open(os.path.join(HERE, "pipeline", "training.ir"), "w") as out:
        out.write("# The first IR dump of tests/ir/make_inputs.py's training pipeline: "
                  "popsim-opt compiles it\n# with no options to training.expected.ir.\n")
        out.write(portable(first))


def main():
    pipeline_input()
    print("wrote tests/ir/pipeline/training.ir", file=sys.stderr)


if __name__ == "__main__":
    main()
