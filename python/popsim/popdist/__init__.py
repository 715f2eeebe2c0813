"""PopDist's API (Graphcore's library for jobs PopRun launches), on the
environment torchrun gives each process, so that distributed PopTorch code
runs with popsim unchanged.

- isPopdistEnvSet(): whether this process is one of a launched job (torchrun's
  RANK and WORLD_SIZE are set).
- getInstanceIndex() / getNumInstances(): RANK and WORLD_SIZE (PopRun's
  instances are torchrun's processes).
- getNumLocalReplicas(): the replicas of each process, POPDIST_NUM_LOCAL_REPLICAS
  (PopRun's --num-replicas divided by its --num-instances; default 1);
  getNumTotalReplicas() and getReplicaIndexOffset() follow from it.
- getNumIpusPerReplica(): POPDIST_NUM_IPUS_PER_REPLICA (default 1).
- getDeviceId(): 0 (popsim simulates its IPUs; there is no device to pick).
- init(): checks the environment (PopRun's own init() starts its runtime).
- execute_on_instances(instances, fn, *args): calls fn on the listed
  instances only, then waits for every process of the job (a barrier of the
  job's torch.distributed group when one is running).
- popdist.poptorch.Options(): popsim.Options with this process's ID and count
  (Options.Distributed) and replicationFactor(getNumLocalReplicas()).

Where popsim is installed and no real PopDist is, `import popdist` and
`import popdist.poptorch` find this API (popsim-popdist.pth installs a finder
that Python consults after its own, so a real popdist always wins). Where .pth
files are not read (python -S, or popsim on PYTHONPATH rather than installed),
put the directory `python -m popsim.popdist` prints on PYTHONPATH:

    PYTHONPATH="$(python -m popsim.popdist)" torchrun --nproc_per_node 2 train.py

or in code, `import popsim.popdist as popdist`.
"""

from popsim.popdist import poptorch  # noqa: F401  (popdist.poptorch, as in PopDist)
from popsim.popdist.instances import (execute_on_instances, getDeviceId, getInstanceIndex,
                                      getNumInstances, getNumIpusPerReplica,
                                      getNumLocalReplicas, getNumTotalReplicas,
                                      getReplicaIndexOffset, init, isPopdistEnvSet)

__all__ = ["init", "isPopdistEnvSet", "getInstanceIndex", "getNumInstances",
           "getNumLocalReplicas", "getNumTotalReplicas", "getReplicaIndexOffset",
           "getNumIpusPerReplica", "getDeviceId", "execute_on_instances"]
