"""Training across processes: the replicas of every process of a job
(``Options.Distributed``, launched by torchrun) sum their gradients with
``torch.distributed`` on the Gloo backend.

Within a process the replicas meet in a ``_C.ReplicaGroup``; the last to
arrive at each all-reduce hands the process's sum to ``all_reduce`` here,
which sums it across processes. Each IPU of a replica runs its all-reduces
on its own host thread in program order, so each gets a Gloo group of its
own: the calls on one group then come in the same order in every process,
while different IPUs' all-reduces proceed side by side.
"""

import atexit
import datetime
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from popsim import _C
from popsim.api.errors import OptionError

if TYPE_CHECKING:
    from popsim.api.options import Options

TIMEOUT_VARIABLE = "POPSIM_DISTRIBUTED_TIMEOUT"
_DEFAULT_TIMEOUT_SECONDS = 300
_MAX_TIMEOUT_SECONDS = 86400

# The process groups popsim made, what holds them (emptied first), and
# whether popsim started torch.distributed: released at exit (_release_at_exit).
_MADE: List[Any] = []
_HOLDERS: List[Any] = []
_STARTED = False


def timeout() -> datetime.timedelta:
    """How long a collective waits for the other processes before failing
    (POPSIM_DISTRIBUTED_TIMEOUT seconds, default 300): a process that died
    makes the others fail, not hang."""
    text = os.environ.get(TIMEOUT_VARIABLE, str(_DEFAULT_TIMEOUT_SECONDS))
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    # NaN, infinity and timedeltas beyond a day are refused: a collective must fail in
    # bounded time, and timedelta itself overflows past 10^9 days.
    if not 0 < seconds <= _MAX_TIMEOUT_SECONDS:
        raise OptionError(f"{TIMEOUT_VARIABLE} is {text!r}: set it to a number of seconds "
                          f"above 0 and at most {_MAX_TIMEOUT_SECONDS} (a day).",
                          option=TIMEOUT_VARIABLE)
    return datetime.timedelta(seconds=seconds)


def _process_group_ready(options: "Options") -> None:
    """Joins (or checks) the torch.distributed job of Options.Distributed."""
    import torch.distributed as dist

    process, processes = options.Distributed.processId, options.Distributed.numProcesses
    if not dist.is_available():
        raise OptionError(f"Options.Distributed says this is process {process} of {processes}, "
                          "but this PyTorch has no torch.distributed to train across processes.",
                          option="Distributed")
    if not dist.is_initialized():
        missing = [name for name in ("MASTER_ADDR", "MASTER_PORT") if name not in os.environ]
        if missing:
            raise OptionError(
                f"Options.Distributed says this is process {process} of {processes}, but "
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set, so "
                "popsim cannot reach the other processes. Launch the script with torchrun "
                "(torchrun --nproc_per_node N script.py), or call "
                "torch.distributed.init_process_group('gloo') before training.",
                option="Distributed")
        dist.init_process_group("gloo", rank=process, world_size=processes, timeout=timeout())
        global _STARTED
        _STARTED = True
    if (dist.get_rank(), dist.get_world_size()) != (process, processes):
        raise OptionError(
            f"Options.Distributed says this is process {process} of {processes}, but "
            f"torch.distributed says rank {dist.get_rank()} of {dist.get_world_size()}. Let "
            "the options read the launcher's environment, or configureProcessId to match.",
            option="Distributed")


def _new_group(**kwargs: List[int]) -> Any:
    import torch.distributed as dist

    group = dist.new_group(backend="gloo", timeout=timeout(), **kwargs)
    _MADE.append(group)
    return group


def _release_at_exit() -> None:
    """Destroys popsim's process groups while Python still runs. A Gloo worker
    thread drops its last reference to a collective's tensor just after the
    collective returns; if that happens during interpreter shutdown, freeing
    the tensor needs the GIL, the thread is stopped with pthread_exit, and the
    process aborts ("terminate called without an active exception")."""
    if not (_MADE or _STARTED):
        return
    import torch.distributed as dist

    for holder in _HOLDERS:
        holder.clear()
    _HOLDERS.clear()
    while _MADE:
        group = _MADE.pop()
        if dist.is_initialized():
            try:
                dist.destroy_process_group(group)
            except (RuntimeError, ValueError, KeyError):
                pass  # the script destroyed it already
        del group  # the last reference: its workers stop now
    if _STARTED and dist.is_initialized():
        dist.destroy_process_group()


atexit.register(_release_at_exit)


def cross_process_sum(options: "Options", per_process: int, ipus: int,
                      groupings: Sequence[Tuple[int, int, Sequence[int]]] = ()
                      ) -> Callable[[str, int, torch.Tensor, Optional[Tuple[int, int, int]]], None]:
    """The function a ReplicaGroup calls to sum a gradient (in place) across
    the job's processes (of `per_process` replicas each), with one Gloo group
    for each of a replica's IPUs.
    `groupings` lists the replica groupings of replica-grouped parameters as
    (replicas per group, stride, the group of each of the job's replicas):
    each group whose replicas are in several processes gets Gloo groups of
    those processes, one per IPU, for its own sums (the groups of one
    process's replicas finish their sums in any order, so they must not
    share one). Every process must call this in the same order (they compile
    the same model together)."""
    import torch.distributed as dist

    _process_group_ready(options)
    groups = [_new_group() for _ in range(ipus)]
    subgroups: Dict[Tuple[int, int, int, int], Any] = {}
    for size, stride, job_groups in sorted(set((size, stride, tuple(job))
                                               for size, stride, job in groupings)):
        for index in range(max(job_groups) + 1):
            ranks = sorted({replica // per_process for replica, group in enumerate(job_groups)
                            if group == index})
            if len(ranks) == 1:
                continue  # within one process: the ReplicaGroup sums it
            for ipu in range(ipus):
                subgroups[size, stride, index, ipu] = _new_group(ranks=ranks)

    def all_reduce(key: str, ipu: int, tensor: torch.Tensor,
                   group: Optional[Tuple[int, int, int]] = None) -> None:
        dist.all_reduce(tensor, group=groups[ipu] if group is None else subgroups[(*group, ipu)])

    _HOLDERS.extend([groups, subgroups])  # the executor keeps this closure past exit
    return all_reduce


def broadcast_from_first_process(tensors: Dict[str, torch.Tensor]) -> None:
    """Gives every process process 0's values of `tensors` (in place), so all
    processes start training from the same weights, whatever their seeds."""
    import torch.distributed as dist
    with torch.no_grad():
        for name in sorted(tensors):
            tensor = tensors[name]
            dense = tensor if tensor.is_contiguous() else tensor.contiguous()
            dist.broadcast(dense, src=0)
            if dense is not tensor:
                tensor.copy_(dense)


class TorchDistributed(_C.CrossProcess):
    """The other processes of the job, for the host's replicated reads and
    broadcasts (host::CrossProcess): torch.distributed's collectives over the
    buffers the host gives. Every process calls them at the same point (as
    the host's reads of sharded optimizer state do)."""

    def gather(self, mine: torch.Tensor, every: torch.Tensor) -> None:
        import torch.distributed as dist
        dist.all_gather(list(every.chunk(dist.get_world_size())), mine)

    def broadcast_from_first(self, value: torch.Tensor) -> None:
        import torch.distributed as dist
        dist.broadcast(value, src=0)
