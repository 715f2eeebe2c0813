"""walkthrough.ipynb, executed top to bottom with nbclient as a reader's kernel would run it,
with one epoch (POPSIM_TUTORIAL_EPOCHS), and its outputs checked."""

import json
import re
import sys

import pytest

from tutorial_helpers import TUTORIAL_DIR, child_environment

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = TUTORIAL_DIR / "walkthrough.ipynb"
# One epoch of the offline digits (20 optimizer steps) reaches about 78%.
ACCURACY_FLOOR = 70.0


def number(text):
    return float(text.replace(",", ""))


@pytest.fixture(scope="module")
def executed(tmp_path_factory, request):
    """The notebook after running it, and all its text output joined."""
    tmp_path = tmp_path_factory.mktemp("notebook")
    # A kernelspec named like the notebook's ("python3") that starts this interpreter, found
    # before Debian's /usr/share/jupyter one (which runs /usr/bin/python3, outside the venv).
    kernel_dir = tmp_path / "jupyter" / "kernels" / "python3"
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (popsim tests)", "language": "python"}))
    env = child_environment()  # the kernel imports the popsim under test
    env.update(JUPYTER_PATH=str(tmp_path / "jupyter"), POPSIM_PROGRESS="0", MPLBACKEND="agg",
               POPSIM_TUTORIAL_EPOCHS="1", POPSIM_TUTORIAL_PROFILE_DIR=str(tmp_path / "profile"))
    monkeypatch = pytest.MonkeyPatch()
    request.addfinalizer(monkeypatch.undo)
    for name, value in env.items():  # the kernel manager reads these from os.environ
        monkeypatch.setenv(name, value)

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        "commit the notebook with its outputs cleared")
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=240,
                                     resources={"metadata": {"path": str(TUTORIAL_DIR)}})
    client.execute()
    text = "\n".join(output.get("text", "") for cell in notebook.cells
                     if cell.cell_type == "code" for output in cell.outputs
                     if output.output_type == "stream" and output.name == "stdout")
    return notebook, text, tmp_path


def outputs(notebook):
    return [output for cell in notebook.cells if cell.cell_type == "code"
            for output in cell.outputs]


@pytest.mark.timeout(300)
def test_every_cell_runs_without_error(executed):
    notebook, text, _ = executed
    errors = [output for output in outputs(notebook) if output.output_type == "error"]
    assert not errors, errors
    assert "1 epoch(s) of mnist" in text  # the short setting reached the kernel


@pytest.mark.timeout(300)
def test_plots_are_inline_images(executed):
    notebook, _, tmp_path = executed
    images = [output for output in outputs(notebook)
              if output.output_type == "display_data" and "image/png" in output.data]
    # training timeline, memory, pipelined vs sharded, on chip vs offloaded, inference
    assert len(images) >= 5, len(images)
    for model in ("pipelined/training", "sharded/training", "offloaded/training",
                  "pipelined/inference"):
        assert (tmp_path / "profile" / model / "trace.json").is_file(), model


@pytest.mark.timeout(300)
def test_profile_summaries_name_the_bottlenecks(executed):
    _, text, _ = executed
    # With OutputMode.All, IPU 3 streams outputs back per micro-batch; without, the input link.
    assert "popsim profile of TrainingModelWithLoss (training)" in text
    assert "- Bottleneck: stage 3 (blocks B4) on IPU 3" in text
    assert "- Bottleneck: IPU 0's host link" in text
    transfers = re.findall(r"^IPU (\d) +([0-9,]+) +([0-9,]+) +([0-9,]+) +([0-9,]+)$", text,
                           re.MULTILINE)
    assert [row[0] for row in transfers] == ["0", "1", "2", "3"], text
    images_in, compute = number(transfers[0][1]), [number(row[4]) for row in transfers]
    assert images_in > max(compute) > 0  # the host's part of an input beats any IPU's work
    image_bytes = number(transfers[0][2])  # received on IPU 0's compute tiles
    assert max(compute) < image_bytes < images_in


@pytest.mark.timeout(300)
def test_test_accuracy_is_reported(executed):
    _, text, _ = executed
    accuracy = number(re.search(r"Test accuracy: ([0-9.]+)%", text).group(1))
    assert ACCURACY_FLOOR < accuracy <= 100.0, text


@pytest.mark.timeout(300)
def test_pipelined_and_sharded_are_compared(executed):
    _, text, _ = executed
    calls = re.search(r"Simulated time per call: pipelined ([0-9,]+) cycles .*, sharded "
                      r"([0-9,]+) cycles", text)
    pipelined, sharded = number(calls.group(1)), number(calls.group(2))
    assert pipelined < sharded
    totals = re.search(r"pipelined ([0-9.]+) ms, sharded ([0-9.]+) ms, speed-up ([0-9.]+)x", text)
    assert number(totals.group(3)) == pytest.approx(
        number(totals.group(2)) / number(totals.group(1)), abs=0.01)
    assert "Pipelined and sharded weights identical: True" in text
    memory = re.findall(r"^IPU (\d) +([0-9.]+) \( *([0-9.]+)\) +([0-9.]+) \( *([0-9.]+)\)$",
                        text, re.MULTILINE)
    assert [row[0] for row in memory] == ["0", "1", "2", "3"], text
    assert number(memory[0][2]) > 0 and number(memory[3][2]) == 0  # the pipeline's stash
    assert all(number(row[4]) == 0 for row in memory)  # sharded stashes nothing
    # One call per configuration: All at buffering depth 1 is what trained above; turning
    # outputs off leaves IPU 0 waiting for each micro-batch's images; multibuffering (depth 2)
    # too brings the pipeline near the host-link floor, while sharded execution adds up its
    # stages (IPU 0's receiving the images included).
    rows = {name: [number(c) for c in cells.split()] for name, cells in re.findall(
        r"^(pipelined|sharded) +([0-9,]+ +[0-9,]+ +[0-9,]+)$", text, re.MULTILINE)}
    assert rows["pipelined"][0] == pipelined and rows["sharded"][0] == sharded, rows
    floor = number(re.search(r"host-link floor: ([0-9,]+) cycles", text).group(1))
    for strategy in rows:
        all_outputs, final, multibuffered = rows[strategy]
        assert floor < multibuffered < final < all_outputs
    assert rows["pipelined"][2] < 1.25 * floor
    assert rows["pipelined"][1] < rows["sharded"][1]
    assert rows["pipelined"][2] < rows["sharded"][2]


@pytest.mark.timeout(300)
def test_offloading_moves_the_optimizer_state_and_slows_the_update(executed):
    _, text, _ = executed
    rows = re.findall(r"^(\d) +([0-9,]+) B +([0-9,]+) B +([0-9,]+) +([0-9,]+) +([0-9,]+) +"
                      r"([0-9,]+)$", text, re.MULTILINE)
    assert len(rows) == 4, text
    for _, on_chip, offloaded, drop, state, update_on_chip, update_offloaded in rows:
        assert number(on_chip) - number(offloaded) == number(drop) == number(state) > 0
        assert number(update_offloaded) > number(update_on_chip)
    off_chip = number(re.search(r"Optimizer state off chip: ([0-9,]+) bytes", text).group(1))
    assert off_chip == sum(number(row[4]) for row in rows)
    assert re.search(r"[1-9]\d* streaming events in the first step", text)
    assert "Offloaded and on-chip weights identical: True" in text


def test_float16_trains_as_well_in_half_the_bytes(executed):
    _, text, _ = executed
    accuracies = {dtype: number(value) for dtype, value in
                  re.findall(r"^(float32|float16): loss [\d.]+, accuracy ([\d.]+)%", text, re.M)}
    assert abs(accuracies["float16"] - accuracies["float32"]) < 2.0
    rows = {line.split()[0]: [number(v) for v in line.split()[1:]]
            for line in text.splitlines()
            if line.split() and line.split()[0] in ("weights", "activations", "stash")}
    # Weights halve (up to alignment); activations and the stash hold int32 max-pool
    # indices too, which keep their size.
    for category, at_most in (("weights", 0.6), ("activations", 0.8), ("stash", 0.8)):
        single, half = rows[category][0::2], rows[category][1::2]
        assert len(single) == 4
        for s, h in zip(single, half):
            assert h <= at_most * s or s == 0, (category, single, half)


@pytest.mark.timeout(300)
def test_the_planner_is_at_least_as_fast_as_the_tutorials_split(executed):
    _, text, _ = executed
    rows = re.findall(r"^(\d) IPUs: hand split ([0-9,]+) items/s, planned ([0-9,]+) items/s",
                      text, re.MULTILINE)
    assert [row[0] for row in rows] == ["4", "2"], text
    for _, hand, planned in rows:
        assert number(planned) >= number(hand)
    assert "Chosen: [1, 1, 1, 1]" in text
    assert 'popsim.BeginBlock(model.get_submodule("model.layer2"), "IPU1", ipu_id=1)' in text
