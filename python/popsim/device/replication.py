"""Replicas of a compiled model (``Options.replicationFactor``), as the host
runtime runs them (csrc/host): each replica is an executable of the same
program with simulated IPUs of its own; a call's combined batch is split
between them as PopTorch lays it out, they run concurrently on host threads,
and in training their ``replica_all_reduce`` ops meet in a replica group,
which sums every step's gradients across them (and, in a job of several
processes, across those with torch.distributed) before the update.
"""

from typing import TYPE_CHECKING, Sequence, Tuple

from popsim import _C
from popsim.device import process_group as _process_group

if TYPE_CHECKING:
    from popsim.api.options import Options


# Where a job's replicas are (local, processes, first, input_parts,
# input_part_of, job, input_label): the host runtime's one reading of
# replicationFactor, Options.Distributed and inputReplicaGrouping
# (csrc/host/replication.h).
Replication = _C.Replication


def of(options: "Options", training: bool = True) -> Replication:
    """The replicas of a job: replicationFactor in each of
    Options.Distributed's processes for training, which sums gradients across
    all of them; inference replicas are this process's own. Input groups of
    replicas (Options.inputReplicaGrouping) share their data."""
    return _C.replication_of(options._session, training)


def device_program(executable: _C.Executable, options: "Options", training: bool,
                   compiled: _C.CompileOptions,
                   groupings: Sequence[Tuple[int, int, Sequence[int]]]) -> _C.DeviceProgram:
    """`executable` on its device, for the session's replicas (the host runtime's
    DeviceProgram, csrc/host/device_program.h, which chooses once between computing
    replicas and one cost-only executable standing for them). A training job across
    processes sums gradients with torch.distributed (Gloo): `compiled` says each
    replica's IPUs (a Gloo group each) and `groupings` the (size, stride, job
    groups) of replica-grouped variables, whose sums need groups of their own."""
    replication = of(options, training)
    layout = _C.call_layout_of(options._session, training, replication, executable)
    cross_process_sum, cross_process = None, None
    if replication.processes > 1 and replication.job > 1 and not executable.cost_only:
        cross_process_sum = _process_group.cross_process_sum(
            options, replication.local, compiled.system.num_ipus, groupings)
        cross_process = _process_group.TorchDistributed()
    return _C.DeviceProgram(executable, replication, layout, cross_process_sum, cross_process)
