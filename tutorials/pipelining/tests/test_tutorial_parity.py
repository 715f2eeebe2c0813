"""Acceptance: the tutorial's test accuracy, with its defaults, is within one percentage point
of eager PyTorch trained on the same data, order, seed and effective batch."""

import json

import pytest

from tutorial_helpers import PARITY_SCRIPT, run_python


@pytest.mark.timeout(300)
def test_popsim_matches_eager_pytorch_within_one_point(tmp_path):
    stdout = run_python(PARITY_SCRIPT, timeout=280, cwd=tmp_path)
    result = json.loads(stdout[stdout.rindex("\n{") + 1:])  # the JSON summary ends the output
    assert result["effective_batch"] == 40 * 10
    assert result["optimizer_steps"] == result["epochs"] * result["train_images"] // 400
    assert result["difference_points"] <= 1.0, result
    # Both really learned: a broken run on both sides would also agree.
    assert result["popsim_test_accuracy"] > 85.0, result
