"""popsim.DataLoader and AsynchronousDataAccessor: combined batches, sample order,
background loading, and shutting the loading processes down in every way a loop
can end. Every test has a timeout, so a hang fails instead of stalling CI."""

import itertools
import os
import pathlib
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings

import pytest
import torch
import tqdm
from torch.utils.data import Dataset, IterableDataset, TensorDataset, get_worker_info

import popsim

pytestmark = pytest.mark.timeout(60)

ASYNC_MODES = [popsim.DataLoaderMode.Async, popsim.DataLoaderMode.AsyncRebatched]
ALL_MODES = [popsim.DataLoaderMode.Sync] + ASYNC_MODES


def numbered(samples):
    """Sample i is (float i, label i)."""
    return TensorDataset(torch.arange(samples).float().view(-1, 1), torch.arange(samples))


def options(iterations=1, replicas=1, accumulation=1, seed=None):
    opts = popsim.Options().deviceIterations(iterations).replicationFactor(replicas)
    opts.Training.gradientAccumulation(accumulation)
    if seed is not None:
        opts.randomSeed(seed)
    return opts


def labels_of(loader, epochs=1):
    return [torch.cat([labels.clone() for _, labels in loader]).tolist() for _ in range(epochs)]


def alive(pid):
    """Whether a process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def descendants(pid):
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as children:
                for child in children.read().split():
                    found += [int(child)] + descendants(int(child))
        except FileNotFoundError:
            pass
    return found


def wait_until_gone(pids, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


@pytest.mark.parametrize("batch,iterations,replicas,accumulation",
                         list(itertools.product([1, 3], [1, 2], [1, 2], [1, 5])))
def test_combined_batch_is_the_product_of_the_four_factors(batch, iterations, replicas,
                                                           accumulation):
    combined = batch * iterations * replicas * accumulation
    loader = popsim.DataLoader(options(iterations, replicas, accumulation), numbered(combined * 3),
                               batch_size=batch)
    assert loader.combinedBatchSize == combined
    assert len(loader) == 3
    batches = [labels for _, labels in loader]
    assert [len(b) for b in batches] == [combined] * 3
    assert torch.cat(batches).tolist() == list(range(combined * 3))


@pytest.mark.parametrize("mode", ALL_MODES)
def test_every_mode_yields_the_same_batches_in_the_same_order(mode):
    loader = popsim.DataLoader(options(2, accumulation=3, seed=5), numbered(600), batch_size=4,
                               shuffle=True, mode=mode)
    reference = torch.utils.data.DataLoader(numbered(600), batch_size=24, shuffle=True,
                                            drop_last=True,
                                            generator=torch.Generator().manual_seed(5))
    assert labels_of(loader, epochs=3) == labels_of(reference, epochs=3)
    assert len(loader) == len(reference) == 25
    loader.terminate()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_without_random_seed_the_order_follows_torch_manual_seed(mode):
    torch.manual_seed(11)
    reference = labels_of(torch.utils.data.DataLoader(numbered(90), batch_size=10, shuffle=True,
                                                      drop_last=True))
    torch.manual_seed(11)
    loader = popsim.DataLoader(options(10), numbered(90), shuffle=True, mode=mode)
    assert labels_of(loader) == reference
    loader.terminate()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_workers_load_the_same_batches(mode):
    loader = popsim.DataLoader(options(4, seed=1), numbered(400), batch_size=5, shuffle=True,
                               num_workers=2, mode=mode)
    # Workers persist by default, as in PopTorch; torch then draws its worker seed once
    # rather than per epoch, which moves the shuffling of later epochs.
    reference = torch.utils.data.DataLoader(numbered(400), batch_size=20, shuffle=True,
                                            drop_last=True, num_workers=2,
                                            persistent_workers=True,
                                            generator=torch.Generator().manual_seed(1))
    assert labels_of(loader, epochs=2) == labels_of(reference, epochs=2)
    loader.terminate()


class Counting(IterableDataset):
    """Samples start..stop-1, split between torch's workers."""

    def __init__(self, start, stop, worker_lengths=None):
        self.start, self.stop, self.worker_lengths = start, stop, worker_lengths

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            numbers = range(self.start, self.stop)
        else:
            begin = self.start + sum(self.worker_lengths[:info.id])
            numbers = range(begin, begin + self.worker_lengths[info.id])
        for i in numbers:
            yield torch.tensor([float(i)]), i


@pytest.mark.parametrize("mode", ALL_MODES)
def test_iterable_datasets(mode):
    loader = popsim.DataLoader(options(3), Counting(0, 32), batch_size=2, mode=mode)
    assert labels_of(loader) == [list(range(30))]
    loader.terminate()


def test_rebatching_keeps_every_full_combined_batch():
    """Two workers load 23 and 17 samples. Loading combined batches of 10 per worker
    keeps 2 + 1; rebatching their 40 samples keeps all 4."""
    dataset = Counting(0, 40, worker_lengths=[23, 17])
    lost = popsim.DataLoader(options(5), dataset, batch_size=2, num_workers=2,
                             mode=popsim.DataLoaderMode.Async)
    assert sum(1 for _ in lost) == 3
    lost.terminate()
    rebatched = popsim.DataLoader(options(5), dataset, batch_size=2, num_workers=2,
                                  mode=popsim.DataLoaderMode.AsyncRebatched,
                                  rebatched_worker_size=4)
    batches = [labels.clone() for _, labels in rebatched]
    assert [len(b) for b in batches] == [10] * 4
    assert sorted(torch.cat(batches).tolist()) == list(range(40))
    rebatched.terminate()


def test_rebatched_length_and_the_last_short_batch():
    with pytest.warns(UserWarning, match="the last batch has 2 samples"):
        loader = popsim.DataLoader(options(4), numbered(50), batch_size=3, drop_last=False,
                                   mode=popsim.DataLoaderMode.AsyncRebatched)
    sizes = [len(labels) for _, labels in loader]
    assert sizes == [12, 12, 12, 12, 2] and len(loader) == 5
    loader.terminate()


def test_a_dataset_that_is_not_a_multiple_of_the_combined_batch_warns():
    with pytest.warns(UserWarning, match=r"An epoch has 105 samples, not a multiple of the "
                      r"combined batch 20 \(batch_size 2 x deviceIterations 10 x "
                      r"replicationFactor 1 x gradientAccumulation 1\): the last 5 samples of "
                      r"each epoch are dropped \(drop_last=True\)"):
        loader = popsim.DataLoader(options(10), numbered(105), batch_size=2)
    assert len(loader) == 5 and all(len(labels) == 20 for _, labels in loader)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_dataset_smaller_than_one_combined_batch_is_an_error(mode):
    with pytest.raises(popsim.OptionError, match=r"popsim.DataLoader: an epoch has 5 samples, "
                       r"fewer than one combined batch of 6 \(batch_size 2 x deviceIterations 3 "
                       r"x replicationFactor 1 x gradientAccumulation 1\), so with drop_last=True "
                       r"it would yield no batches"):
        popsim.DataLoader(options(3), numbered(5), batch_size=2, mode=mode)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("mode", ALL_MODES)
def test_an_iterable_dataset_smaller_than_one_combined_batch_gives_empty_epochs(mode):
    """Without a length it cannot be refused up front. Rebatching used to count the
    loaded batches as sent, and reloaded empty epochs without end."""
    loader = popsim.DataLoader(options(3), Counting(0, 5), batch_size=2, mode=mode)
    assert [sum(1 for _ in loader) for _ in range(2)] == [0, 0]
    if mode != popsim.DataLoaderMode.Sync:
        time.sleep(0.3)
        assert loader._accessor._ready.qsize() == 0  # the loading process waits
    loader.terminate()


def test_a_short_last_batch_gets_a_clear_error_from_the_model():
    with pytest.warns(UserWarning, match="with drop_last=False the last batch has 5 samples, "
                      "which a model compiled for 20 refuses"):
        loader = popsim.DataLoader(options(10), numbered(45), batch_size=2, drop_last=False)
    model = popsim.inferenceModel(torch.nn.Linear(1, 3), options(10))
    batches = list(loader)
    model(batches[0][0])
    with pytest.raises(popsim.InputError, match=r"Input 'input' has 5 samples in dimension 0 "
                       r"but the model was compiled for 20 per call \(micro-batch 2 x "
                       r"deviceIterations 10 x gradientAccumulation 1\)"):
        model(batches[-1][0])


def reversed_batches(samples, batch_size, drop_last=False):
    """A torch BatchSampler over the samples in reverse order."""
    return torch.utils.data.BatchSampler(range(samples - 1, -1, -1), batch_size, drop_last)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_batch_sampler_gives_the_micro_batches_of_each_combined_batch(mode):
    """The issue's case: 10 batches of 10, joined 2 x 3 = 6 at a time (an epoch of
    100 samples holds 1 combined batch of 60; the other 40 are dropped)."""
    with pytest.warns(UserWarning, match="the last 40 samples of each epoch are dropped"):
        loader = popsim.DataLoader(options(2, accumulation=3), numbered(100),
                                   batch_sampler=reversed_batches(100, 10), mode=mode)
    assert loader.combinedBatchSize == 60
    assert len(loader) == 1
    assert labels_of(loader, epochs=2) == [list(range(99, 39, -1))] * 2
    loader.terminate()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_batch_sampler_without_drop_last_yields_the_short_rest(mode):
    with pytest.warns(UserWarning, match="the last batch has 1 samples"):
        loader = popsim.DataLoader(options(3), numbered(25),
                                   batch_sampler=reversed_batches(25, 4), drop_last=False,
                                   mode=mode)
    batches = [labels.tolist() for _, labels in loader]
    assert batches == [list(range(24, 12, -1)), list(range(12, 0, -1)), [0]]
    assert len(loader) == 3
    loader.terminate()


def test_a_batch_samplers_short_last_batch_is_dropped_with_drop_last():
    # Batches 4, 4, 4 | 4, 4, 4 | 1: the last group is short and dropped.
    with pytest.warns(UserWarning, match="the last 1 samples of each epoch are dropped"):
        loader = popsim.DataLoader(options(3), numbered(25),
                                   batch_sampler=reversed_batches(25, 4))
    assert labels_of(loader) == [list(range(24, 0, -1))]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_len_counts_the_groups_a_batch_sampler_fills(mode):
    # 23 samples in batches 4, 4, 4 | 4, 4, 3: the second group is short and dropped.
    with pytest.warns(UserWarning, match="An epoch has 23 samples.*the last 11 samples"):
        loader = popsim.DataLoader(options(3), numbered(23),
                                   batch_sampler=reversed_batches(23, 4), mode=mode)
    assert len(loader) == 1
    assert len(labels_of(loader)) == 1
    loader.terminate()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_batch_sampler_that_drops_its_short_batch_is_counted_without_it(mode):
    # BatchSampler(drop_last=True) yields 5 batches of 4 of the 23 samples: 20 samples.
    with pytest.warns(UserWarning, match="An epoch has 20 samples.*the last 8 samples"):
        loader = popsim.DataLoader(options(3), numbered(23),
                                   batch_sampler=reversed_batches(23, 4, drop_last=True),
                                   mode=mode)
    assert len(loader) == 1
    assert labels_of(loader) == [list(range(22, 10, -1))]
    loader.terminate()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_sampler_orders_the_samples_as_in_torch(mode):
    sampler = torch.utils.data.SubsetRandomSampler(range(0, 90, 3),
                                                   generator=torch.Generator().manual_seed(4))
    reference_sampler = torch.utils.data.SubsetRandomSampler(
        range(0, 90, 3), generator=torch.Generator().manual_seed(4))
    loader = popsim.DataLoader(options(2), numbered(90), batch_size=5, sampler=sampler,
                               mode=mode)
    reference = torch.utils.data.DataLoader(numbered(90), batch_size=10, drop_last=True,
                                            sampler=reference_sampler)
    # The sampler draws 30 of the 90 samples: 3 combined batches of 10.
    assert len(loader) == len(reference) == 3
    assert labels_of(loader, epochs=2) == labels_of(reference, epochs=2)
    loader.terminate()


def test_sampler_errors():
    batches = reversed_batches(20, 5)
    with pytest.raises(popsim.OptionError, match=r"batch_size \(4\) and a batch_sampler of "
                       r"batch_size 5 are given; the batch_sampler decides the batch"):
        popsim.DataLoader(options(), numbered(20), batch_size=4, batch_sampler=batches)
    with pytest.raises(popsim.OptionError, match="excludes shuffle=True and sampler"):
        popsim.DataLoader(options(), numbered(20), shuffle=True, batch_sampler=batches)
    with pytest.raises(popsim.OptionError, match="has no batch_size attribute"):
        popsim.DataLoader(options(), numbered(20), batch_sampler=[[0, 1], [2, 3]])
    with pytest.raises(popsim.OptionError, match="leave rebatched_worker_size out"):
        popsim.DataLoader(options(), numbered(20), batch_sampler=batches,
                          mode=popsim.DataLoaderMode.AsyncRebatched, rebatched_worker_size=5)
    with pytest.raises(popsim.OptionError, match="an epoch has 20 samples, fewer than one "
                       "combined batch of 25"):
        popsim.DataLoader(options(5), numbered(20), batch_sampler=batches)


def test_option_errors():
    opts = options()
    with pytest.raises(popsim.OptionError, match="takes popsim.Options first"):
        popsim.DataLoader(numbered(4), opts)
    with pytest.raises(popsim.OptionError, match=r"unknown async_options \['bufer_size'\]"):
        popsim.DataLoader(opts, numbered(4), mode=popsim.DataLoaderMode.Async,
                          async_options={"bufer_size": 2})
    with pytest.raises(popsim.OptionError, match="async_options need mode="):
        popsim.DataLoader(opts, numbered(4), async_options={"buffer_size": 2})
    with pytest.raises(popsim.OptionError, match="rebatched_worker_size needs"):
        popsim.DataLoader(opts, numbered(4), rebatched_worker_size=2)
    with pytest.raises(popsim.OptionError, match="batch_size must be a positive integer"):
        popsim.DataLoader(opts, numbered(4), batch_size=0)
    with pytest.raises(popsim.OptionError,
                       match="rebatched_worker_size must be a positive integer, got 0"):
        popsim.DataLoader(options(), numbered(4), mode=popsim.DataLoaderMode.AsyncRebatched,
                          rebatched_worker_size=0)
    with pytest.raises(popsim.OptionError, match="buffer_size must be a positive integer"):
        popsim.AsynchronousDataAccessor(numbered(4), buffer_size=0)
    # Options given to a DataLoader are frozen, as when given to a model.
    with pytest.raises(popsim.OptionError, match="Can't modify frozen Options"):
        opts.deviceIterations(2)


def test_works_with_tqdm():
    loader = popsim.DataLoader(options(5), numbered(100), batch_size=2,
                               mode=popsim.DataLoaderMode.Async)
    bar = tqdm.tqdm(loader, disable=True)
    assert bar.total == 10 and sum(1 for _ in bar) == 10
    loader.terminate()


# Background loading: what happens to the loading process.

class Failing(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, index):
        if index == 37:
            raise KeyError(f"no sample {index}")
        return torch.tensor([float(index)])


@pytest.mark.parametrize("workers", [0, 2])
def test_an_exception_while_loading_reaches_the_user_with_its_traceback(workers):
    loader = popsim.DataLoader(options(10), Failing(), num_workers=workers,
                               mode=popsim.DataLoaderMode.Async)
    with pytest.raises(KeyError) as raised:
        for _ in loader:
            pass
    message = str(raised.value)
    assert "popsim's data loading process" in message
    assert "in __getitem__" in message and "no sample 37" in message
    # The loader stays usable: the next epoch fails at the same sample again.
    with pytest.raises(KeyError, match="no sample 37"):
        list(loader)
    process = loader._accessor.process
    loader.terminate()
    assert not process.is_alive()


@pytest.mark.parametrize("mode", ASYNC_MODES)
def test_breaking_out_of_the_loop_restarts_the_next_epoch(mode):
    loader = popsim.DataLoader(options(10), numbered(200), mode=mode)
    for index, (_, labels) in enumerate(loader):
        if index == 2:
            break
    assert labels_of(loader, epochs=2) == [list(range(200))] * 2
    loader.terminate()


def test_an_exception_in_the_users_loop_leaves_the_loader_usable():
    loader = popsim.DataLoader(options(10), numbered(200), mode=popsim.DataLoaderMode.Async)
    with pytest.raises(ZeroDivisionError):
        for _ in loader:
            1 / 0
    assert labels_of(loader) == [list(range(200))]
    assert len(list(itertools.islice(loader, 3))) == 3  # islice abandons the epoch
    assert labels_of(loader) == [list(range(200))]
    loader.terminate()


def test_poptorchs_accessor_arguments_are_taken_in_its_order():
    # PopTorch's order: dataset, buffer_size, miss_sleep_time_in_ms, load_indefinitely,
    # early_preload, sharing_strategy, rebatched_size. Graphcore's examples pass
    # async_options={"miss_sleep_time_in_ms": 0, "sharing_strategy": ...}.
    source = torch.utils.data.DataLoader(numbered(30), batch_size=10)
    accessor = popsim.AsynchronousDataAccessor(source, 2, 0.0, False, True,
                                               popsim.SharingStrategy.ForkServer)
    assert [batch[0][0].item() for batch in accessor] == [0, 10, 20]
    accessor.terminate()
    loader = popsim.DataLoader(options(10), numbered(100), mode=popsim.DataLoaderMode.Async,
                               async_options={"miss_sleep_time_in_ms": 0,
                                              "sharing_strategy": popsim.SharingStrategy.SharedMemory})
    assert len(list(loader)) == 10
    with pytest.raises(popsim.OptionError, match=r"miss_sleep_time_in_ms must be a number >= 0, "
                                                 r"got -1"):
        popsim.AsynchronousDataAccessor(source, miss_sleep_time_in_ms=-1)
    with pytest.raises(popsim.OptionError, match=r"sharing_strategy must be a "
                                                 r"popsim.SharingStrategy \(SharedMemory, "
                                                 r"FileSystem, Fork, ForkServer\), got 'fork'"):
        popsim.AsynchronousDataAccessor(source, sharing_strategy="fork")


def test_loading_without_load_indefinitely_and_with_early_preload():
    accessor = popsim.AsynchronousDataAccessor(
        torch.utils.data.DataLoader(numbered(30), batch_size=10), buffer_size=2,
        load_indefinitely=False, early_preload=True)
    assert accessor.process.is_alive()
    assert [labels_of(accessor) for _ in range(2)] == [[list(range(30))]] * 2
    accessor.terminate()


def test_a_batch_stays_valid_until_the_next_one_is_requested():
    loader = popsim.DataLoader(options(10), numbered(100), mode=popsim.DataLoaderMode.Async,
                               async_options={"buffer_size": 2})
    cloned = []
    for step, (_, labels) in enumerate(loader):
        expected = list(range(10 * step, 10 * step + 10))
        time.sleep(0.02)  # the loading process runs meanwhile: it must not refill this buffer yet
        assert labels.tolist() == expected
        cloned.append(labels.clone())
    assert torch.cat(cloned).tolist() == list(range(100))
    loader.terminate()


def test_del_stops_the_process_and_its_workers():
    loader = popsim.DataLoader(options(10), numbered(1000), num_workers=2,
                               mode=popsim.DataLoaderMode.Async)
    next(iter(loader))
    pids = [loader._accessor.process.pid] + descendants(loader._accessor.process.pid)
    assert len(pids) == 3  # the loading process and torch's two workers
    del loader
    assert wait_until_gone(pids) == []


@pytest.fixture
def short_tmp():
    """A temporary directory with a short path, for a script's TMPDIR: torch's workers pass
    tensors through Unix sockets in it, whose paths must stay under 108 bytes (pytest's own
    tmp_path, under a long TMPDIR, can exceed that)."""
    path = tempfile.mkdtemp(prefix="ps")
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


def run_script(body, temp_dir=None):
    """Runs a script that prints the loading process's pids, then returns its result
    and those pids; with `temp_dir`, its temporary files go there (TMPDIR)."""
    script = textwrap.dedent("""
        import os, sys, time, torch, popsim
        from torch.utils.data import TensorDataset

        def pids(loader):
            root = loader._accessor.process.pid
            print("PIDS", root, flush=True)

        if __name__ == "__main__":
            data = TensorDataset(torch.arange(100000).float().view(-1, 1))
            loader = popsim.DataLoader(popsim.Options().deviceIterations(10), data,
                                       num_workers=1, mode=popsim.DataLoaderMode.Async)
    """) + textwrap.indent(textwrap.dedent(body), "    ")
    environment = dict(os.environ, **({"TMPDIR": str(temp_dir)} if temp_dir else {}))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=45, env=environment)
    pids = [int(line.split()[1]) for line in result.stdout.splitlines()
            if line.startswith("PIDS")]
    return result, pids


def test_interpreter_exit_stops_the_loading_process(short_tmp):
    result, pids = run_script("""
        for index, batch in enumerate(loader):
            if index == 0:
                pids(loader)
            if index == 3:
                break
        print("done")
    """, short_tmp)
    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout and len(pids) == 1
    assert wait_until_gone(pids) == []
    # The loading process stopped torch's workers mid-epoch rather than leave them to be
    # terminated: each worker removed the directory it passes shared tensors through.
    assert sorted(path.name for path in short_tmp.glob("pymp-*")) == []


def test_sigterm_stops_the_loading_process_and_its_workers_cleanly(short_tmp):
    # As the loader's clean-up does when the process does not stop within its time: the
    # signal stops the epoch in progress, whose workers remove their temporary directories.
    result, pids = run_script("""
        import signal
        for index, batch in enumerate(loader):
            if index == 0:
                pids(loader)
                process = loader._accessor.process
                os.kill(process.pid, signal.SIGTERM)
                process.join(timeout=20)
                print("exit code", process.exitcode)
                break
    """, short_tmp)
    assert result.returncode == 0, result.stderr
    assert "exit code 0" in result.stdout and len(pids) == 1
    assert wait_until_gone(pids) == []
    assert sorted(path.name for path in short_tmp.glob("pymp-*")) == []


def loader_in_this_process(source):
    """The loading process's side of an accessor, run here on plain queues."""
    from popsim.data import async_data
    queues = [queue.Queue() for _ in range(3)]
    return async_data._Loader(source, 1, False, None, False, False, *queues, os.getppid())


@pytest.fixture
def terminate_handler(monkeypatch):
    """The loading process's SIGTERM handler, installed in this process for one test."""
    from popsim.data import async_data
    monkeypatch.setattr(async_data, "_terminate_requested", False)
    previous = signal.signal(signal.SIGTERM, async_data._stop_on_terminate)
    yield async_data
    signal.signal(signal.SIGTERM, previous)


def test_sigterm_inside_the_loaders_error_handling_still_stops_it(terminate_handler, monkeypatch):
    # The signal raises wherever the loader is. Raised while a batch was checked for
    # pickling (whose failures become the user's TypeError), it was reported as the
    # dataset's error, and the loader went on waiting with SIGTERM ignored: a loader that
    # terminate() could not stop (seen once in CI as "exit code None").
    async_data = terminate_handler

    class TerminatedWhilePickling:
        @staticmethod
        def dumps(message):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs before this returns

    monkeypatch.setattr(async_data, "ForkingPickler", TerminatedWhilePickling)
    loader = loader_in_this_process([torch.zeros(2)])
    loader.slots = [[torch.zeros(1)]]  # a batch larger than its slot is sent pickled
    loader.ready.put(("slots", loader.slots))
    with pytest.raises(async_data._Stop):
        loader.load_epoch((0, 0))
    assert async_data._terminate_requested


def test_a_stop_the_signal_raised_but_something_swallowed_is_still_carried_out(
        terminate_handler):
    # A signal's exception raised in a __del__ or a weakref callback is printed and lost;
    # the loader's waits see the request anyway.
    async_data = terminate_handler
    loader = loader_in_this_process([torch.zeros(2)])
    async_data._terminate_requested = True
    assert loader.wait_for_command() == ("stop",)
    with pytest.raises(async_data._Stop):
        loader.poll()


@pytest.mark.parametrize("mode, workers", [(popsim.DataLoaderMode.Async, 0),
                                           (popsim.DataLoaderMode.Async, 1),
                                           (popsim.DataLoaderMode.Sync, 1)])
def test_a_temporary_directory_too_long_for_sockets_is_refused_not_waited_on(
        short_tmp, monkeypatch, mode, workers):
    # Batches pass between processes through Unix sockets under TMPDIR; a path too long for
    # a socket's address once left the user waiting for a batch forever.
    deep = short_tmp / ("d" * 100)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    with pytest.raises(OSError, match=r"would be 1\d\d bytes, longer than a socket's address "
                                      r"holds \(107\)\. Set TMPDIR to a shorter directory"):
        popsim.DataLoader(options(10), numbered(100), num_workers=workers, mode=mode)
    with pytest.raises(OSError, match="longer than a socket's address holds"):
        popsim.AsynchronousDataAccessor(popsim.DataLoader(options(10), numbered(100)))
    # Loading in this process passes no batch between processes.
    loader = popsim.DataLoader(options(10), numbered(100), mode=popsim.DataLoaderMode.Sync)
    assert len(list(loader)) == 10


def test_keyboard_interrupt_in_the_loop_stops_everything():
    result, pids = run_script("""
        import signal
        # Ctrl-C raises KeyboardInterrupt, even when this test runs in a
        # background job, whose shell starts its children ignoring SIGINT.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for index, batch in enumerate(loader):
            if index == 0:
                pids(loader)
            if index == 2:
                os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
    """)
    assert result.returncode != 0 and "KeyboardInterrupt" in result.stderr
    assert len(pids) == 1 and wait_until_gone(pids) == []


def test_the_loading_process_stops_when_its_parent_is_killed():
    result, pids = run_script("""
        for index, batch in enumerate(loader):
            pids(loader)
            os.kill(os.getpid(), 9)
    """)
    assert result.returncode == -9 and len(pids) == 1
    assert wait_until_gone(pids) == []


class Images(Dataset):
    """Deterministic MNIST-shaped samples with a per-sample transform (normalisation)."""

    def __init__(self, samples):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.rand(samples, 1, 28, 28, generator=generator)
        self.labels = torch.randint(0, 10, (samples,), generator=generator)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return (self.images[index] - 0.1307) / 0.3081, self.labels[index]


@pytest.mark.timeout(300)
def test_training_from_every_mode_gives_the_same_weights():
    """300 optimizer steps of the tutorial network, the data shuffled under randomSeed."""
    from models import MnistNetwork, WithLoss

    results = []
    # Persistent workers shuffle later epochs differently from loading in-process (see
    # test_workers_load_the_same_batches), so each worker count has its own Sync run.
    runs = [(popsim.DataLoaderMode.Sync, 0), (popsim.DataLoaderMode.Async, 0),
            (popsim.DataLoaderMode.Sync, 2), (popsim.DataLoaderMode.Async, 2),
            (popsim.DataLoaderMode.AsyncRebatched, 2)]
    for mode, workers in runs:
        torch.manual_seed(0)
        network = WithLoss(MnistNetwork())
        opts = options(10, seed=7)
        loader = popsim.DataLoader(opts, Images(800), batch_size=4, shuffle=True,
                                   num_workers=workers, mode=mode)
        trainer = popsim.trainingModel(network, opts,
                                       popsim.optim.AdamW(network.parameters(), lr=1e-3))
        steps = 0
        while steps < 300:
            for images, labels in loader:
                trainer(images, labels)
                steps += 10
        trainer.destroy()
        loader.terminate()
        results.append(network.model.state_dict())
    for first, others in [(0, [1]), (2, [3, 4])]:
        for other in others:
            for name, value in results[first].items():
                assert torch.equal(value, results[other][name]), (runs[other], name)
    # The comparison can fail: another sample order ends elsewhere.
    assert not torch.equal(results[0]["layer4.weight"], results[2]["layer4.weight"])


def test_a_batch_that_cannot_be_sent_is_an_error_not_a_hang():
    class Unpicklable(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            return torch.zeros(1), lambda: index  # a lambda does not pickle

    loader = popsim.DataLoader(options(2), Unpicklable(), mode=popsim.DataLoaderMode.Async,
                               collate_fn=lambda samples: (torch.cat([s[0] for s in samples]),
                                                           samples[0][1]))
    with pytest.raises(TypeError, match="A batch could not be sent from popsim's data loading "
                       "process"):
        list(loader)
    loader.terminate()


class VariableBatches:
    """A batch sampler of batch_size 4 whose batches hold 3, 2, 4, 1, 2, 3, 1
    and 4 samples, over samples 0 to 19 in order."""
    batch_size = 4

    def __iter__(self):
        sizes, start = [3, 2, 4, 1, 2, 3, 1, 4], 0
        for size in sizes:
            yield list(range(start, start + size))
            start += size

    def __len__(self):
        return 8


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_batch_sampler_batch_of_another_size_is_refused_at_that_batch(mode):
    """Several sampler batches make one combined batch, so each must hold the
    sampler's batch_size: a batch of 3 is an InputError naming it, not merged."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        loader = popsim.DataLoader(options(2), numbered(20), batch_sampler=VariableBatches(),
                                   mode=mode)
    with pytest.raises(popsim.InputError, match=r"batch 0 of the batch_sampler "
                       r"\(VariableBatches\) holds 3 samples, not its batch_size of 4\. Several "
                       r"of its batches make each combined batch"):
        list(loader)
    loader.terminate()


class PaddingBatches:
    """The issue's sampler: batches of 1, 2, 3 and 4 samples."""
    batch_size = 4

    def __iter__(self):
        return iter([[0], [1, 2], [3, 4, 5], [6, 7, 8, 9]])

    def __len__(self):
        return 4


def pad_to_four(samples):
    """A collate_fn that pads each batch to 4 rows and says how many are real."""
    features = torch.zeros(4, 1)
    features[:len(samples)] = torch.stack([feature for feature, _ in samples])
    return features, torch.tensor([len(samples)] * 4)


@pytest.mark.parametrize("mode", [popsim.DataLoaderMode.Sync, popsim.DataLoaderMode.Async])
def test_collate_fn_sees_each_batch_the_sampler_yields(mode):
    """One sampler batch per call: the batches pass as torch's DataLoader gives them,
    one collate_fn call each (the regression regrouped their samples: 3 batches, not 4)."""
    loader = popsim.DataLoader(options(), numbered(10), batch_sampler=PaddingBatches(),
                               collate_fn=pad_to_four, mode=mode)
    reference = torch.utils.data.DataLoader(numbered(10), batch_sampler=PaddingBatches(),
                                            collate_fn=pad_to_four)
    assert len(loader) == len(reference) == 4
    for (features, sizes), (expected_features, expected_sizes) in zip(loader, reference,
                                                                        strict=True):
        assert torch.equal(features, expected_features) and torch.equal(sizes, expected_sizes)
    loader.terminate()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_combined_batch_joins_the_collated_sampler_batches(mode):
    """deviceIterations 2 x gradientAccumulation 2: four sampler batches per call, each
    collated on its own (the padding collate_fn sees batches of 4 and of the short 2),
    then joined along dimension 0."""
    loader = popsim.DataLoader(options(2, accumulation=2), numbered(30),
                               batch_sampler=reversed_batches(30, 4), collate_fn=pad_to_four,
                               drop_last=False, mode=mode)
    batches = [(features.view(-1).tolist(), sizes.tolist()) for features, sizes in loader]
    assert len(loader) == len(batches) == 2
    assert batches[0][0] == [float(x) for x in range(29, 13, -1)]
    assert batches[0][1] == [4] * 16
    # The rest: batches of 4, 4, 4 and the short 2, each padded by collate_fn.
    assert batches[1][1] == [4] * 12 + [2] * 4
    assert batches[1][0][-4:] == [1.0, 0.0, 0.0, 0.0]
    loader.terminate()


def test_a_batch_sampler_batch_larger_than_its_batch_size_is_refused():
    class OneBigBatch:
        batch_size = 1

        def __iter__(self):
            return iter([[3, 2, 1, 0]])

        def __len__(self):
            return 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        loader = popsim.DataLoader(options(2), numbered(4), batch_sampler=OneBigBatch())
    with pytest.raises(popsim.InputError, match=r"batch 0 of the batch_sampler \(OneBigBatch\) "
                       r"holds 4 samples, not its batch_size of 1"):
        list(loader)


class PreBatched(Dataset):
    """Items that are whole batches already: item i is (4 x 1 features, 4 labels)."""

    def __len__(self):
        return 6

    def __getitem__(self, index):
        labels = torch.arange(4 * index, 4 * index + 4)
        return labels.float().view(4, 1), labels


@pytest.mark.parametrize("mode", [popsim.DataLoaderMode.Sync, popsim.DataLoaderMode.Async])
def test_batch_size_none_yields_the_datasets_items_as_torch_does(mode):
    """As torch's DataLoader (and PopTorch's) with batch_size=None: no automatic
    batching, each item is one call's batch; combinedBatchSize is None."""
    loader = popsim.DataLoader(options(2, seed=0), PreBatched(), batch_size=None, shuffle=True,
                               mode=mode, **({} if mode == popsim.DataLoaderMode.Sync
                                             else {"async_options": {"buffer_size": 2}}))
    reference = torch.utils.data.DataLoader(PreBatched(), batch_size=None, shuffle=True,
                                            generator=torch.Generator().manual_seed(0))
    assert loader.combinedBatchSize is None and len(loader) == 6
    assert labels_of(loader, epochs=2) == labels_of(reference, epochs=2)
    loader.terminate()


def test_batch_size_none_refuses_what_it_cannot_do():
    with pytest.raises(popsim.OptionError, match=r"batch_size=None yields the dataset's items "
                                                 r"unbatched, so there is nothing to rebatch"):
        popsim.DataLoader(options(), PreBatched(), batch_size=None,
                          mode=popsim.DataLoaderMode.AsyncRebatched)
    with pytest.raises(popsim.OptionError, match=r"batch_size=None .* takes no batch_sampler"):
        popsim.DataLoader(options(), PreBatched(), batch_size=None,
                          batch_sampler=reversed_batches(6, 2))


class Pair:
    """A batch type of one's own, passed with an ICustomArgParser."""

    def __init__(self, features, labels):
        self.features, self.labels = features, labels


class PairParser(popsim.ICustomArgParser):
    def yieldTensors(self, struct):
        yield struct.features
        yield struct.labels

    def reconstruct(self, original, tensors):
        return Pair(next(tensors), next(tensors))


class Pairs(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, index):
        return Pair(torch.tensor([float(index)]), torch.tensor(index))


def collate_pairs(items):
    return Pair(torch.stack([p.features for p in items]), torch.stack([p.labels for p in items]))


@pytest.mark.parametrize("mode", ALL_MODES)
def test_batches_of_a_registered_type_load_in_every_mode(mode):
    """A batch type with a registered ICustomArgParser arrives as itself in
    every mode, AsyncRebatched joining the workers' smaller batches too."""
    popsim.registerCustomArgParser(Pair, PairParser())
    rebatched = {"rebatched_worker_size": 1} if mode == popsim.DataLoaderMode.AsyncRebatched else {}
    loader = popsim.DataLoader(options(2), Pairs(), batch_size=2, collate_fn=collate_pairs,
                               mode=mode, **rebatched)
    batches = [(type(batch), batch.labels.clone().tolist(), batch.features.view(-1).tolist())
               for batch in loader]
    assert batches == [(Pair, list(range(i, i + 4)), [float(v) for v in range(i, i + 4)])
                       for i in range(0, 16, 4)]
    loader.terminate()


class BrokenAt(Dataset):
    """A dataset whose item `broken` (13 by default) cannot be read."""

    def __init__(self, broken=13):
        self.broken = broken

    def __len__(self):
        return 32

    def __getitem__(self, index):
        if index == self.broken:
            raise ValueError(f"sample {index} is unreadable")
        return torch.tensor([float(index)])


@pytest.mark.parametrize("workers", [0, 2])
def test_an_accessor_whose_first_batch_fails_raises_when_it_is_made(workers):
    """As PopTorch's: the accessor's process loads the first batch when the accessor is made,
    so a dataset that cannot load fails there, with a RuntimeError whose cause is the
    dataset's own error and traceback; the process is stopped."""
    source = torch.utils.data.DataLoader(BrokenAt(0), batch_size=2, num_workers=workers)
    with pytest.raises(RuntimeError, match="AsynchronousDataAccessor worker thread failed to "
                       "start: loading the first batch raised ValueError") as raised:
        popsim.AsynchronousDataAccessor(source)
    assert isinstance(raised.value, popsim.data.async_data.WorkerStartError)
    cause = raised.value.__cause__
    assert isinstance(cause, ValueError) and "sample 0 is unreadable" in str(cause)
    assert "in __getitem__" in str(cause)  # the loading process's traceback
    # popsim.DataLoader raises the dataset's own error there, as torch's does.
    loader = popsim.DataLoader(options(2), BrokenAt(0), batch_size=2, num_workers=workers,
                               mode=popsim.DataLoaderMode.Async)
    with pytest.raises(ValueError, match="sample 0 is unreadable"):
        next(iter(loader))


@pytest.mark.parametrize("early_preload", [False, True])
def test_the_first_batch_loads_when_the_accessor_is_made_and_the_rest_on_request(
        early_preload):
    accessor = popsim.AsynchronousDataAccessor(
        torch.utils.data.DataLoader(numbered(50), batch_size=5), buffer_size=3,
        early_preload=early_preload)
    assert accessor.process.is_alive()
    # The first batch was read by the constructor; without early_preload nothing follows it
    # until the first iter(), with it the loader fills the other two buffers.
    deadline = time.monotonic() + (20.0 if early_preload else 0.5)
    while accessor._ready.qsize() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert accessor._ready.qsize() == (2 if early_preload else 0)
    assert labels_of(accessor, epochs=2) == [list(range(50))] * 2
    accessor.terminate()


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_dataset_that_fails_raises_its_own_error_in_every_mode(mode, workers):
    """As torch's DataLoader: the dataset's exception reaches the loop, with
    its type and message (and the worker's traceback), in every mode; it
    never hangs the loop or ends the epoch early without an error."""
    loader = popsim.DataLoader(options(2), BrokenAt(), batch_size=2, num_workers=workers,
                               mode=mode)
    with pytest.raises(ValueError, match="sample 13 is unreadable"):
        for _ in loader:
            pass
    loader.terminate()
