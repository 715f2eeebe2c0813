"""Differential fuzzing of popsim.DataLoader against torch's DataLoader.

Random configurations (dataset size, batch size, deviceIterations, replicas,
gradient accumulation, processes, shuffling, samplers, batch samplers whose
batches vary in size, drop_last, workers, loading modes) must give, epoch
after epoch, the sample stream torch's DataLoader gives for the same
sampling, cut into popsim's combined batches: whole combined batches, and
the short rest only without drop_last. A process of a multi-process job
reads its documented part (a contiguous range of the dataset, or of a
permutation drawn from the seed and the epoch, as DistributedSampler with
set_epoch).

`make test` runs a fixed-seed slice; POPSIM_FUZZ_EXAMPLES=N runs N fresh
examples (`make fuzz`).
"""

import os
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from torch.utils.data import TensorDataset

import popsim

EXAMPLES = int(os.environ.get("POPSIM_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=EXAMPLES or 60, derandomize=EXAMPLES == 0, database=None,
                deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODES = [popsim.DataLoaderMode.Sync, popsim.DataLoaderMode.Async,
         popsim.DataLoaderMode.AsyncRebatched]
EPOCHS = 2

pytestmark = pytest.mark.timeout(600)


class ListBatchSampler:
    """A batch sampler given as its batches (torch accepts any iterable of
    index lists), with the batch_size attribute popsim reads."""

    def __init__(self, batches, batch_size):
        self.batches = batches
        self.batch_size = batch_size

    def __iter__(self):
        return iter([list(batch) for batch in self.batches])

    def __len__(self):
        return len(self.batches)


@st.composite
def configurations(draw):
    processes = draw(st.sampled_from([1, 1, 2, 3]), "processes")
    config = {
        "samples": draw(st.integers(1, 48), "samples"),
        "batch": draw(st.integers(1, 4), "batch_size"),
        "iterations": draw(st.integers(1, 3), "deviceIterations"),
        "replicas": draw(st.integers(1, 2), "replicationFactor"),
        "accumulation": draw(st.integers(1, 2), "gradientAccumulation"),
        "processes": processes,
        "process": draw(st.integers(0, processes - 1), "processId"),
        "drop_last": draw(st.booleans(), "drop_last"),
        "workers": draw(st.sampled_from([0, 0, 0, 2]), "num_workers"),
        "mode": draw(st.sampled_from(MODES), "mode"),
        "seed": draw(st.integers(0, 2**20), "randomSeed"),
    }
    # Samplers are the caller's to partition in a multi-process job.
    kinds = ["plain", "shuffle"] + (["sampler", "batch_sampler"] if processes == 1 else [])
    config["sampling"] = draw(st.sampled_from(kinds), "sampling")
    if config["sampling"] == "sampler":
        config["order"] = draw(st.permutations(range(config["samples"])), "sampler order")
    if config["sampling"] == "batch_sampler":
        order = draw(st.permutations(range(config["samples"])), "batch sampler order")
        cuts = draw(st.lists(st.integers(1, config["samples"]), max_size=12), "batch cuts")
        edges = sorted({0, config["samples"], *cuts})
        config["batches"] = [order[a:b] for a, b in zip(edges, edges[1:])]
        if draw(st.booleans(), "batches of batch_size"):  # all full but maybe the last
            size = config["batch"]
            config["batches"] = [order[a:a + size] for a in range(0, len(order), size)]
        config["collate"] = draw(st.sampled_from(["default", "pad"]), "collate_fn")
    return config


def pad_collate(batch_size):
    """A collate_fn that pads each batch to batch_size rows of feature and label -1."""
    def collate(samples):
        features, labels = torch.utils.data.default_collate(samples)
        missing = batch_size - len(samples)
        if missing > 0:
            features = torch.cat([features, torch.full((missing, 1), -1.0)])
            labels = torch.cat([labels, torch.full((missing,), -1)])
        return features, labels
    return collate


def collate_of(config):
    return pad_collate(config["batch"]) if config.get("collate") == "pad" else None


def combined_size(config):
    return config["batch"] * config["iterations"] * config["replicas"] * config["accumulation"]


def options_of(config):
    opts = popsim.Options().deviceIterations(config["iterations"]).randomSeed(config["seed"])
    opts.replicationFactor(config["replicas"])
    opts.Training.gradientAccumulation(config["accumulation"])
    opts.Distributed.configureProcessId(config["process"], config["processes"])
    return opts


def numbered(samples):
    """Sample i is (float i, label i)."""
    return TensorDataset(torch.arange(samples).float().view(-1, 1), torch.arange(samples))


def torch_stream(config, epochs):
    """Each epoch's labels as torch's DataLoader yields them for this sampling
    (in a multi-process job, from this process's documented part)."""
    samples, combined = config["samples"], combined_size(config)
    if config["processes"] > 1:
        per_process = combined * (samples // (combined * config["processes"]))
        first = config["process"] * per_process
        streams = []
        for epoch in range(epochs):
            order = (torch.randperm(samples,
                                    generator=torch.Generator().manual_seed(config["seed"] + epoch))
                     if config["sampling"] == "shuffle" else torch.arange(samples))
            streams.append(order[first:first + per_process].tolist())
        return streams
    dataset = numbered(samples)
    # Workers as popsim's (persistent by default, as PopTorch's): a shuffling
    # loader draws its workers' seed from its generator once per iterator.
    workers = {"num_workers": config["workers"], "persistent_workers": config["workers"] > 0}
    if config["sampling"] == "batch_sampler":
        loader = torch.utils.data.DataLoader(
            dataset, batch_sampler=ListBatchSampler(config["batches"], config["batch"]),
            collate_fn=collate_of(config), **workers)
    elif config["sampling"] == "sampler":
        loader = torch.utils.data.DataLoader(dataset, sampler=list(config["order"]), **workers)
    else:
        shuffle = config["sampling"] == "shuffle"
        loader = torch.utils.data.DataLoader(
            dataset, shuffle=shuffle,
            generator=torch.Generator().manual_seed(config["seed"]) if shuffle else None,
            **workers)
    return [torch.cat([labels for _, labels in loader]).tolist() for _ in range(epochs)]


def cut(stream, combined, drop_last):
    """A stream cut into combined batches: the short rest kept only without drop_last."""
    batches = [stream[start:start + combined] for start in range(0, len(stream), combined)]
    if batches and len(batches[-1]) < combined and drop_last:
        batches.pop()
    return batches


def popsim_loader(config):
    arguments = {"num_workers": config["workers"], "drop_last": config["drop_last"],
                 "mode": config["mode"]}
    if config["sampling"] == "batch_sampler":
        arguments["batch_sampler"] = ListBatchSampler(config["batches"], config["batch"])
        if collate_of(config) is not None:
            arguments["collate_fn"] = collate_of(config)
    else:
        arguments["batch_size"] = config["batch"]
        arguments["shuffle"] = config["sampling"] == "shuffle"
        if config["sampling"] == "sampler":
            arguments["sampler"] = list(config["order"])
    return popsim.DataLoader(options_of(config), numbered(config["samples"]), **arguments)


@FUZZ
@given(configurations())
def test_the_sample_stream_is_torchs_cut_into_combined_batches(config):
    note(f"configuration: {config}")
    combined = combined_size(config)
    streams = torch_stream(config, EPOCHS)
    expected = [cut(stream, combined, config["drop_last"]) for stream in streams]
    # A batch sampler of one's own may yield batches of any size: its epoch's
    # size is known only by drawing from it.
    own_batches = config["sampling"] == "batch_sampler"
    refused = False
    if own_batches:
        # collate_fn sees each batch the sampler yields, as in torch. One batch per call
        # (not rebatched): torch's batches as they are. Several: joined whole, so each must
        # hold batch_size samples (the last may hold fewer); anything else is refused.
        sizes = [len(batch) for batch in config["batches"]]
        whole = combined == config["batch"] and config["mode"] != popsim.DataLoaderMode.AsyncRebatched
        if whole:
            expected = [torch_batches(config) for _ in range(EPOCHS)]
        else:
            refused = any(size != config["batch"] for size in sizes[:-1]) or (
                bool(sizes) and sizes[-1] > config["batch"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # samples dropped each epoch, announced
        if not expected[0] and not own_batches and (config["drop_last"]
                                                    or config["processes"] > 1):
            # Fewer samples than one combined batch (per process): an error,
            # not empty epochs.
            with pytest.raises(popsim.OptionError, match="combined batch"):
                popsim_loader(config)
            return
        loader = popsim_loader(config)
        try:
            if refused:
                with pytest.raises(popsim.InputError, match="of the batch_sampler "
                                   r"\(ListBatchSampler\) holds \d+ samples, not its batch_size"):
                    list(loader)
                return
            actual = [[labels.tolist() for _, labels in loader] for _ in range(EPOCHS)]
            for features, labels in loader:  # features travel with their labels
                assert torch.equal(features.view(-1), labels.float())
                break
        finally:
            loader.terminate()
    assert actual == expected
    if not own_batches or all(len(batch) == config["batch"] for batch in config["batches"]):
        assert len(loader) == len(expected[0])


def torch_batches(config):
    """The labels of each batch torch's DataLoader yields for the batch sampler."""
    loader = torch.utils.data.DataLoader(
        numbered(config["samples"]),
        batch_sampler=ListBatchSampler(config["batches"], config["batch"]),
        collate_fn=collate_of(config))
    return [labels.tolist() for _, labels in loader]
