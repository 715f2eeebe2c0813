"""popsim.planJob, the whole-job planner, and its command line: the chosen
configuration must be what a run of its options reports, the fastest that
fits of those simulated, make up the asked global batch, and its errors
and advice must name what to change."""

import json
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn

import popsim
from popsim.reports.job_planner import _resized, _shifted


class Net(nn.Module):
    """Six layers in a Sequential (the planner's default candidates) and a loss."""

    def __init__(self, width=64):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU())
                                      for _ in range(6)])
        self.head = nn.Linear(width, 10)

    def forward(self, x, labels):
        out = self.head(self.layers(x))
        return out, nn.functional.cross_entropy(out, labels)


def job(width=64):
    torch.manual_seed(0)
    model = Net(width)
    batch = (torch.randn(4, width), torch.randint(0, 10, (4,)))
    return model, batch, popsim.optim.SGD(model.parameters(), lr=0.01)


def test_the_plan_predicts_what_a_run_of_its_options_reports():
    """A cost-only run of the model annotated by plan.apply (popsim.sizeJob)
    reports the plan's throughput and memory; so does a computing run, fed one
    call of the plan's global batch, when the plan runs in one process."""
    model, batch, optimizer = job()
    plan = popsim.planJob(model, batch, optimizer, ipus=4, global_batch=256, progress=False)
    assert plan.fits
    chosen = plan.chosen
    assert not any(module._forward_pre_hooks for module in model.modules()), \
        "the planner leaves the model as it found it"
    assert chosen.replicas * chosen.ipus_per_replica == 4
    assert chosen.global_batch == chosen.replicas * chosen.micro_batch * \
        chosen.gradient_accumulation
    assert abs(chosen.global_batch - 256) <= 0.05 * 256
    opts = plan.apply(model)
    micro_batch = _resized(batch, chosen.micro_batch)
    sized = popsim.sizeJob(model, micro_batch, opts, optimizer)
    assert sized.throughput == pytest.approx(chosen.throughput, rel=1e-12)
    assert [ipu.memory_bytes for ipu in sized.ipus] == \
        [ipu.memory_bytes for ipu in chosen.pipeline.report.ipus]
    one_process = plan.chosen.options(opts)
    one_process.Distributed.configureProcessId(0, 1)
    one_process.replicationFactor(chosen.replicas)
    expected = popsim.sizeJob(model, micro_batch, one_process, optimizer)
    trainer = popsim.trainingModel(model, one_process, optimizer)
    per_call = chosen.global_batch * chosen.device_iterations
    trainer(*_resized(batch, per_call))
    report = trainer.sizingReport()
    trainer.destroy()
    assert report.throughput == pytest.approx(expected.throughput, rel=1e-12)
    assert [ipu.memory_bytes for ipu in report.ipus] == \
        [ipu.memory_bytes for ipu in expected.ipus]


def test_the_chosen_configuration_is_the_fastest_that_fits():
    model, batch, optimizer = job()
    plan = popsim.planJob(model, batch, optimizer, ipus=4, global_batch=256, progress=False)
    fitting = [c.throughput for c in plan.searched if c.fits]
    assert plan.chosen.throughput == max(fitting)
    shapes = {(c.replicas, c.ipus_per_replica) for c in plan.searched}
    assert {(4, 1), (2, 2), (1, 4)} <= shapes, "every way to fill the POD is tried"
    sizes = {c.micro_batch for c in plan.searched}
    assert {4, 8} <= sizes <= {1, 2, 4, 8, 16, 32}, \
        "the example's size, twice it, half and a quarter, then doublings"
    if not {1, 2} <= sizes:  # the others could not beat the best: said so
        assert plan.skipped["cannot beat the best even at its profile's pace"] > 0
        assert "Shapes not simulated: " in str(plan)
    text = str(plan)
    assert text.startswith("Job plan for Net on 4 IPUs (training), global batch 256")
    assert "Chosen: " in text and "Runners-up" in text and "lost: " in text
    for runner_up in plan.runners_up:
        assert ("slower" in runner_up.lost or "does not fit" in runner_up.lost), runner_up.lost
    entry = json.loads(plan.to_json())
    assert entry["chosen"]["config"] == plan.chosen.config()
    assert entry["chosen"]["options"] == plan.chosen.option_lines()
    assert len(entry["searched"]) == len(plan.searched)


@pytest.mark.parametrize("lengths, load, shifted", [
    ((3, 5, 12, 14), [0.90, 1.02, 0.80, 0.70], (3, 4, 13, 14)),  # to the lighter neighbour
    ((3, 5, 12, 14), [0.80, 1.02, 0.90, 0.70], (4, 4, 12, 14)),
    ((3, 5, 12, 14), [0.50, 0.60, 0.70, 0.99], (3, 5, 13, 13)),  # the last IPU has one side
    ((3, 1, 12, 14), [0.50, 0.99, 0.70, 0.60], None),  # its group has one candidate left
    ((3, 5, 12, 14), [1.00, 1.00, 0.70, 0.60], None),  # no lighter neighbour
    ((34,), [1.2], None),  # one IPU: nowhere to move
])
def test_a_compiled_split_moves_a_candidate_off_its_most_loaded_ipu(lengths, load, shifted):
    """When no ranked split fits, the planner moves a candidate off the IPU
    that overflowed most; once one fits, off the busiest IPU."""
    assert _shifted(lengths, load) == shifted


def test_inference_makes_up_the_batch_with_device_iterations():
    torch.manual_seed(1)
    model = nn.Sequential(*[nn.Linear(32, 32) for _ in range(4)]).eval()
    plan = popsim.planJob(model, torch.randn(2, 32), ipus=2, global_batch=64,
                          progress=False)
    chosen = plan.chosen
    assert plan.fits and chosen.gradient_accumulation == 1
    assert chosen.replicas * chosen.micro_batch * chosen.device_iterations == 64
    opts = plan.apply(model)
    x = torch.randn(64 // chosen.replicas * chosen.replicas, 32)
    torch.testing.assert_close(popsim.inferenceModel(model, opts)(x), model(x))


def test_when_nothing_fits_the_plan_says_what_would():
    model, batch, optimizer = job()
    opts = popsim.Options()
    opts.Simulator.memoryPerIpu("64KiB")
    plan = popsim.planJob(model, batch, optimizer, ipus=2, global_batch=64, options=opts,
                          progress=False)
    assert not plan.fits and plan.chosen is None
    text = str(plan)
    assert "Nothing fits." in text and "IPUs per replica would hold it" in text
    assert "Smaller micro-batches than 1" not in text and "were all tried" in text
    with pytest.raises(popsim.OptionError, match=r"found no configuration of Net on 2 IPUs "
                                                 r"that fits: The leanest configuration"):
        plan.apply(model)


@pytest.mark.parametrize("call, message", [
    (lambda m, b, o: popsim.planJob(m, b, o, ipus=0, global_batch=64),
     r"ipus must be a positive int, got 0"),
    (lambda m, b, o: popsim.planJob(m, b, o, ipus=2, global_batch="64"),
     r"global_batch must be a positive int, got '64'"),
    (lambda m, b, o: popsim.planJob(m, b, o, ipus=2, global_batch=64, tolerance=1.5),
     r"tolerance is the relative distance a global batch may be from 64, in \[0, 1\); got 1.5"),
    (lambda m, b, o: popsim.planJob(m, b, o, ipus=2, global_batch=64, micro_batch_sizes=[0]),
     r"micro-batch sizes must be positive ints, got 0"),
    (lambda m, b, o: popsim.planJob(m, b, o, ipus=4, global_batch=2, micro_batch_sizes=[8]),
     r"no configuration of 4 IPUs makes a global batch within 5% of 2 with micro-batches \[8\]"),
    (lambda m, b, o: popsim.planJob(m, (b[0], b[1][:2]), o, ipus=2, global_batch=64),
     r"must share one batch size .* got sizes \[2, 4\]"),
    (lambda m, b, o: popsim.planJob(m, b, o, ipus=2, global_batch=64, candidates=["nope"]),
     r"candidate 'nope' is not a submodule of Net"),
])
def test_bad_plans_are_refused_naming_the_problem(call, message):
    model, batch, optimizer = job()
    with pytest.raises(popsim.OptionError, match=message):
        call(model, batch, optimizer)


def test_a_model_with_its_own_blocks_is_refused():
    model, batch, optimizer = job()
    popsim.BeginBlock(model.layers[2], "B1", ipu_id=1)
    with pytest.raises(popsim.OptionError, match=r"already has BeginBlock annotations"):
        popsim.planJob(model, batch, optimizer, ipus=2, global_batch=64)


def test_the_command_line_prints_the_plan_and_writes_its_json(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import torch
        import popsim

        def make():
            torch.manual_seed(0)
            model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(4)])
            return model, torch.randn(2, 16), None
    """))
    out = tmp_path / "plan.json"
    done = subprocess.run(
        [sys.executable, "-m", "popsim", "plan", f"{script}:make", "--ipus", "2",
         "--global-batch", "32", "--json", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Job plan for Sequential on 2 IPUs (inference), global batch 32" in done.stdout
    written = json.loads(out.read_text())
    assert written["chosen"]["fits"] and written["global_batch"] == 32
    missing = subprocess.run(
        [sys.executable, "-m", "popsim", "plan", f"{script}:absent", "--ipus", "2",
         "--global-batch", "32"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert missing.returncode == 2
    assert "job.py has no function 'absent'" in missing.stderr


def test_the_html_page_draws_every_configuration_and_the_chosen_memory():
    model, batch, optimizer = job()
    plan = popsim.planJob(model, batch, optimizer, ipus=2, global_batch=64, progress=False)
    page = plan.to_html()
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>")
    assert page.count("<svg") == 2
    assert page.count("<title>") - 1 == len(plan.searched) + sum(
        1 for ipu in plan.chosen.pipeline.report.ipus
        for size in ipu.memory_by_category.values() if size > 0) + 1  # + the capacity line
    assert "http" not in page.replace("<!DOCTYPE html>", ""), "nothing fetched"


class OwnBlocks(Net):
    """Net with a block of its own opened inside forward(), as reference models do."""

    def forward(self, x, labels):
        with popsim.Block("Mine", ipu_id=0):
            out = self.head(self.layers(x))
        return out, nn.functional.cross_entropy(out, labels)


def test_a_model_that_opens_its_own_blocks_in_forward_is_refused():
    _, batch, _ = job()
    own = OwnBlocks()
    optimizer = popsim.optim.SGD(own.parameters(), lr=0.01)
    with pytest.raises(popsim.OptionError, match=r"OwnBlocks opens pipeline blocks of its own "
                                                 r"inside forward\(\).*build the model without "
                                                 r"its blocks"):
        popsim.planJob(own, batch, optimizer, ipus=2, global_batch=64, progress=False)
