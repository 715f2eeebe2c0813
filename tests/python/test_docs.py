"""The documentation's examples cannot rot: README.md's Python runs, every Python example of
the site (docs/) is a ``testcode`` block that ``scripts/docs.sh --check`` runs, and the
tutorial README's excerpts are the tutorial's own code. (The site itself is built with
warnings as errors by ``scripts/docs.sh --check``, which ``make test`` runs after pytest.)"""

import json
import pathlib
import re
import textwrap

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "tutorials" / "pipelining"


def python_blocks(path):
    return re.findall(r"^```python\n(.*?)^```$", path.read_text(encoding="utf-8"),
                      re.MULTILINE | re.DOTALL)


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < 200, f"README.md has {lines} lines; the guide belongs in docs/"


@pytest.mark.timeout(120)
def test_readme_example_runs(capsys, monkeypatch):
    monkeypatch.setenv("POPSIM_PROGRESS", "0")
    blocks = python_blocks(ROOT / "README.md")
    assert blocks, "README.md has no Python example"
    torch.manual_seed(0)
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    assert "bytes on IPU 1" in printed and "simulated seconds" in printed


def test_every_python_example_of_the_site_is_run():
    untested = [str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md")
                if python_blocks(path)]
    assert not untested, (
        f"{untested} have ```python blocks, which no test runs; write examples as ```{{testcode}} "
        "blocks (with a hidden ```{testsetup} if they need one), which the docs check runs")
    examples = sum(path.read_text(encoding="utf-8").count("```{testcode}")
                   for path in (ROOT / "docs").rglob("*.md"))
    assert examples >= 10, examples


def normalised_lines(code):
    return [line.rstrip() for line in textwrap.dedent(code).strip().splitlines()]


def test_tutorial_readme_quotes_the_tutorials_code():
    notebook = json.loads((TUTORIAL / "walkthrough.ipynb").read_text(encoding="utf-8"))
    sources = [(TUTORIAL / name).read_text(encoding="utf-8")
               for name in ("mnist_network.py", "mnist_pipeline.py", "mnist_data.py")]
    sources += ["".join(cell["source"]) for cell in notebook["cells"]
                if cell["cell_type"] == "code"]
    # Every source line stripped of its indentation, so a quoted method or loop body matches.
    source_text = "\n".join(line.strip() for source in sources for line in source.splitlines())
    blocks = python_blocks(TUTORIAL / "README.md")
    assert blocks
    for block in blocks:
        quoted = "\n".join(line.strip() for line in normalised_lines(block))
        assert quoted in source_text, (
            f"tutorials/pipelining/README.md quotes code the tutorial does not have:\n{block}")
