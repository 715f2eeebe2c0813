"""``popsim.DataLoader``: a torch DataLoader whose batches are what a model call takes.

A popsim model consumes, per call, micro-batch x deviceIterations x
replicationFactor x gradientAccumulation samples: the combined batch. The
loader yields exactly that, so ``for x, y in loader: model(x, y)`` works for
any options. In the asynchronous modes a background process
(``AsynchronousDataAccessor``) loads the next batches while the model runs.
"""

import warnings
import weakref
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional,
                    Protocol, Sequence, Tuple, cast)

import torch
import torch.utils.data
from torch.utils import _pytree

from popsim.device import replication as _replication
from popsim.data.async_data import AsynchronousDataAccessor, WorkerStartError, batch_count
from popsim.data.process_sharing import check_socket_directory
from popsim.api.enums import DataLoaderMode
from popsim.api.errors import InputError, OptionError
from popsim.api.option_fields import positive_int
from popsim.api.options import Options

if TYPE_CHECKING:
    class _SizedDataset(Protocol):
        """A map-style dataset with a length (what _ProcessPart splits)."""

        def __len__(self) -> int: ...

        def __getitem__(self, index: int) -> Any: ...


# AsynchronousDataAccessor's arguments a DataLoader passes on (PopTorch's).
_ASYNC_OPTIONS = ("buffer_size", "miss_sleep_time_in_ms", "load_indefinitely", "early_preload",
                  "sharing_strategy")


def combined_batch_size(options: Options, batch_size: int) -> int:
    replicas = _replication.of(options).input_parts  # replicas that take data of their own
    return (batch_size * options.device_iterations * replicas
            * options.Training.gradient_accumulation)


def _factors(options: Options, batch_size: int) -> str:
    replication = _replication.of(options)
    grouped = ("" if replication.input_parts == replication.local
               else f" / input group size {replication.input_group_size()}")
    return (f"batch_size {batch_size} x deviceIterations {options.device_iterations} x "
            f"replicationFactor {replication.local}{grouped} x gradientAccumulation "
            f"{options.Training.gradient_accumulation}")


def _check_not_too_small(samples: Optional[int], combined: int, options: Options,
                         batch_size: int) -> None:
    """An epoch smaller than one combined batch would be empty with drop_last: a loop
    that silently never runs, in every mode. (`samples` is None when unknown.)"""
    if samples is not None and samples < combined:
        raise OptionError(
            f"popsim.DataLoader: an epoch has {samples} samples, fewer than one combined "
            f"batch of {combined} ({_factors(options, batch_size)}), so with drop_last=True it "
            "would yield no batches. Lower batch_size or the options' factors, or use more "
            "samples.", option="DataLoader.batch_size")


class _ProcessPart(torch.utils.data.Dataset):
    """This process's part of a map-style dataset in a multi-process job, as
    PopTorch partitions it: every process gets the same whole number of
    combined batches, `per_process` samples, from a contiguous range. With
    shuffling, the range is of a permutation of the whole dataset that every
    process draws alike from the options' random seed and the epoch, as
    torch's DistributedSampler with set_epoch does: each epoch reshuffles,
    the processes' parts never overlap, and other samples are left over
    each epoch. Items are (epoch, index) pairs from _EpochIndices, so worker
    processes, which hold copies of this dataset, need no state of the
    epoch."""

    def __init__(self, dataset: "_SizedDataset", options: Options, combined: int,
                 shuffle: bool) -> None:
        processes = options.Distributed.numProcesses
        self.samples = len(dataset)
        self.per_process = combined * (self.samples // (combined * processes))
        self.base = options.Distributed.processId * self.per_process
        self.shuffle = shuffle
        self.dataset = dataset
        # Shuffled parts need the options' random seed (_partition checks it is set).
        self.seed = cast(int, options.random_seed) if shuffle else 0
        self._order: Optional[Tuple[int, torch.Tensor]] = None  # (epoch, permutation)

    def __len__(self) -> int:
        return self.per_process

    def _permutation(self, epoch: int) -> torch.Tensor:
        if self._order is None or self._order[0] != epoch:
            generator = torch.Generator().manual_seed(self.seed + epoch)
            self._order = (epoch, torch.randperm(self.samples, generator=generator))
        return self._order[1]

    def __getitem__(self, key: Any) -> Any:
        epoch, index = key if isinstance(key, tuple) else (0, key)
        if not 0 <= index < self.per_process:
            raise IndexError(f"index {index} of a process's part of {self.per_process} samples")
        position = self.base + index
        return self.dataset[int(self._permutation(epoch)[position]) if self.shuffle else position]


class _EpochIndices(torch.utils.data.Sampler):
    """The indices of a process's part (in `order`'s order: shuffled or not)
    paired with the epoch, which advances at every pass."""

    def __init__(self, order: torch.utils.data.Sampler) -> None:
        super().__init__(None)
        self.order = order
        self.epoch = 0

    def __iter__(self) -> Iterator[Tuple[int, int]]:
        epoch = self.epoch
        self.epoch += 1
        return ((epoch, index) for index in self.order)

    def __len__(self) -> int:
        return len(self.order)  # type: ignore[arg-type]


def _partition(dataset: torch.utils.data.Dataset, options: Options, combined: int, shuffle: bool,
               auto_partitioning: bool, sampler: Optional[Iterable[Any]],
               batch_sampler: Optional[Iterable[Sequence[Any]]]) -> torch.utils.data.Dataset:
    """`dataset`, or this process's part of it (see _ProcessPart)."""
    processes = options.Distributed.numProcesses
    if processes == 1 or not auto_partitioning:
        return dataset
    where = (f"process {options.Distributed.processId} of {processes} "
             "(Options.Distributed)")
    if isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__len__"):
        raise OptionError(f"popsim.DataLoader: auto_distributed_partitioning cannot split an "
                          f"iterable dataset for {where}: give each process its own data and "
                          "pass auto_distributed_partitioning=False.",
                          option="DataLoader.auto_distributed_partitioning")
    if sampler is not None or batch_sampler is not None:
        raise OptionError(f"popsim.DataLoader: with a sampler, auto_distributed_partitioning "
                          f"cannot tell which samples are {where}'s: partition in the sampler "
                          "and pass auto_distributed_partitioning=False.",
                          option="DataLoader.auto_distributed_partitioning")
    if shuffle and options.random_seed is None:
        raise OptionError(
            "popsim.DataLoader: when using auto_distributed_partitioning you must set "
            "Options.randomSeed(), the same in every process: each process shuffles the whole "
            f"dataset in the same order and takes its own part ({where}).", option="randomSeed")
    part = _ProcessPart(dataset, options, combined, shuffle)
    if part.per_process == 0:
        raise OptionError(
            f"popsim.DataLoader: {len(dataset)} samples make no combined batch of {combined} "
            f"for each of {processes} processes ({where}). Use more samples or smaller "
            "batches.", option="DataLoader.batch_size")
    return part


def _epoch_samples(dataset: Any, sampler: Any, batch_sampler: Any) -> Optional[int]:
    """Samples one epoch draws, or None when nothing says (iterable datasets)."""
    try:
        if batch_sampler is not None:
            # Every batch is taken as full but the last of a sampler that keeps a
            # short one (so len() is an estimate for a sampler whose batches vary:
            # iterating it to count them would draw its randomness).
            inner = getattr(batch_sampler, "sampler", None)
            if inner is None or getattr(batch_sampler, "drop_last", False):
                return len(batch_sampler) * batch_sampler.batch_size
            return len(inner)
        return len(sampler) if sampler is not None else len(dataset)
    except TypeError:
        return None


def _micro_batch_of(batch_sampler: Iterable[Sequence[Any]], batch_size: int, shuffle: bool,
                    sampler: Optional[Iterable[Any]]) -> int:
    """The micro-batch a batch_sampler yields: its batch_size attribute. The arguments
    torch refuses beside a batch_sampler are refused here too, with popsim's reasons."""
    micro = getattr(batch_sampler, "batch_size", None)
    if not isinstance(micro, int) or micro < 1:
        raise OptionError(
            f"popsim.DataLoader: the batch_sampler ({type(batch_sampler).__name__}) has no "
            "batch_size attribute. popsim compiles models for one batch size, so it needs to "
            "know the size of the batches the sampler yields: give the sampler a batch_size "
            "attribute (torch.utils.data.BatchSampler has one).", option="DataLoader.batch_sampler")
    if batch_size not in (1, micro):
        raise OptionError(
            f"popsim.DataLoader: batch_size ({batch_size}) and a batch_sampler of batch_size "
            f"{micro} are given; the batch_sampler decides the batch. Leave batch_size out.",
            option="DataLoader.batch_size")
    if shuffle or sampler is not None:
        raise OptionError(
            "popsim.DataLoader: a batch_sampler decides the order of the samples, so it "
            "excludes shuffle=True and sampler; shuffle or sample inside the batch_sampler.",
            option="DataLoader.batch_sampler")
    return micro


def _checked_batches(batch_sampler: Any, micro: int) -> Iterator[List[Any]]:
    """The sampler's batches, each of `micro` samples but the last, which may be short
    (torch's BatchSampler without drop_last); any other batch is an InputError naming it.
    popsim joins several of them into a combined batch, which only batches of the
    micro-batch can make (PopTorch's rule)."""
    iterator = iter(batch_sampler)
    upcoming = next(iterator, None)
    number = 0
    while upcoming is not None:
        batch, upcoming = list(upcoming), next(iterator, None)
        last = upcoming is None
        if len(batch) != micro and not (last and len(batch) < micro):
            raise InputError(
                f"popsim.DataLoader: batch {number} of the batch_sampler "
                f"({type(batch_sampler).__name__}) holds {len(batch)} samples, not its "
                f"batch_size of {micro}. Several of its batches make each combined batch, so "
                f"each must hold {micro} samples (only the last of an epoch may hold fewer). "
                "Make the sampler yield batches of batch_size, or use deviceIterations, "
                "replicationFactor and gradientAccumulation of 1 to take its batches one by "
                "one.")
        yield batch
        number += 1


class _CombiningBatchSampler(torch.utils.data.Sampler):
    """Groups `count` batches of a user's batch_sampler into the combined batch of a
    model call, in the order it yields them: the indices of the group, flat (torch's
    fetcher takes one list), which _PerSamplerBatchCollate cuts back into the sampler's
    batches so that collate_fn sees each batch the sampler yielded, as in torch. With one
    batch per call, the batches pass as they are (of any size, as in torch); with more,
    each must hold the micro-batch (_checked_batches). With drop_last, a short group at
    the end of an epoch is dropped; without, the model refuses it with a clear error."""

    def __init__(self, batch_sampler: Any, count: int, micro: int, drop_last: bool,
                 samples: Optional[int]) -> None:
        super().__init__(None)
        self.batch_sampler = batch_sampler
        self.count = count
        self.micro = micro
        self.drop_last = drop_last
        self.samples = samples  # in an epoch (None: unknown)

    def __iter__(self) -> Iterator[List[Any]]:
        if self.count == 1:
            yield from (list(batch) for batch in self.batch_sampler)
            return
        group: List[Any] = []
        joined = 0
        for batch in _checked_batches(self.batch_sampler, self.micro):
            group.extend(batch)
            joined += 1
            if joined == self.count:
                yield group
                group, joined = [], 0
        if group and not self.drop_last:
            yield group

    def __len__(self) -> int:
        if self.count == 1:
            return len(self.batch_sampler)
        if self.samples is None:
            return batch_count(len(self.batch_sampler), self.count, self.drop_last)
        # Full groups only with drop_last: a short last batch leaves its group short.
        return batch_count(self.samples, self.count * self.micro, self.drop_last)


class _CheckedBatchSampler(torch.utils.data.Sampler):
    """A user's batch_sampler whose batches _checked_batches checks: what the rebatching
    workers of AsyncRebatched load, one sampler batch (one collate_fn call) each."""

    def __init__(self, batch_sampler: Any, micro: int) -> None:
        super().__init__(None)
        self.batch_sampler = batch_sampler
        self.micro = micro

    def __iter__(self) -> Iterator[List[Any]]:
        return _checked_batches(self.batch_sampler, self.micro)

    def __len__(self) -> int:
        return len(self.batch_sampler)


class _PerSamplerBatchCollate:
    """collate_fn applied to each sampler batch of a group (`micro` samples each, the
    last possibly fewer), the collated batches then joined along dimension 0, as PopTorch
    joins the batches of a combined batch. A picklable object, for worker processes."""

    def __init__(self, collate_fn: Callable[[List[Any]], Any], micro: int) -> None:
        self.collate_fn = collate_fn
        self.micro = micro

    def __call__(self, samples: List[Any]) -> Any:
        if len(samples) <= self.micro:
            return self.collate_fn(samples)
        batches = [self.collate_fn(samples[start:start + self.micro])
                   for start in range(0, len(samples), self.micro)]
        return _join(batches)


def _join(batches: List[Any]) -> Any:
    """Collated batches of one structure, joined: tensors concatenated along dimension 0,
    lists of other values concatenated."""
    leaves = [_pytree.tree_flatten(batch) for batch in batches]
    spec = leaves[0][1]
    for index, (_, other) in enumerate(leaves[1:], start=1):
        if other != spec:
            raise InputError(f"popsim.DataLoader: collate_fn gave batch {index} of a combined "
                             "batch another structure than batch 0; the batches of a combined "
                             "batch are joined, so they must have one structure.")
    joined: List[Any] = []
    for position in range(len(leaves[0][0])):
        items = [flat[position] for flat, _ in leaves]
        if all(isinstance(item, torch.Tensor) for item in items):
            try:
                joined.append(torch.cat(items))
            except RuntimeError as error:
                raise InputError(
                    "popsim.DataLoader: the batches collate_fn gave for one combined batch "
                    f"cannot be joined along dimension 0 ({error}). With several batches per "
                    "call they must agree in every other dimension (pad them to one length).") \
                    from error
        else:
            joined.append(items)
    return _pytree.tree_unflatten(joined, spec)


class DataLoader(torch.utils.data.DataLoader):
    """A ``torch.utils.data.DataLoader`` that yields combined batches.

    Each batch holds ``batch_size`` x deviceIterations x replicationFactor x
    gradientAccumulation samples (``combinedBatchSize``), what one call of a
    model compiled with ``options`` takes; ``len()`` counts these batches.
    With ``drop_last=True`` (the default), a dataset smaller than one combined
    batch is an OptionError rather than epochs without batches.

    With ``shuffle=True`` and ``options.randomSeed(s)``, the order is the one
    a torch DataLoader with ``generator=torch.Generator().manual_seed(s)``
    gives. A ``sampler`` orders the samples as in torch. A ``batch_sampler``
    yields micro-batches (its ``batch_size`` attribute is the micro-batch), each
    collated by ``collate_fn`` on its own as in torch: each combined batch joins
    deviceIterations x replicationFactor x gradientAccumulation collated batches
    along dimension 0, in order. With several per call each must hold
    ``batch_size`` samples (the last of an epoch may hold fewer): iterating raises
    an :class:`popsim.InputError` at a batch of another size, never merging it.
    With one per call, the batches pass as torch gives them.

    ``mode`` picks synchronous or background loading (see
    :class:`popsim.DataLoaderMode`). In the asynchronous modes a background process
    (:class:`popsim.AsynchronousDataAccessor`) loads the next batches while the model runs;
    each batch lives in a shared buffer that is refilled once the next batch is requested:
    clone tensors you keep. Scripts using them need the ``__main__`` guard, like any
    multiprocessing code.

    In a job of several processes (``options.Distributed``, read from
    torchrun's or mpirun's environment), ``auto_distributed_partitioning``
    (the default) gives each process its own part of a map-style dataset,
    as PopTorch does: the same whole number of combined batches for every
    process, from a contiguous range of the dataset, or with ``shuffle`` of a
    permutation of the whole dataset drawn each epoch from
    ``options.randomSeed`` (which must then be set, the same everywhere) and
    the epoch, as torch's DistributedSampler with set_epoch does. Iterable datasets and
    samplers are the caller's to partition (``auto_distributed_partitioning=False``).

    Example:
        >>> opts = popsim.Options().deviceIterations(2)
        >>> dataset = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.arange(64))
        >>> loader = popsim.DataLoader(opts, dataset, batch_size=4)
        >>> loader.combinedBatchSize, len(loader)
        (8, 8)
        >>> [tensor.shape for tensor in next(iter(loader))]
        [torch.Size([8, 4]), torch.Size([8])]
    """

    def __init__(self, options: Options, dataset: torch.utils.data.Dataset,
                 batch_size: Optional[int] = 1,
                 shuffle: bool = False, num_workers: int = 0, drop_last: bool = True,
                 persistent_workers: Optional[bool] = None,
                 auto_distributed_partitioning: bool = True,
                 mode: DataLoaderMode = DataLoaderMode.Sync,
                 async_options: Optional[Dict[str, Any]] = None,
                 rebatched_worker_size: Optional[int] = None, **kwargs: Any) -> None:
        """Builds the loader for models compiled with ``options``.

        Args:
            options: The options of the model the batches are for; they set the combined
                batch, the random seed and the processes of the job. They are frozen
                (:meth:`popsim.Options.clone` gives a copy to change).
            dataset: The dataset to load from, as torch's DataLoader takes it.
            batch_size: The micro-batch: samples per device iteration and replica, a positive
                integer. None turns automatic batching off, as in torch: each item of the
                dataset is one call's inputs as it is (``combinedBatchSize`` is then None).
            shuffle: Whether to reshuffle the samples every epoch (in the order the class
                description gives).
            num_workers: Worker processes of torch's DataLoader, 0 to load in this process.
            drop_last: Whether to drop the short combined batch at the end of an epoch. Without
                it, that batch is yielded, and a model compiled for full batches refuses it
                (popsim warns when the epoch does not divide into full batches). Unused with
                ``batch_size=None``.
            persistent_workers: As in torch; None means True when there are workers.
            auto_distributed_partitioning: Whether, in a job of several processes, each
                process loads its own part of a map-style dataset (as the class description
                says).
            mode: ``DataLoaderMode.Sync`` to load in this process (with torch's workers, if
                any), ``Async`` to load whole combined batches in a background process, or
                ``AsyncRebatched`` to load smaller batches there and join them into combined
                batches.
            async_options: Arguments of the background
                :class:`popsim.AsynchronousDataAccessor`: ``buffer_size``,
                ``load_indefinitely`` and ``early_preload``. Only for the asynchronous modes.
            rebatched_worker_size: With ``DataLoaderMode.AsyncRebatched``, the batch the
                workers load (default: ``batch_size``), at most the combined batch. Not with a
                ``batch_sampler``, whose batches the workers load.
            **kwargs: Other arguments of torch's DataLoader (``sampler``, ``batch_sampler``,
                ``collate_fn``, ``generator``, ...).

        Raises:
            OptionError: when ``options`` is not a :class:`popsim.Options` or ``mode`` not a
                :class:`popsim.DataLoaderMode`, when ``batch_size`` is not a positive integer
                or None, when arguments do not go together (``async_options`` with
                ``Sync`` or with unknown names, ``rebatched_worker_size`` without
                ``AsyncRebatched`` or larger than the combined batch, a ``batch_sampler``
                without a ``batch_size`` attribute or with ``shuffle``, a ``sampler`` or
                another ``batch_size``, ``batch_size=None`` with a ``batch_sampler`` or
                rebatching), when with ``drop_last`` an epoch is smaller than one combined
                batch, or when ``auto_distributed_partitioning`` cannot split the dataset
                (an iterable dataset, a sampler, shuffling without ``options.randomSeed``, or
                too few samples for every process).
        """
        if not isinstance(options, Options):
            raise OptionError(
                f"popsim.DataLoader takes popsim.Options first, got {type(options).__name__}.",
                option="DataLoader.options")
        if not isinstance(mode, DataLoaderMode):
            raise OptionError(f"popsim.DataLoader: mode must be a popsim.DataLoaderMode, "
                              f"got {mode!r}.", option="DataLoader.mode")
        if num_workers > 0 or mode != DataLoaderMode.Sync:  # batches cross processes
            check_socket_directory()
        if batch_size is None:
            # torch's DataLoader without automatic batching: each item of the
            # dataset is a whole batch already (PopTorch's combinedBatchSize
            # is then None).
            self._init_unbatched(options, dataset, shuffle, num_workers, drop_last,
                                 persistent_workers, auto_distributed_partitioning, mode,
                                 async_options, rebatched_worker_size, kwargs)
            return
        batch_size = positive_int("batch_size", batch_size, "popsim.DataLoader")
        options._freeze()
        sampler = kwargs.get("sampler")
        batch_sampler = kwargs.pop("batch_sampler", None)
        if batch_sampler is not None:
            batch_size = _micro_batch_of(batch_sampler, batch_size, shuffle, sampler)
        combined = combined_batch_size(options, batch_size)
        dataset = _partition(dataset, options, combined, shuffle, auto_distributed_partitioning,
                             sampler, batch_sampler)
        async_options = dict(async_options or {})
        unknown = sorted(set(async_options) - set(_ASYNC_OPTIONS))
        if unknown:
            raise OptionError(f"popsim.DataLoader: unknown async_options {unknown}; "
                              f"known: {list(_ASYNC_OPTIONS)}.", option="DataLoader.async_options")
        if async_options and mode == DataLoaderMode.Sync:
            raise OptionError("popsim.DataLoader: async_options need mode=DataLoaderMode.Async "
                              "or DataLoaderMode.AsyncRebatched.",
                              option="DataLoader.async_options")
        worker_batch = combined
        if mode == DataLoaderMode.AsyncRebatched and batch_sampler is not None:
            if rebatched_worker_size is not None:
                raise OptionError("popsim.DataLoader: with a batch_sampler, the workers load "
                                  "the sampler's batches; leave rebatched_worker_size out.",
                                  option="DataLoader.rebatched_worker_size")
            worker_batch = batch_size
        elif mode == DataLoaderMode.AsyncRebatched:
            worker_batch = positive_int("rebatched_worker_size",
                                        batch_size if rebatched_worker_size is None
                                        else rebatched_worker_size, "popsim.DataLoader")
            if worker_batch > combined:
                raise OptionError(
                    f"popsim.DataLoader: rebatched_worker_size ({worker_batch}) is larger than "
                    f"the combined batch ({combined} = {_factors(options, batch_size)}).",
                    option="DataLoader.rebatched_worker_size")
        elif rebatched_worker_size is not None:
            raise OptionError("popsim.DataLoader: rebatched_worker_size needs "
                              "mode=DataLoaderMode.AsyncRebatched.",
                              option="DataLoader.rebatched_worker_size")
        samples = _epoch_samples(dataset, sampler, batch_sampler)
        # Another batch sampler than torch's may yield batches of any size:
        # its count of samples is an estimate, too rough to refuse it on.
        exact = batch_sampler is None or type(batch_sampler) is torch.utils.data.BatchSampler
        if drop_last and exact:
            _check_not_too_small(samples, combined, options, batch_size)
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        if (shuffle and kwargs.get("generator") is None and options.random_seed is not None
                and sampler is None):
            kwargs["generator"] = torch.Generator().manual_seed(options.random_seed)
        if batch_sampler is not None:
            # torch takes a batch_sampler instead of batch_size, shuffle and drop_last; its
            # collate_fn sees each batch the sampler yields, as in torch.
            if mode == DataLoaderMode.AsyncRebatched:
                # The workers load the sampler's batches; the accessor joins them.
                kwargs["batch_sampler"] = _CheckedBatchSampler(batch_sampler, batch_size)
            else:
                kwargs["batch_sampler"] = _CombiningBatchSampler(
                    batch_sampler, combined // batch_size, batch_size, drop_last, samples)
                if combined > batch_size:  # groups of several batches, collated one by one
                    kwargs["collate_fn"] = _PerSamplerBatchCollate(
                        kwargs.get("collate_fn") or torch.utils.data.default_collate, batch_size)

        self._options = options
        self._combined: Optional[int] = combined
        self._mode = mode
        self._drop_last_combined = drop_last
        self._samples = samples
        self._accessor: Optional[AsynchronousDataAccessor] = None
        self._async_options = async_options
        if batch_sampler is None:
            # Rebatching workers keep their last short batch: the accessor adds it to the rest.
            kwargs.update(batch_size=worker_batch, shuffle=shuffle,
                          drop_last=drop_last if mode != DataLoaderMode.AsyncRebatched else False)
        if isinstance(dataset, _ProcessPart):
            # The part's indices carry the epoch (see _ProcessPart); within the part
            # they come in order, the permutation having shuffled the whole dataset.
            kwargs.pop("generator", None)
            kwargs.update(shuffle=False, sampler=_EpochIndices(
                torch.utils.data.SequentialSampler(range(len(dataset)))))
        super().__init__(dataset, num_workers=num_workers, persistent_workers=persistent_workers,
                         **kwargs)
        self._warn_about_leftovers(batch_size)

    def _warn_about_leftovers(self, batch_size: int) -> None:
        samples = self._samples
        if samples is None or self._combined is None:
            return
        leftover = samples % self._combined
        if leftover == 0:
            return
        what = (f"An epoch has {samples} samples, not a multiple of the combined batch "
                f"{self._combined} ({_factors(self._options, batch_size)})")
        if self._drop_last_combined:
            warnings.warn(f"{what}: the last {leftover} samples of each epoch are dropped "
                          "(drop_last=True).", stacklevel=3)
        else:
            warnings.warn(f"{what}: with drop_last=False the last batch has {leftover} "
                          f"samples, which a model compiled for {self._combined} refuses.",
                          stacklevel=3)

    def _init_unbatched(self, options: Options, dataset: torch.utils.data.Dataset,
                        shuffle: bool, num_workers: int, drop_last: bool,
                        persistent_workers: Optional[bool], auto_partitioning: bool,
                        mode: DataLoaderMode, async_options: Optional[Dict[str, Any]],
                        rebatched_worker_size: Optional[int], kwargs: Dict[str, Any]) -> None:
        """batch_size=None: the dataset's items are yielded as they are, each one
        call's inputs (in a job of several processes, each process reads its
        contiguous part of the items, or of their permutation with shuffle)."""
        options._freeze()
        if kwargs.get("batch_sampler") is not None:
            raise OptionError("popsim.DataLoader: batch_size=None yields the dataset's items "
                              "unbatched, so it takes no batch_sampler; leave batch_size at "
                              "its default to use one.", option="DataLoader.batch_size")
        if mode == DataLoaderMode.AsyncRebatched or rebatched_worker_size is not None:
            raise OptionError("popsim.DataLoader: batch_size=None yields the dataset's items "
                              "unbatched, so there is nothing to rebatch: use "
                              "DataLoaderMode.Sync or DataLoaderMode.Async.",
                              option="DataLoader.batch_size")
        async_options = dict(async_options or {})
        unknown = sorted(set(async_options) - set(_ASYNC_OPTIONS))
        if unknown or (async_options and mode == DataLoaderMode.Sync):
            raise OptionError(f"popsim.DataLoader: async_options {sorted(async_options)} need "
                              f"mode=DataLoaderMode.Async and take only {list(_ASYNC_OPTIONS)}.",
                              option="DataLoader.async_options")
        dataset = _partition(dataset, options, 1, shuffle, auto_partitioning,
                             kwargs.get("sampler"), None)
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        if (shuffle and kwargs.get("generator") is None and options.random_seed is not None
                and kwargs.get("sampler") is None):
            kwargs["generator"] = torch.Generator().manual_seed(options.random_seed)
        if isinstance(dataset, _ProcessPart):
            kwargs.pop("generator", None)
            shuffle = False
            kwargs["sampler"] = _EpochIndices(
                torch.utils.data.SequentialSampler(range(len(dataset))))
        self._options = options
        self._combined = None
        self._mode = mode
        self._drop_last_combined = False  # (torch refuses drop_last without batching)
        self._samples = None
        self._accessor = None
        self._async_options = async_options
        del drop_last  # a batch is an item: there is no short last batch to drop
        super().__init__(dataset, batch_size=None, shuffle=shuffle, num_workers=num_workers,
                         persistent_workers=persistent_workers, **kwargs)

    @property
    def combinedBatchSize(self) -> Optional[int]:
        """Samples per batch: what one call of the model takes (None with
        batch_size=None, whose batches are the dataset's items)."""
        return self._combined

    @property
    def options(self) -> Options:
        """The (frozen) options the loader was built with."""
        return self._options

    def __len__(self) -> int:
        if self._mode != DataLoaderMode.AsyncRebatched:
            return super().__len__()
        if self._samples is None or self._combined is None:
            raise TypeError("popsim.DataLoader: this dataset has no length, so neither does "
                            "the loader.")
        return batch_count(self._samples, self._combined, self._drop_last_combined)

    # The asynchronous modes return the accessor's iterator, not torch's _BaseDataLoaderIter.
    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        if self._mode == DataLoaderMode.Sync:
            return self._sync_iter()
        if self._accessor is None:
            rebatch = self._combined if self._mode == DataLoaderMode.AsyncRebatched else None
            # A weak reference: the loader owns the accessor, and `del loader` must stop
            # the loading process at once, not when the garbage collector finds a cycle.
            try:
                self._accessor = AsynchronousDataAccessor(
                    weakref.proxy(self), rebatched_size=rebatch,
                    drop_last=self._drop_last_combined, **self._async_options)
            except WorkerStartError as error:
                # As torch's DataLoader: the dataset's own error, with its traceback.
                assert error.__cause__ is not None, "a start error without its cause"
                raise error.__cause__ from None
        return iter(self._accessor)

    def _sync_iter(self) -> Iterator[Any]:
        """The batches as loaded in this process (the background process runs this)."""
        return super().__iter__()

    def terminate(self) -> None:
        """Stops the background loading process, if any. It also stops when the loader
        is garbage collected (the accessor's finalizer) and at interpreter exit."""
        if self._accessor is not None:
            self._accessor.terminate()
            self._accessor = None
