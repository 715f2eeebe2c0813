"""The rules of blocks, stages and pipelines, each pinned on its message."""

import pytest
import torch
import torch.nn as nn

import popsim
from models import BlockedMnistNetwork, BlockedWithLoss


def compile_inference(model, strategy=None, iterations=4, x=None):
    opts = popsim.Options().deviceIterations(iterations)
    if strategy is not None:
        opts.setExecutionStrategy(strategy)
    model = popsim.inferenceModel(model, opts)
    model.compile(torch.randn(iterations * 2, 1, 28, 28) if x is None else x)
    return model


def test_a_block_missing_from_the_stages_is_unknown():
    strategy = popsim.PipelinedExecution(popsim.Stage("B1", "B2").ipu(0), popsim.Stage("B3").ipu(1))
    with pytest.raises(popsim.OptionError, match=r"Unknown Block 'B4' \(entered at .*mnist_network.py:\d+\): "
                             r"popsim.PipelinedExecution places no stage for it"):
        compile_inference(BlockedMnistNetwork(), strategy)


def test_a_stage_naming_a_block_the_model_lacks():
    strategy = popsim.ShardedExecution("B1", "B2", "B3", "B4", "B5")
    with pytest.raises(popsim.OptionError,
                       match="Unknown Block 'B5' in stage 4 of popsim.ShardedExecution: the model "
                             "has no such block. Its blocks are 'B1', 'B2', 'B3', 'B4'."):
        compile_inference(BlockedMnistNetwork(), strategy)


def test_a_block_in_two_stages():
    with pytest.raises(popsim.OptionError,
                       match=r"Block 'B2' associated with more than one stage \(stages 0 and 1"):
        popsim.PipelinedExecution(popsim.Stage("B1", "B2"), popsim.Stage("B2", "B3"))


def test_ops_outside_every_block():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            with popsim.Block("A", ipu_id=0):
                x = self.a(x)
            x = torch.relu(x)  # outside
            with popsim.Block("B", ipu_id=1):
                return self.b(x)

    with pytest.raises(popsim.CompilationError,
                       match=r"No active Block, all the ops must belong to a Block: aten::relu at "
                             r".*test_pipelining_errors.py:\d+ runs outside every block, but the "
                             r"model uses blocks \('A', 'B'\)"):
        compile_inference(Net(), x=torch.randn(8, 4))


def test_same_as_ipu_needs_an_ipu_id():
    # BlockedMnistNetwork names its blocks without IPUs: the default strategy cannot place them.
    with pytest.raises(popsim.OptionError,
                       match=r"Block 'B1' \(entered at .*\) has no ipu_id, which "
                             r"AutoStage.SameAsIpu needs to choose its stage"):
        compile_inference(BlockedMnistNetwork())


def test_stages_must_ascend_along_the_model():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            with popsim.Block("A", ipu_id=0):
                x = self.a(x)
            with popsim.Block("B", ipu_id=1):
                x = self.b(x)
            with popsim.Block("C", ipu_id=0):
                return self.c(x)

    with pytest.raises(popsim.CompilationError,
                       match=r"Pipeline stages must ascend in the order the model runs: "
                             r"c/linear at .* \(block 'C'\) is in stage 0 but runs after "
                             r"b/linear at .* "
                             r"\(block 'B'\) in stage 1.*AutoStage.AutoIncrement"):
        compile_inference(Net(), x=torch.randn(8, 4))
    # AutoIncrement gives C a stage of its own, back on IPU 0.
    model = compile_inference(Net(), popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement),
                              x=torch.randn(8, 4))
    assert model.isCompiled()
    x = torch.randn(8, 4)
    assert torch.allclose(model(x), model.model(x), atol=1e-6)


def test_pipelined_training_needs_enough_micro_batches():
    opts = popsim.Options()
    opts.Training.gradientAccumulation(6)
    opts.setExecutionStrategy(popsim.PipelinedExecution("B1", "B2", "B3", "B4"))
    trainer = popsim.trainingModel(BlockedWithLoss(BlockedMnistNetwork()), opts)
    with pytest.raises(popsim.OptionError,
                       match=r"Training.gradientAccumulation must be at least the number of "
                             r"pipeline stages \(7\) for pipelined training, got 6. The 4 forward "
                             r"stages make 7 pipeline stages when training"):
        trainer.compile(torch.randn(12, 1, 28, 28), torch.randint(0, 10, (12,)))


def test_pipelined_inference_needs_enough_device_iterations():
    strategy = popsim.PipelinedExecution("B1", "B2", "B3", "B4")
    with pytest.raises(popsim.OptionError,
                       match=r"deviceIterations must be at least the number of pipeline stages "
                             r"\(4\) for pipelined inference, got 3"):
        compile_inference(BlockedMnistNetwork(), strategy, iterations=3)
    # Sharded execution has no such minimum.
    compile_inference(BlockedMnistNetwork(), popsim.ShardedExecution("B1", "B2", "B3", "B4"),
                      iterations=1)


def test_shared_weights_must_stay_on_one_ipu():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = nn.Linear(4, 4)

        def forward(self, x):
            with popsim.Block("A", ipu_id=0):
                x = torch.relu(self.shared(x))
            with popsim.Block("B", ipu_id=1):
                return self.shared(x)

    with pytest.raises(popsim.CompilationError,
                       match=r"Weight 'shared.bias' is used on IPU 0 by shared/linear at .* "
                             r"\(block 'A'\) and on IPU 1 by shared/linear at .* \(block 'B'\). "
                             r"Layers that share weights must run on the same IPU"):
        compile_inference(Tied(), x=torch.randn(8, 4))


def test_a_buffer_the_model_updates_must_stay_on_one_ipu():
    """A buffer read on several IPUs is copied to them only while nothing writes it (see
    test_pipelining.py); one the model updates, as a running average, is device state
    that lives on one IPU."""
    class RunningScale(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(4, 4)
            self.register_buffer("scale", torch.ones(4))

        def forward(self, x):
            with popsim.Block("A", ipu_id=0):
                x = self.layer(x) * self.scale
            with popsim.Block("B", ipu_id=1):
                self.scale.mul_(0.9).add_(0.1 * x.detach().abs().mean(0))
                return x * 2

    with pytest.raises(popsim.CompilationError,
                       match=r"Weight 'scale' is used on IPU 0 by .* and on IPU 1 by .*\. "
                             r"Layers that share weights must run on the same IPU"):
        compile_inference(RunningScale(), x=torch.randn(8, 4))


def test_annotation_arguments_are_checked():
    with pytest.raises(popsim.OptionError, match="popsim.Block needs a user_id or an ipu_id"):
        popsim.Block()
    with pytest.raises(popsim.OptionError, match="ipu_id to be a non-negative int"):
        popsim.Block("A", ipu_id=-1)
    layer = nn.Linear(2, 2)
    popsim.BeginBlock(layer, "A", ipu_id=0)
    with pytest.raises(popsim.OptionError,
                       match=r"BeginBlock: this Linear module has already been assigned to a "
                             r"block \('A'\); a module starts one block. "
                             r"popsim.removeBlocks\(module\) clears its annotation."):
        popsim.BeginBlock(layer, "B")
    with pytest.raises(popsim.OptionError, match="Stage.ipu expects a non-negative int"):
        popsim.Stage("A").ipu(-2)
    with pytest.raises(popsim.OptionError, match="setExecutionStrategy expects"):
        popsim.Options().setExecutionStrategy("pipelined")


def test_more_ipus_than_the_system_has():
    opts = popsim.Options().deviceIterations(4)
    opts.Simulator.numIpus(2)
    opts.setExecutionStrategy(popsim.ShardedExecution("B1", "B2", "B3", "B4"))
    model = popsim.inferenceModel(BlockedMnistNetwork(), opts)
    with pytest.raises(popsim.OptionError,
                       match=r"the model's stages use 4 IPUs but the simulated system has 2 "
                             r"\(Simulator.numIpus\)"):
        model.compile(torch.randn(8, 1, 28, 28))


def test_stages_as_lists_of_block_ids_and_looked_up_by_block_as_in_poptorch():
    listed = popsim.PipelinedExecution(["B1", "B2"], "B3")
    assert repr(listed) == repr(popsim.PipelinedExecution(popsim.Stage("B1", "B2"),
                                                          popsim.Stage("B3")))
    listed.stage("B2").ipu(1)  # the strategy's own stage
    assert repr(listed) == "PipelinedExecution(Stage('B1', 'B2').ipu(1), Stage('B3'))"
    with pytest.raises(popsim.OptionError, match=r"Unknown Block 'B4': no stage of "
                                                 r"PipelinedExecution lists it \(its blocks are "
                                                 r"\['B1', 'B2', 'B3'\]\)"):
        listed.stage("B4")
    with pytest.raises(popsim.OptionError, match=r"makes its stages from the model's blocks when "
                                                 r"the model compiles"):
        popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement).stage("B1")
    phase = popsim.Phase("B1", ["B2", "B3"])
    assert phase.stage(1).blocks == ["B2", "B3"]
    with pytest.raises(popsim.OptionError, match=r"this phase has 2 stage\(s\), numbered from 0; "
                                                 r"got 2"):
        phase.stage(2)


def test_poptorchs_enums_module_holds_the_strategies_enums():
    import popsim.enums
    assert popsim.enums.AutoStage is popsim.AutoStage
    assert popsim.enums.Liveness is popsim.Liveness
    assert popsim.enums.SharingStrategy is popsim.SharingStrategy
