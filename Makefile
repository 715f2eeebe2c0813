# The two commands of README.md. Each installs what is missing (Debian
# packages, .venv, the popsim build) before it runs.
.PHONY: demo test docs fuzz sanitize benchmark format

demo:
	scripts/demo.sh

test:
	scripts/test.sh

# The documentation site (docs/, Sphinx) in build/docs/html, with the
# tutorial's notebook executed.
docs:
	scripts/docs.sh

# The differential fuzzer beyond the fixed slice `make test` runs: fresh
# random models, DataLoader configurations and dtypes each time
# (POPSIM_FUZZ_EXAMPLES per test, 5000 by default).
fuzz:
	POPSIM_BUILD_TESTS=1 scripts/setup.sh
	POPSIM_FUZZ_EXAMPLES=$${POPSIM_FUZZ_EXAMPLES:-5000} .venv/bin/python -m pytest tests/python/test_fuzz*.py

sanitize:
	scripts/sanitize.sh

benchmark:
	scripts/setup.sh
	.venv/bin/python benchmarks/bench_inference.py

format:
	find csrc tests/cpp -name '*.h' -o -name '*.cpp' | xargs clang-format -i
