"""popdist.poptorch: PopTorch options for this process of a launched job."""

from typing import Any, Optional

from popsim.api.options import Options as _Options
from popsim.popdist import instances as _popdist


def Options(ipus_per_replica: Optional[int] = None, **kwargs: Any) -> _Options:
    """popsim.Options with this process's ID and the job's process count
    (Options.Distributed) and getNumLocalReplicas() replicas, as
    popdist.poptorch.Options gives PopTorch. `ipus_per_replica` is accepted
    (popsim's blocks place the replicas' IPUs); other keywords are refused."""
    if kwargs:
        raise TypeError(f"popdist.poptorch.Options got unexpected arguments {sorted(kwargs)}.")
    del ipus_per_replica  # the model's blocks decide the IPUs of a replica
    opts = _Options().replicationFactor(_popdist.getNumLocalReplicas())
    opts.Distributed.configureProcessId(_popdist.getInstanceIndex(), _popdist.getNumInstances())
    return opts
