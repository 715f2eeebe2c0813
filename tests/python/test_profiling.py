"""Profiling: trace.json, memory.json and report.html of a pipelined 4-IPU training
run, the popsim.profiling reader, CLI and plots, the options and environment
variables, and the compilation progress bar."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn

import popsim
from popsim import profiling
from popsim.profiling._style import CATEGORY_COLOURS, KIND_COLOURS
from models import BlockedMnistNetwork, BlockedWithLoss, MnistNetwork

G = 8           # micro-batches per step (gradientAccumulation), >= 2 x 4 - 1
STEPS = 2       # deviceIterations: optimizer steps per call
MICRO_BATCH = 4
TASK_KINDS = ("forward", "backward", "forward+backward", "update")


def pipelined_trainer(directory):
    opts = popsim.Options().deviceIterations(STEPS).enableProfiling(str(directory))
    opts.Training.gradientAccumulation(G)
    opts.setExecutionStrategy(popsim.PipelinedExecution(
        *[popsim.Stage(f"B{i}").ipu(i - 1) for i in range(1, 5)]))
    model = BlockedWithLoss(BlockedMnistNetwork())
    return popsim.trainingModel(model, opts, popsim.optim.AdamW(model.parameters()))


def training_batch(samples):
    return torch.randn(samples, 1, 28, 28), torch.randint(0, 10, (samples,))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A pipelined 4-IPU training model called twice, with its profile files."""
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("profile")
    trainer = pipelined_trainer(directory)
    batch = training_batch(MICRO_BATCH * G * STEPS)
    trainer(*batch)
    trainer(*batch)
    model_dir = directory / "training"
    with open(model_dir / "trace.json", encoding="utf-8") as source:
        trace = json.load(source)
    with open(model_dir / "memory.json", encoding="utf-8") as source:
        memory = json.load(source)
    return {"trainer": trainer, "root": directory, "dir": model_dir, "trace": trace,
            "memory": memory}


def process_ids(trace):
    """Process name -> pid, from the metadata events."""
    return {e["args"]["name"]: e["pid"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}


def ipu_pid(trace, ipu):
    [pid] = [pid for name, pid in process_ids(trace).items()
             if name == f"IPU {ipu}" or name.startswith(f"IPU {ipu} (")]
    return pid


def complete_events(trace, pid=None, categories=None):
    return [e for e in trace["traceEvents"] if e["ph"] == "X"
            and (pid is None or e["pid"] == pid)
            and (categories is None or e["cat"] in categories)]


def interleaved_order(ipu, ipus, micro_batches, first):
    """IPU `ipu`'s tasks in one step of the interleaved schedule, by its rule: of the
    2K - 1 pipeline tasks (F0 .. F(K-2), FB(K-1), B(K-2) .. B0), task p runs
    micro-batch t - p in pipeline cycle t; then the weight update. Micro-batches are
    numbered in the call, from `first` in this step."""
    last = ipus - 1
    tasks = ([(ipu, f"F{ipu}")] if ipu < last else []) + (
        [(last, f"FB{last}")] if ipu == last else [(2 * last - ipu, f"B{ipu}")])
    order = []
    for cycle in range(micro_batches + 2 * last):
        for position, task in sorted(tasks):
            if 0 <= cycle - position < micro_batches:
                order.append((task, first + cycle - position))
    return order + [(f"U{ipu}", -1)]


@pytest.mark.timeout(120)
def test_every_micro_batch_runs_forward_and_backward_on_its_stage_ipu_in_schedule_order(run):
    trace = run["trace"]
    clock_hz = trace["popsim"]["clock_hz"]
    for ipu in range(4):
        tasks = sorted(complete_events(trace, ipu_pid(trace, ipu), TASK_KINDS),
                       key=lambda e: e["ts"])
        for step in range(STEPS):
            ran = [(e["name"], e["args"]["micro_batch"]) for e in tasks
                   if e["args"]["step"] == step]
            assert ran == interleaved_order(ipu, 4, G, first=step * G)
            for event in tasks:
                assert event["args"]["ipu"] == ipu
                assert event["ts"] == pytest.approx(event["args"]["start_cycle"] / clock_hz * 1e6,
                                                    abs=1e-3)
    # A micro-batch's forward on IPU k + 1 starts after its forward on IPU k ended,
    # and its backward on IPU k after the backward (or FB) on IPU k + 1.
    ends, starts = {}, {}
    for event in complete_events(trace, categories=TASK_KINDS):
        key = (event["name"], event["args"]["step"], event["args"]["micro_batch"])
        starts[key] = event["ts"]
        ends[key] = event["ts"] + event["dur"]
    for step in range(STEPS):
        for m in range(step * G, (step + 1) * G):
            for k in range(3):
                later = f"F{k + 1}" if k < 2 else "FB3"
                assert starts[(later, step, m)] >= ends[(f"F{k}", step, m)] - 1e-3
                earlier = f"B{k + 1}" if k < 2 else "FB3"
                assert starts[(f"B{k}", step, m)] >= ends[(earlier, step, m)] - 1e-3


@pytest.mark.timeout(120)
def test_copy_events_go_between_consecutive_ipus(run):
    trace = run["trace"]
    links = process_ids(trace)["links (IPU-Links and host streams)"]
    copies = complete_events(trace, links, ("copy",))
    receivers = {(e["args"]["ipu"], e["args"]["task"]) for e in copies}
    # Activations go forward from IPU k to k + 1, gradients back from k + 1 to k.
    assert receivers == {(1, "F1"), (2, "F2"), (3, "FB3"), (2, "B2"), (1, "B1"), (0, "B0")}
    tasks = {(e["name"], e["args"]["step"], e["args"]["micro_batch"]): e
             for e in complete_events(trace, categories=TASK_KINDS)}
    sender = {"F1": "F0", "F2": "F1", "FB3": "F2", "B2": "FB3", "B1": "B2", "B0": "B1"}
    for copy in copies:
        args = copy["args"]
        assert copy["tid"] == args["ipu"] + 1  # the links thread of the receiving IPU
        source = tasks[(sender[args["task"]], args["step"], args["micro_batch"])]
        receiver = tasks[(args["task"], args["step"], args["micro_batch"])]
        assert abs(source["args"]["ipu"] - args["ipu"]) == 1
        # The copy names where it comes from.
        assert args["from_ipus"] == [source["args"]["ipu"]]
        assert copy["name"] == f"copy from IPU {source['args']['ipu']}"
        assert copy["ts"] >= source["ts"] + source["dur"] - 1e-3
        assert copy["args"]["end_cycle"] == receiver["args"]["start_cycle"]
    assert len(copies) == len(receivers) * G * STEPS
    inputs = complete_events(trace, links, ("host_input",))
    assert {(e["args"]["ipu"], e["args"]["task"]) for e in inputs} == {(0, "F0"), (3, "FB3")}


@pytest.mark.timeout(120)
def test_one_weight_update_per_accumulation_on_each_ipu(run):
    trace = run["trace"]
    for ipu in range(4):
        events = complete_events(trace, ipu_pid(trace, ipu), TASK_KINDS)
        updates = [e for e in events if e["cat"] == "update"]
        assert [(e["name"], e["args"]["step"]) for e in updates] == [
            (f"U{ipu}", step) for step in range(STEPS)]
        for update in updates:
            step_work = [e for e in events if e["args"]["step"] == update["args"]["step"]
                         and e["cat"] != "update"]
            assert len(step_work) == G * (1 if ipu == 3 else 2)
            assert update["ts"] >= max(e["ts"] + e["dur"] for e in step_work) - 1e-3


@pytest.mark.timeout(120)
def test_trace_metadata_ops_and_host_wall_time(run):
    trace = run["trace"]
    names = process_ids(trace)
    assert set(names) == {"IPU 0 (B1)", "IPU 1 (B2)", "IPU 2 (B3)", "IPU 3 (B4)",
                          "links (IPU-Links and host streams)", "host"}
    # The first step's tasks hold their ops, end to end, inside the task.
    for ipu in range(4):
        pid = ipu_pid(trace, ipu)
        ops = complete_events(trace, pid, ("op",))
        assert ops
        for task in complete_events(trace, pid, TASK_KINDS):
            if task["args"]["step"] != 0:
                continue
            inside = [op for op in ops if task["ts"] - 1e-3 <= op["ts"]
                      and op["ts"] + op["dur"] <= task["ts"] + task["dur"] + 1e-3]
            assert inside, task
            cycles = task["args"]["end_cycle"] - task["args"]["start_cycle"]
            assert sum(op["args"]["cycles"] for op in inside) == cycles
    program = run["trainer"]._executable.program()
    # Op events are named as the program names the ops: after their modules.
    assert {op["name"] for op in complete_events(trace, ipu_pid(trace, 0), ("op",))} == {
        s.name for s in program if s.ipu == 0 and s.op != "ipu_copy"}
    assert "model/layer1/conv/convolution" in {s.name for s in program}
    # The host process holds the measured wall time of the last (second) call...
    [call] = complete_events(trace, names["host"], ("host",))
    assert call["args"]["call"] == 2
    assert call["dur"] > 0 and call["args"]["wall_ms"] == pytest.approx(call["dur"] / 1e3)
    # ... and, on a thread per IPU, every task run of it on the host's clock, in the
    # IPU's schedule order, inside the call.
    host_tasks = complete_events(trace, names["host"], ("host_task",))
    simulated = sorted(((e["args"]["ipu"], e["args"]["step"], e["args"]["start_cycle"],
                         e["args"]["micro_batch"], e["name"])
                        for e in complete_events(trace, categories=TASK_KINDS)))
    for ipu in range(4):
        runs = [e for e in host_tasks if e["args"]["ipu"] == ipu]
        assert all(e["tid"] == ipu + 2 for e in runs)
        assert [(e["args"]["step"], e["args"]["micro_batch"], e["name"]) for e in runs] == [
            (step, micro_batch, task) for i, step, _, micro_batch, task in simulated if i == ipu]
        for before, after in zip(runs, runs[1:]):
            assert before["ts"] + before["dur"] <= after["ts"] + 1e-3
        assert all(0 <= e["ts"] and e["ts"] + e["dur"] <= call["dur"] + 1e-3 for e in runs)
    assert trace["popsim"]["host"]["calls"] == 2
    assert trace["popsim"]["total_cycles"] == run["trainer"].cycleCount()


@pytest.mark.timeout(120)
def test_memory_categories_add_up_to_the_memory_report(run):
    memory, report = run["memory"], run["trainer"].memoryReport()
    assert len(memory["ipus"]) == len(report["ipus"]) == 4
    for ours, theirs in zip(memory["ipus"], report["ipus"]):
        always = ours["always_live"]["categories"]
        others = ours["not_always_live"]["categories"]
        assert set(always) | set(others) == set(theirs["categories"])
        assert sum(always.values()) == ours["always_live"]["total"] == theirs["always_live"]
        assert sum(others.values()) == ours["not_always_live"]["total"] == theirs[
            "not_always_live"]
        assert sum(always.values()) + sum(others.values()) == ours["total"] == theirs["total"]
        assert {"activations", "stash"} <= set(others)
        assert ours["limit"] == theirs["capacity"] and ours["peak"] == theirs["total"]
        assert ours["largest_tensors"] == theirs["largest_tensors"]
    assert memory["totals"]["total"] == sum(ipu["total"] for ipu in report["ipus"])
    program = run["trainer"]._executable.program()
    for ipu in report["ipus"]:
        key, categories = str(ipu["ipu"]), ipu["categories"]
        # One liveness point per op of the IPU, in program order.
        points = memory["liveness"][key]
        assert [p["step"] for p in points] == [
            i for i, step in enumerate(program) if step.ipu == ipu["ipu"]]
        # The activation arena holds at least the most that is live at once.
        peak = memory["activation_peak"][key]
        assert 0 < peak["bytes"] == max(p["live_bytes"] for p in points)
        assert peak["bytes"] <= categories["activations"]["bytes"]
        # Every tensor of a fixed region is listed: they add up to its category.
        tensors = memory["all_tensors"][key]
        assert [t["bytes"] for t in tensors] == sorted((t["bytes"] for t in tensors),
                                                        reverse=True)
        for category in ("weights", "optimizer state", "gradient accumulators"):
            assert sum(t["bytes"] for t in tensors
                       if t["category"] == category) == categories[category]["bytes"]


@pytest.mark.timeout(120)
def test_the_profile_reads_back_as_the_execution_trace(run):
    profile = profiling.load(run["root"])  # the top directory, holding one model
    assert profile.directory.endswith("training")
    assert (profile.model, profile.kind) == ("TrainingModelWithLoss", "training")
    expected = run["trainer"].executionTrace()
    assert profile.trace.events == expected.events
    assert profile.trace.total_cycles == expected.total_cycles
    assert [s["blocks"] for s in profile.stages] == [["B1"], ["B2"], ["B3"], ["B4"]]
    assert profiling.load(run["dir"]).trace.events == expected.events


@pytest.mark.timeout(120)
def test_plot_helpers_draw_the_timeline_and_memory(run):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profile = profiling.load(run["dir"])
    ax = profiling.plot_timeline(profile)
    colours = {matplotlib.colors.to_hex(c.get_facecolor()[0]) for c in ax.collections}
    assert {KIND_COLOURS[k] for k in ("forward", "backward", "update", "copy")} <= colours
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"IPU {i}" for i in range(4)]
    # Every event is drawn once.
    assert sum(len(c.get_paths()) for c in ax.collections) == len(profile.trace.events)
    ax = profiling.plot_memory(str(run["dir"]))
    widths = {}
    for bar in ax.patches:
        ipu = round(bar.get_y() + bar.get_height() / 2)
        widths[ipu] = widths.get(ipu, 0) + bar.get_width()
    for ipu in profile.memory["ipus"]:
        assert widths[ipu["ipu"]] == pytest.approx(ipu["total"] / 2**20)
    assert {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches} >= {
        CATEGORY_COLOURS["code"], CATEGORY_COLOURS["stash"]}
    plt.close("all")


def run_cli(directory):
    # The popsim this test imported (installed, or a source tree on PYTHONPATH) first.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(popsim.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "popsim.profiling", str(directory)],
                          capture_output=True, text=True, env=env, timeout=120)


class Unbalanced(nn.Module):
    """Three stages; the middle one does four 1024 x 1024 layers, the others one small
    layer each (each end stage also streams its inputs from the host)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(16, 1024)
        self.heavy = nn.ModuleList([nn.Linear(1024, 1024) for _ in range(4)])
        self.head = nn.Linear(1024, 10)

    def forward(self, x, labels):
        with popsim.Block("Light", ipu_id=0):
            x = self.embed(x)
        with popsim.Block("Heavy", ipu_id=1):
            for layer in self.heavy:
                x = torch.relu(layer(x))
        with popsim.Block("Head", ipu_id=2):
            x = self.head(x)
            return x, nn.functional.cross_entropy(x, labels)


@pytest.mark.timeout(180)
def test_cli_names_the_slowest_stage_of_an_unbalanced_pipeline(tmp_path):
    opts = popsim.Options().enableProfiling(str(tmp_path))
    opts.Training.gradientAccumulation(6)
    trainer = popsim.trainingModel(Unbalanced(), opts)
    trainer(torch.randn(6 * 64, 16), torch.randint(0, 10, (6 * 64,)))
    result = run_cli(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Bottleneck: stage 1 (blocks Heavy) on IPU 1" in result.stdout
    assert "Stage balance" in result.stdout and "Idle (bubble) fraction" in result.stdout
    assert "closest to its memory limit" in result.stdout
    # The same text as the summary of the loaded profile.
    assert result.stdout.strip() == profiling.load(tmp_path).summary().strip()


@pytest.mark.timeout(120)
def test_cli_and_load_explain_a_directory_without_profile(tmp_path):
    for directory, what in ((tmp_path, "holds no popsim profile"),
                            (tmp_path / "missing", "does not exist")):
        result = run_cli(directory)
        assert result.returncode == 2
        assert what in result.stderr and "opts.enableProfiling(DIR)" in result.stderr
        with pytest.raises(profiling.ProfileNotFoundError, match=what):
            profiling.load(directory)


@pytest.mark.timeout(120)
def test_environment_variable_enables_profiling_one_directory_per_model(tmp_path, monkeypatch):
    monkeypatch.setenv("POPSIM_PROFILE_DIR", str(tmp_path))
    images = torch.randn(8, 1, 28, 28)
    first = popsim.inferenceModel(MnistNetwork())
    first(images)
    second = popsim.inferenceModel(MnistNetwork())
    second.compile(images)
    assert first.profileDirectory() == str(tmp_path / "inference")
    assert second.profileDirectory() == str(tmp_path / "inference_1")
    assert sorted(os.listdir(tmp_path / "inference")) == ["memory.json", "report.html",
                                                          "trace.json"]
    # Compiled but not run: memory and report, no trace yet.
    assert sorted(os.listdir(tmp_path / "inference_1")) == ["memory.json", "report.html"]
    with pytest.raises(ValueError, match=r"holds the profiles of 2 models \(inference, "
                                         r"inference_1\): pass one model's directory"):
        profiling.load(tmp_path)
    assert [p.kind for p in profiling.load_all(tmp_path)] == ["inference", "inference"]
    # The option wins over the environment variable.
    other = tmp_path / "chosen"
    third = popsim.inferenceModel(MnistNetwork(),
                                  popsim.Options().enableProfiling(str(other)))
    third(images)
    assert third.profileDirectory() == str(other / "inference")
    # Unset: no profile.
    monkeypatch.delenv("POPSIM_PROFILE_DIR")
    plain = popsim.inferenceModel(MnistNetwork())
    plain(images)
    assert plain.profileDirectory() is None


@pytest.mark.timeout(120)
def test_poplar_engine_options_auto_report_writes_the_profile(tmp_path, monkeypatch):
    """POPLAR_ENGINE_OPTIONS, as PopTorch tutorials ask for reports: its
    autoReport directory gets popsim's profile; engine options popsim does
    not model are named in a warning; POPSIM_PROFILE_DIR wins over it."""
    from popsim.api import engine_options as _engine_options

    monkeypatch.setattr(_engine_options, "_warned", set())
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps(
        {"autoReport.all": "true", "autoReport.directory": str(tmp_path / "reports"),
         "debug.instrument": "true"}))
    images = torch.randn(4, 1, 28, 28)
    model = popsim.inferenceModel(MnistNetwork())
    with pytest.warns(UserWarning, match=r"POPLAR_ENGINE_OPTIONS: popsim does not model the "
                                         r"Poplar engine options debug.instrument"):
        model(images)
    assert model.profileDirectory() == str(tmp_path / "reports" / "inference")
    assert "trace.json" in os.listdir(tmp_path / "reports" / "inference")
    monkeypatch.setenv("POPSIM_PROFILE_DIR", str(tmp_path / "mine"))
    chosen = popsim.inferenceModel(MnistNetwork())
    chosen(images)
    assert chosen.profileDirectory() == str(tmp_path / "mine" / "inference")
    monkeypatch.delenv("POPSIM_PROFILE_DIR")
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"autoReport.all": "false"}')
    quiet = popsim.inferenceModel(MnistNetwork())
    quiet(images)
    assert quiet.profileDirectory() is None
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", "{autoReport.all: true}")
    with pytest.raises(popsim.OptionError, match=r"POPLAR_ENGINE_OPTIONS is not JSON"):
        popsim.inferenceModel(MnistNetwork())(images)


@pytest.mark.timeout(120)
def test_each_call_rewrites_the_trace_with_its_wall_time(tmp_path):
    model = popsim.inferenceModel(MnistNetwork(), popsim.Options().enableProfiling(tmp_path))
    images = torch.randn(8, 1, 28, 28)
    traces = []
    for _ in range(3):
        model(images)
        with open(tmp_path / "inference" / "trace.json", encoding="utf-8") as source:
            traces.append(json.load(source))
    assert [t["popsim"]["host"]["calls"] for t in traces] == [1, 2, 3]
    measured = ("host", "host_task")
    simulated = [[e for e in t["traceEvents"] if e.get("cat") not in measured] for t in traces]
    assert simulated[0] == simulated[1] == simulated[2]  # every call runs the same schedule
    # Each call's own wall times: the same task runs, measured again.
    runs = [[(e["name"], e["args"]["micro_batch"]) for e in t["traceEvents"]
             if e.get("cat") == "host_task"] for t in traces]
    assert runs[0] == runs[1] == runs[2] == [("F0", 0)]  # one IPU, one micro-batch


@pytest.mark.timeout(60)
def test_bad_profiling_values_are_refused(tmp_path, monkeypatch):
    opts = popsim.Options()
    for value, shown in (("", "''"), (42, "42")):  # (None: the current directory)
        with pytest.raises(popsim.OptionError, match=(
                r"^enableProfiling expects a directory path \(a non-empty str or os\.PathLike\), "
                rf"got {shown} \(")):
            opts.enableProfiling(value)
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory")
    with pytest.raises(popsim.OptionError, match=(
            rf"^enableProfiling expects a directory, but '{a_file}' is a file\. Pass a new or "
            "existing directory")):
        opts.enableProfiling(a_file)
    assert opts.enableProfiling(tmp_path).profile_dir == str(tmp_path)
    monkeypatch.setenv("POPSIM_PROFILE_DIR", str(a_file))
    model = popsim.inferenceModel(MnistNetwork())
    with pytest.raises(popsim.OptionError,
                       match=rf"^POPSIM_PROFILE_DIR expects a directory, but '{a_file}' is a file"):
        model(torch.randn(8, 1, 28, 28))


@pytest.mark.timeout(60)
def test_progress_bar_counts_the_compile_phases(monkeypatch, capsys):
    images = torch.randn(8, 1, 28, 28)
    monkeypatch.setenv("POPSIM_PROGRESS", "1")
    popsim.inferenceModel(MnistNetwork()).compile(images)
    shown = capsys.readouterr().err
    assert "Graph compilation" in shown and "4/4 phases" in shown and "done" in shown
    for setting in ("0", ""):  # off; or shown only for compiles longer than a second
        monkeypatch.setenv("POPSIM_PROGRESS", setting)
        popsim.inferenceModel(MnistNetwork()).compile(images)
        assert capsys.readouterr().err == ""
    monkeypatch.setenv("POPSIM_PROGRESS", "maybe")
    with pytest.raises(popsim.OptionError, match=(
            r"^POPSIM_PROGRESS must be 0 \(no compilation progress bar\), 1 \(always show it\) "
            r"or unset \(show it for compilations longer than 1 s\), got 'maybe'\.")):
        popsim.inferenceModel(MnistNetwork()).compile(images)


# --- report.html in headless Chromium ---------------------------------------------------------

needs_chromium = pytest.mark.skipif(
    not os.path.exists("/usr/bin/chromium"),
    reason="/usr/bin/chromium is absent: install Debian's chromium package (scripts/setup.sh "
           "does) to render report.html")


def colour_pixels(image, hex_colour):
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return int(np.all(np.abs(image[:, :, :3].astype(np.int16) - rgb) <= 2, axis=2).sum())


@needs_chromium
@pytest.mark.timeout(120)
def test_report_html_renders_in_headless_chromium(run, tmp_path):
    from matplotlib import image as mpimg

    from headless_chromium import load_page

    expressions = ["document.querySelectorAll('#gantt .ipu-row').length",
                   "document.querySelectorAll('#legend .legend-item').length",
                   "document.querySelectorAll('.memory-bar').length",
                   "document.querySelectorAll('#gantt rect.event').length",
                   "JSON.stringify(document.getElementById('gantt').getBoundingClientRect())"]
    page = load_page(run["dir"] / "report.html", expressions)
    assert page.errors == []
    assert page.requests == [(run["dir"] / "report.html").as_uri()]  # nothing from the network
    values = page.values
    assert values[expressions[0]] == 4
    assert values[expressions[1]] == len(KIND_COLOURS)
    assert values[expressions[2]] == 4
    assert values[expressions[3]] == len(run["trainer"].executionTrace().events)
    assert page.dom.count('class="ipu-row"') == 4 and 'id="legend"' in page.dom
    shot = tmp_path / "report.png"
    shot.write_bytes(page.screenshot)
    pixels = (mpimg.imread(shot) * 255).round().astype(np.uint8)
    assert len(np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)) > 50  # not blank
    box = json.loads(values[expressions[4]])
    gantt = pixels[int(box["top"]):int(box["bottom"]), int(box["left"]):int(box["right"])]
    for kind in ("forward", "backward", "forward+backward", "update", "copy", "host_input"):
        assert colour_pixels(gantt, KIND_COLOURS[kind]) > 10, kind


@needs_chromium
@pytest.mark.timeout(60)
def test_the_chromium_harness_reports_page_errors(tmp_path):
    """The check above can fail: a broken page's errors and requests are reported."""
    from headless_chromium import load_page

    page_file = tmp_path / "broken.html"
    page_file.write_text("<html><body><script>console.error('drawn badly'); missing();</script>"
                         "<img src='http://popsim.invalid/x.png'></body></html>")
    page = load_page(page_file)
    assert any("console.error: drawn badly" in e for e in page.errors)
    assert any("ReferenceError: missing is not defined" in e for e in page.errors)
    assert "http://popsim.invalid/x.png" in page.requests


@pytest.mark.timeout(30)
def test_a_file_that_is_json_but_no_profile_is_named_as_such(tmp_path):
    (tmp_path / "memory.json").write_text('{"format": "something else"}')
    profile = profiling.load(tmp_path)
    with pytest.raises(ValueError, match=r"holds trace.json or memory.json files that are not a "
                                         r"popsim profile's \(.*key 'ipus' not found\)\. "
                                         r"Write them again"):
        profile.summary()


# The analysis and advice on hand-made traces are tested in C++, where they live
# (tests/cpp/profile/profile_analysis_test.cpp).
