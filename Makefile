# The two commands of README.md. Each installs what is missing (Debian
# packages, .venv, the popsim build) before it runs.
.PHONY: demo test sanitize benchmark format

demo:
	scripts/demo.sh

test:
	scripts/test.sh

sanitize:
	scripts/sanitize.sh

benchmark:
	scripts/setup.sh
	.venv/bin/python benchmarks/bench_inference.py

format:
	find csrc tests/cpp -name '*.h' -o -name '*.cpp' | xargs clang-format -i
