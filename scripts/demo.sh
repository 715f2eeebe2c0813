#!/usr/bin/env bash
# The main job: set up (if needed), then run the MNIST inference demo on a
# simulated IPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/python tutorials/inference_demo.py "$@"
