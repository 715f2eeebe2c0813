"""Exports the pipelining tutorial's MNIST network as TorchScript, for the C++ example
(examples/cpp/mnist_inference.cpp) and the C++ API's tests.

    .venv/bin/python examples/cpp/export_mnist.py DIR

writes DIR/mnist_traced.pt (torch.jit.trace) and DIR/mnist_scripted.pt (torch.jit.script) of
the same network, with the tutorial's seed-0 weights.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tutorials" / "pipelining"))
from mnist_network import Network  # noqa: E402


def network() -> torch.nn.Module:
    torch.manual_seed(0)
    return Network().eval()


def main(directory: str) -> None:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    model = network()
    torch.jit.trace(model, torch.randn(8, 1, 28, 28)).save(str(out / "mnist_traced.pt"))
    torch.jit.script(model).save(str(out / "mnist_scripted.pt"))
    print(f"wrote {out / 'mnist_traced.pt'} and {out / 'mnist_scripted.pt'}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
