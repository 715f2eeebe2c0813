"""docs/ops.md is what op_coverage.py generates from the case tables: when an
op or a case is added, regenerate it (`.venv/bin/python
tests/python/op_coverage.py`)."""

import op_coverage


def test_the_supported_ops_page_is_generated_from_the_tests():
    with open(op_coverage.DOC) as page:
        written = page.read()
    assert written == op_coverage.table(), (
        "docs/ops.md is out of date: run .venv/bin/python tests/python/op_coverage.py")
