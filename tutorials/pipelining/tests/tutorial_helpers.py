"""Paths and a script runner shared by the tutorial's tests (not a conftest.py: tests/python
has its own, and pytest would load both under the one name `conftest`)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import popsim

TESTS_DIR = Path(__file__).resolve().parent
TUTORIAL_DIR = TESTS_DIR.parent
SCRIPT = TUTORIAL_DIR / "mnist_pipeline.py"
PARITY_SCRIPT = TESTS_DIR / "eager_parity.py"

if str(TUTORIAL_DIR) not in sys.path:  # the tests import the tutorial's modules
    sys.path.insert(0, str(TUTORIAL_DIR))


def child_environment():
    """This environment, with the popsim these tests imported first on PYTHONPATH: the
    scripts run in other directories, where a relative PYTHONPATH would find another one."""
    env = dict(os.environ)
    package_root = str(Path(popsim.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return env


def run_python(script, *flags, timeout, cwd=None):
    """Runs `script` with this interpreter; returns its stdout, failing with its stderr."""
    result = subprocess.run([sys.executable, str(script), *map(str, flags)], cwd=cwd,
                            capture_output=True, text=True, timeout=timeout,
                            env=child_environment())
    assert result.returncode == 0, (
        f"{script.name} {' '.join(map(str, flags))} exited with {result.returncode}:\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def run_tutorial(tmp_path, *flags, timeout=240):
    """Runs mnist_pipeline.py in `tmp_path`; returns its summary (see --summary-json)."""
    summary = tmp_path / "summary.json"
    run_python(SCRIPT, *flags, "--summary-json", summary, timeout=timeout, cwd=tmp_path)
    return json.loads(summary.read_text())
