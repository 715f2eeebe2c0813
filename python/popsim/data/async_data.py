"""``popsim.AsynchronousDataAccessor``: batches loaded by a background process.

The process iterates the wrapped loader and writes each batch into one of
``buffer_size`` shared-memory slots; the iterating process gets views of the
slots, so a batch costs no copy and no pickling on its way. Protocol (three
queues):

- ``ready`` (loader -> user): ``("slots", tensors)`` once, then
  ``("batch", tag, slot, spec, shapes, others)``, ``("inline", tag, batch)``
  for a batch that does not fit the slots, ``("end", tag)`` and
  ``("error", tag, type, traceback)``.
- ``free`` (user -> loader): slots the user is done with. A batch stays valid
  until the next one is requested.
- ``commands`` (user -> loader): ``("start", request)`` begins a fresh epoch,
  ``("go",)`` lets the loader go on past the first batch, ``("stop",)`` ends
  the process.

The process starts with the accessor, as PopTorch's does, and loads the
first batch at once, so that a dataset that cannot load fails there; without
``early_preload`` it then waits for the first ``iter()`` (the ``go``).

Every epoch is tagged ``(request, epoch)``: the loader starts request 0 on
its own and, with ``load_indefinitely``, moves on to the next epoch of the
same request as soon as one ends, so the next epoch is loading while the
model finishes this one. When the user abandons an epoch (``break``, an
exception), the next ``iter()`` asks for a new request, and batches still
queued under old tags are dropped, so no stale batch is ever handed out.

The process ignores SIGINT (Ctrl-C stops the user's loop, whose clean-up
stops the loader), stops when its parent dies, and is stopped by
``terminate()``, by garbage collection and at interpreter exit; SIGTERM stops
it as cleanly as a request does.
"""

import collections
import math
import os
import pickle
import queue
import signal
import traceback
import weakref
from typing import (TYPE_CHECKING, Any, Deque, Iterable, Iterator, List, Optional, Tuple,
                    cast)

import torch
import torch.multiprocessing as multiprocessing
from multiprocessing.process import BaseProcess
from multiprocessing.reduction import ForkingPickler
from torch.utils._pytree import tree_flatten, tree_unflatten

from popsim.api.enums import SharingStrategy
from popsim.api.errors import OptionError
from popsim.api.option_fields import positive_int
from popsim.data.process_sharing import check_socket_directory

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

    from torch.utils._pytree import TreeSpec

_POLL_SECONDS = 0.05


def batch_count(samples: int, batch_size: int, drop_last: bool) -> int:
    """Batches of `batch_size` in `samples`, a short last one only without drop_last."""
    full, leftover = divmod(samples, batch_size)
    return full + (1 if leftover and not drop_last else 0)


class _Stop(BaseException):
    """The user asked the loading process to stop or to start afresh. A BaseException, as
    KeyboardInterrupt is: SIGTERM raises it wherever the process is, and handlers of
    Exception there (the loader's own error reporting, torch's iterator) must not take it
    for the dataset's error."""

    def __init__(self, command: Tuple[Any, ...]) -> None:
        super().__init__(command)
        self.command = command


class _Loader:
    """The background process's side: fills slots with batches."""

    def __init__(self, source: Iterable[Any], buffer_size: int, load_indefinitely: bool,
                 rebatched_size: Optional[int], drop_last: bool, hold_after_first: bool,
                 commands: "Queue[Tuple[Any, ...]]", free: "Queue[int]",
                 ready: "Queue[Tuple[Any, ...]]", parent: int) -> None:
        self.source = source
        # Without early_preload: after the first batch, wait for the user's first iter().
        self.holding = hold_after_first
        self.buffer_size = buffer_size
        self.load_indefinitely = load_indefinitely
        self.rebatched_size = rebatched_size
        self.drop_last = drop_last
        self.commands, self.free, self.ready = commands, free, ready
        self.parent = parent
        # Per slot: one tensor per tensor leaf of a batch (empty until allocated).
        self.slots: List[List[torch.Tensor]] = []
        # Rebatching: (slot, samples filled, spec).
        self.partial: Optional[Tuple[int, int, "TreeSpec"]] = None
        self.sent = 0  # batches sent to the user, over all epochs

    def run(self) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, _stop_on_terminate)
        torch.set_num_threads(1)
        tag = (0, 0)
        while True:
            try:
                produced = self.load_epoch(tag)
                if self.load_indefinitely and produced:
                    tag = (tag[0], tag[1] + 1)
                    continue
                command = self.wait_for_command()
            except _Stop as stop:
                command = stop.command
            if command[0] == "stop":
                _stop_workers(self.persistent_iterator())
                return
            tag = (command[1], 0)

    def persistent_iterator(self) -> Optional[Iterator[Any]]:
        """torch's iterator the source keeps from epoch to epoch (persistent_workers, the
        default of popsim's DataLoader with workers), whose workers outlive an epoch."""
        return getattr(self.source, "_iterator", None)

    # Commands and the parent's liveness, checked whenever the loader waits.
    def poll(self) -> None:
        if os.getppid() != self.parent or _terminate_requested:
            raise _Stop(("stop",))
        try:
            command = self.commands.get_nowait()
        except queue.Empty:
            return
        if command[0] != "go":  # a late go: the loader is past its first batch already
            raise _Stop(command)

    def wait_for_command(self) -> Tuple[Any, ...]:
        while True:
            if os.getppid() != self.parent or _terminate_requested:
                return ("stop",)
            try:
                command = self.commands.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                continue
            if command[0] != "go" or self.holding:
                return command

    def hold(self) -> None:
        """Waits for the user's first iter() ("go"); any other command ends the wait too,
        and is carried out."""
        command = self.wait_for_command()
        self.holding = False
        if command[0] != "go":
            raise _Stop(command)

    def acquire(self) -> int:
        while True:
            self.poll()
            try:
                return self.free.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                pass

    def load_epoch(self, tag: Tuple[int, int]) -> bool:
        """Sends one epoch's batches; returns whether there were any. Rebatching counts
        only the batches it sends: a source with fewer samples than one batch sends none,
        and loading it again would only repeat empty epochs."""
        iterator = None
        finished = False
        sent_before = self.sent
        if self.partial is not None:  # samples of an earlier epoch are not carried over
            self.partial = (self.partial[0], 0, self.partial[2])
        try:
            make_iterator = getattr(self.source, "_sync_iter", None)
            iterator = make_iterator() if make_iterator is not None else iter(self.source)
            for batch in iterator:
                self.poll()
                if self.rebatched_size is None:
                    self.send(tag, batch)
                else:
                    self.add_to_rebatch(tag, batch)
                if self.holding and self.sent > 0:
                    self.hold()
            finished = True  # torch's iterator has shut its workers down
            if self.partial is not None and self.partial[1] > 0 and not self.drop_last:
                self.ship_partial(tag)
            self.ready.put(("end", tag))
        except Exception as error:  # reported to the user, with its traceback
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
            error_type: Optional[type] = type(error)
            try:
                pickle.dumps(error_type)
            except Exception:  # a local class: the user gets a RuntimeError
                error_type = None
            self.ready.put(("error", tag, error_type, text))
            return False
        finally:
            if not finished and iterator is not self.persistent_iterator():
                _stop_workers(iterator)  # an exhausted one has stopped them already
            del iterator
            self.holding = False  # only ever after the first batch, which an epoch may lack
        return self.sent > sent_before

    def allocate(self, leaves: List[torch.Tensor], rows: Optional[int] = None) -> None:
        if not self.slots:
            for _ in range(self.buffer_size):
                tensors = []
                for leaf in leaves:
                    shape = leaf.shape if rows is None else (rows,) + tuple(leaf.shape[1:])
                    tensors.append(torch.empty(shape, dtype=leaf.dtype).share_memory_())
                self.slots.append(tensors)
            self.ready.put(("slots", self.slots))
            for index in range(self.buffer_size):
                self.free.put(index)

    def fits(self, leaves: List[torch.Tensor]) -> bool:
        first = self.slots[0]
        return len(leaves) == len(first) and all(
            leaf.dtype == slot.dtype and leaf.numel() <= slot.numel()
            for leaf, slot in zip(leaves, first))

    def send(self, tag: Tuple[int, int], batch: Any) -> None:
        leaves, spec = tree_flatten(batch)
        tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
        others = [(i, leaf) for i, leaf in enumerate(leaves) if not isinstance(leaf, torch.Tensor)]
        self.allocate(tensors)
        if not self.fits(tensors):
            self.put_checked(("inline", tag, batch))
        else:
            slot = self.acquire()
            for target, tensor in zip(self.slots[slot], tensors):
                target.view(-1)[: tensor.numel()].copy_(tensor.reshape(-1))
            shapes = [tuple(tensor.shape) for tensor in tensors]
            self.put_checked(("batch", tag, slot, spec, shapes, others))
        self.sent += 1

    def put_checked(self, message: Tuple[Any, ...]) -> None:
        """Queues a message that holds the user's objects. Queues pickle in a background
        thread, where a failure would lose the message and leave the user waiting, so
        pickle here first."""
        try:
            ForkingPickler.dumps(message)
        except Exception as error:
            raise TypeError(f"A batch could not be sent from popsim's data loading process: "
                            f"{error}. Batches may hold tensors and picklable objects.") from error
        self.ready.put(message)

    def add_to_rebatch(self, tag: Tuple[int, int], batch: Any) -> None:
        leaves, spec = tree_flatten(batch)
        if not all(isinstance(leaf, torch.Tensor) and leaf.dim() > 0 for leaf in leaves):
            raise TypeError("DataLoaderMode.AsyncRebatched rebuilds batches along dimension 0, "
                            "so every element of a batch must be a tensor with a batch "
                            f"dimension; got {[type(leaf).__name__ for leaf in leaves]}.")
        rows = leaves[0].shape[0]
        if any(leaf.shape[0] != rows for leaf in leaves):
            raise ValueError("DataLoaderMode.AsyncRebatched: the tensors of a batch have "
                             f"different sizes in dimension 0: {[l.shape[0] for l in leaves]}.")
        self.allocate(leaves, rows=self.rebatched_size)
        start = 0
        while start < rows:
            if self.partial is None:
                self.partial = (self.acquire(), 0, spec)
            slot, filled, _ = self.partial
            # Rebatching loaders have a rebatched_size (load_epoch calls this only then).
            count = min(rows - start, cast(int, self.rebatched_size) - filled)
            for target, leaf in zip(self.slots[slot], leaves):
                target[filled:filled + count].copy_(leaf[start:start + count])
            self.partial = (slot, filled + count, spec)
            start += count
            if filled + count == self.rebatched_size:
                self.ship_partial(tag)

    def ship_partial(self, tag: Tuple[int, int]) -> None:
        assert self.partial is not None, "no partial batch to ship"
        slot, filled, spec = self.partial
        shapes = [(filled,) + tuple(target.shape[1:]) for target in self.slots[slot]]
        self.ready.put(("batch", tag, slot, spec, shapes, []))
        self.partial = None
        self.sent += 1


def _stop_workers(iterator: Optional[Iterator[Any]]) -> None:
    """Stops the worker processes of torch's multi-process iterator, if it is one, as it
    does itself at the end of an epoch. An iterator left mid-epoch still holds its workers
    (it is referenced until this process ends, in the loop's frame or the source), and this
    process's exit would terminate them: each would leave its temporary directory, through
    which it passes shared tensors (/tmp/pymp-*), behind."""
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


# Set by the first SIGTERM. The exception the signal raises can still be lost (raised in a
# __del__ or a weakref callback, which Python reports and ignores), so every wait of the
# loader checks this too.
_terminate_requested = False


def _stop_on_terminate(signum: int, frame: Any) -> None:
    """SIGTERM (terminate(), or a loader too slow to stop when asked) stops the loading
    process as a "stop" command does: the epoch in progress stops torch's workers on its way
    out, so that they remove their temporary directories, which a process killed by the
    signal would leave behind. Later SIGTERMs are ignored while it stops (SIGKILL remains)."""
    global _terminate_requested
    if _terminate_requested:
        return
    _terminate_requested = True
    raise _Stop(("stop",))


def _load(*args: Any) -> None:
    _Loader(*args).run()


def _shutdown(owner: int, process: "BaseProcess", commands: "Queue[Any]", free: "Queue[Any]",
              ready: "Queue[Any]") -> None:
    """Stops the loading process: politely, then firmly."""
    if os.getpid() != owner:  # a copy inherited by the loading process itself
        return
    if process.is_alive():
        try:
            commands.put(("stop",))
        except (OSError, ValueError):
            pass
        process.join(timeout=2)
        if process.is_alive():
            process.terminate()
            process.join(timeout=2)
        if process.is_alive():
            process.kill()
            process.join()
    for channel in (commands, free, ready):
        channel.cancel_join_thread()
        channel.close()


class _Message(str):
    """Text that KeyError shows as it is (it shows other arguments with repr)."""

    def __repr__(self) -> str:
        return str(self)


def _rebuild_error(error_type: Optional[type], text: str) -> Exception:
    message = _Message(f"Caught an exception in popsim's data loading process. Original {text}")
    if isinstance(error_type, type) and issubclass(error_type, Exception):
        try:
            return error_type(message)
        except Exception:
            pass
    return RuntimeError(message)


class WorkerStartError(RuntimeError):
    """The loading process of an :class:`popsim.AsynchronousDataAccessor` could not load its
    first batch: the dataset's error, with the process's traceback, is the ``__cause__``."""


class AsynchronousDataAccessor:
    """Iterates ``dataset`` (a DataLoader or any iterable of batches) in a
    background process, keeping up to ``buffer_size`` batches ready in shared
    memory.

    The process starts with the accessor, as PopTorch's, and loads the first batch at once:
    a dataset that cannot load fails here, not in the middle of the training loop.

    - ``load_indefinitely``: start loading the next epoch as soon as one ends.
    - ``early_preload``: go on loading past the first batch now rather than at
      the first ``iter()``.
    - ``rebatched_size``: assemble the loaded batches into batches of this
      many samples (along dimension 0); a final shorter batch is kept only
      with ``drop_last=False``.

    A batch is a view of a shared buffer that is refilled after the next batch
    is requested: clone tensors you keep. ``terminate()`` stops the process;
    so do garbage collection and interpreter exit.
    """

    def __init__(self, dataset: torch.utils.data.Dataset, buffer_size: int = 3,
                 miss_sleep_time_in_ms: float = 0.1, load_indefinitely: bool = True,
                 early_preload: bool = False,
                 sharing_strategy: SharingStrategy = SharingStrategy.FileSystem,
                 rebatched_size: Optional[int] = None, drop_last: bool = True) -> None:
        """Starts the loading process and waits until it has loaded the first batch.

        The arguments are PopTorch's, in its order (``drop_last`` is popsim's).

        Args:
            dataset: What to load batches from: a DataLoader or any iterable of batches
                (batches hold tensors and picklable objects). With ``rebatched_size``, ``len()``
                of the accessor reads ``dataset.dataset``, as a DataLoader has.
            buffer_size: How many batches to keep ready in shared memory, a positive
                integer.
            miss_sleep_time_in_ms: How long PopTorch's loader sleeps before looking again for
                a free slot, a number >= 0. popsim's loader wakes as soon as a slot is free (it
                waits on the queue of free slots), so there is nothing to tune: the value is
                checked and has no effect.
            load_indefinitely: Whether to start loading the next epoch as soon as one ends.
            early_preload: Whether to go on loading past the first batch now rather than at
                the first ``iter()``.
            sharing_strategy: A :class:`popsim.SharingStrategy`: how PopTorch starts its
                loading process and passes objects to it. popsim's is always forked and
                passes batches through shared-memory slots of its own, whichever is chosen
                (the dataset need not be picklable).
            rebatched_size: None to hand out the loaded batches as they are, or a positive
                integer: assemble them into batches of this many samples (along dimension 0;
                every element of a batch must then be a tensor with a batch dimension).
            drop_last: With ``rebatched_size``, whether to drop a final batch shorter than
                ``rebatched_size``; otherwise unused.

        Raises:
            OptionError: when ``buffer_size`` or ``rebatched_size`` (when given) is not a
                positive integer, ``miss_sleep_time_in_ms`` not a number >= 0, or
                ``sharing_strategy`` not a :class:`popsim.SharingStrategy`.
            WorkerStartError: a ``RuntimeError``, as PopTorch raises, when loading the first
                batch fails; the dataset's own error, with the loading process's traceback,
                is its ``__cause__``.
        """
        buffer_size = positive_int("buffer_size", buffer_size, "AsynchronousDataAccessor")
        if (isinstance(miss_sleep_time_in_ms, bool)
                or not isinstance(miss_sleep_time_in_ms, (int, float))
                or not miss_sleep_time_in_ms >= 0):
            raise OptionError(f"AsynchronousDataAccessor: miss_sleep_time_in_ms must be a number "
                              f">= 0, got {miss_sleep_time_in_ms!r}.",
                              option="AsynchronousDataAccessor.miss_sleep_time_in_ms")
        if not isinstance(sharing_strategy, SharingStrategy):
            raise OptionError(f"AsynchronousDataAccessor: sharing_strategy must be a "
                              f"popsim.SharingStrategy ({', '.join(m.name for m in SharingStrategy)}"
                              f"), got {sharing_strategy!r}.",
                              option="AsynchronousDataAccessor.sharing_strategy")
        if rebatched_size is not None:
            rebatched_size = positive_int("rebatched_size", rebatched_size,
                                          "AsynchronousDataAccessor")
        self._source: Any = dataset  # sized for __len__ (a torch DataLoader's dataset too)
        self._buffer_size = buffer_size
        self._load_indefinitely = bool(load_indefinitely)
        self._rebatched_size = rebatched_size
        self._drop_last = drop_last
        self._process: Optional["BaseProcess"] = None  # a forked multiprocessing Process
        self._finalizer: Optional[weakref.finalize] = None
        self._slots: Optional[List[List[torch.Tensor]]] = None
        self._start(hold_after_first=not early_preload)
        self._wait_for_the_first_batch()

    def _start(self, hold_after_first: bool = False) -> None:
        check_socket_directory()
        context = multiprocessing.get_context("fork")
        self._commands, self._free, self._ready = (context.Queue() for _ in range(3))
        self._slots = None
        self._next_tag = (0, 0)  # the loader starts request 0 by itself
        self._must_request = False
        self._active: Optional[Tuple[int, int]] = None
        # Messages read before their iteration asks for them (the first batch).
        self._early: Deque[Tuple[Any, ...]] = collections.deque()
        self._holding = hold_after_first
        process = context.Process(
            target=_load, name="popsim-data-loader",
            args=(self._source, self._buffer_size, self._load_indefinitely,
                  self._rebatched_size, self._drop_last, hold_after_first, self._commands,
                  self._free, self._ready, os.getpid()))
        process.start()
        self._process = process
        self._finalizer = weakref.finalize(self, _shutdown, os.getpid(), process,
                                           self._commands, self._free, self._ready)

    def _wait_for_the_first_batch(self) -> None:
        """Reads the loader's messages up to its first batch (or the end of an empty epoch),
        keeping them for the first iteration; a failure stops the process and raises."""
        while True:
            message = self._receive_from_loader()
            self._early.append(message)
            if message[0] == "error":
                self.terminate()
                cause = _rebuild_error(message[2], message[3])
                raise WorkerStartError(
                    "AsynchronousDataAccessor worker thread failed to start: loading the first "
                    f"batch raised {type(cause).__name__} (the loading process's traceback "
                    "is above).") from cause
            if message[0] != "slots":
                return

    @property
    def process(self) -> Optional["BaseProcess"]:
        """The loading process (None before it starts and after ``terminate()``)."""
        return self._process

    def terminate(self) -> None:
        """Stops the loading process (a later ``iter()`` starts a new one)."""
        if self._finalizer is not None:
            self._finalizer()
        self._process = None
        self._finalizer = None

    def __len__(self) -> int:
        if self._rebatched_size is None:
            return len(self._source)
        return batch_count(len(self._source.dataset), self._rebatched_size, self._drop_last)

    def __iter__(self) -> Iterator[Any]:
        if self._process is None:
            self._start()
        if self._active is not None:  # an earlier iteration was left unfinished
            self._abandon(self._active)
        tag = self._next_tag
        if self._holding:  # the loader waits after its first batch for this iter()
            self._commands.put(("go",))
            self._holding = False
        if self._must_request:
            self._commands.put(("start", tag[0]))
            self._must_request = False
        self._active = tag
        return self._batches(tag)

    def _abandon(self, tag: Tuple[int, int]) -> None:
        self._next_tag = (tag[0] + 1, 0)
        self._must_request = True
        self._active = None

    def _receive(self) -> Tuple[Any, ...]:
        return self._early.popleft() if self._early else self._receive_from_loader()

    def _receive_from_loader(self) -> Tuple[Any, ...]:
        while True:
            try:
                return self._ready.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                process = self._process
                if process is None or not process.is_alive():
                    code = process.exitcode if process is not None else None
                    self.terminate()
                    raise RuntimeError(
                        f"popsim's data loading process exited unexpectedly (exit code {code}"
                        f"{', killed by signal ' + str(-code) if code and code < 0 else ''}). "
                        "If memory is short, lower buffer_size or num_workers.")

    def _view(self, slot: int, spec: "TreeSpec", shapes: List[Tuple[int, ...]],
              others: List[Tuple[int, Any]]) -> Any:
        assert self._slots is not None, "a batch before the slots"
        tensors = [buffer.view(-1)[: math.prod(shape)].view(shape)
                   for buffer, shape in zip(self._slots[slot], shapes)]
        leaves = []
        extra = dict(others)
        for index in range(len(tensors) + len(extra)):
            leaves.append(extra[index] if index in extra else tensors.pop(0))
        return tree_unflatten(leaves, spec)

    def _batches(self, tag: Tuple[int, int]) -> Iterator[Any]:
        held: Optional[int] = None  # the slot of the batch the user holds
        completed = False
        received = 0
        try:
            while True:
                if self._active != tag:
                    raise RuntimeError("This iterator of an AsynchronousDataAccessor was "
                                       "replaced by a later iter() of the same loader.")
                message = self._receive()
                kind = message[0]
                if kind == "slots":
                    self._slots = message[1]
                    continue
                if message[1] != tag:  # left over from an abandoned epoch
                    if kind == "batch":
                        self._free.put(message[2])
                    continue
                if held is not None:
                    self._free.put(held)
                    held = None
                if kind == "end":
                    completed = True
                    return
                if kind == "error":
                    raise _rebuild_error(message[2], message[3])
                if kind == "inline":
                    yield message[2]
                else:
                    held = message[2]
                    yield self._view(*message[2:])
                received += 1
        finally:
            if self._process is not None and self._active == tag:
                if held is not None:
                    self._free.put(held)
                # The loader moves on by itself only after an epoch with batches.
                if completed and self._load_indefinitely and received > 0:
                    self._next_tag = (tag[0], tag[1] + 1)
                    self._active = None
                else:
                    self._abandon(tag)

