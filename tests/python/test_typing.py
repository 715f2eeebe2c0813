"""The Python package type-checks: its public API carries type hints, and
popsim._C's typed contract (CompileOptions and friends) is described by
python/popsim/_C.pyi, so a change on either side that breaks the other fails
here. Configured in pyproject.toml ([tool.mypy])."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.timeout(300)
def test_the_package_type_checks_with_mypy():
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                            text=True, timeout=280)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("Success")
