#!/usr/bin/env bash
# The main job: set up (if needed), prepare the data (if needed), then train the
# MNIST network pipelined over four simulated IPUs and test it
# (tutorials/pipelining/mnist_pipeline.py, with its defaults unless flags are given).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/prepare_data.sh
.venv/bin/python tutorials/pipelining/mnist_pipeline.py "$@"
