"""popsim's PopDist API (popsim.popdist, and `import popdist` through the
directory `python -m popsim.popdist` prints) on torchrun's environment."""

import os
import subprocess
import sys

import pytest

import popsim
import popsim.popdist as popdist


@pytest.fixture
def job(monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    return monkeypatch


def test_the_api_reads_torchruns_environment(job):
    popdist.init()
    assert popdist.isPopdistEnvSet()
    assert (popdist.getInstanceIndex(), popdist.getNumInstances()) == (2, 3)
    assert (popdist.getNumLocalReplicas(), popdist.getNumTotalReplicas(),
            popdist.getReplicaIndexOffset()) == (2, 6, 4)
    assert popdist.getNumIpusPerReplica() == 1 and popdist.getDeviceId() == 0
    opts = popdist.poptorch.Options(ipus_per_replica=4)
    assert isinstance(opts, popsim.Options)
    assert (opts.replication_factor, opts.Distributed.processId,
            opts.Distributed.numProcesses) == (2, 2, 3)


def test_outside_a_job_it_is_one_process(monkeypatch):
    for variable in ("RANK", "WORLD_SIZE", "POPDIST_NUM_LOCAL_REPLICAS"):
        monkeypatch.delenv(variable, raising=False)
    assert not popdist.isPopdistEnvSet()
    assert (popdist.getInstanceIndex(), popdist.getNumInstances(),
            popdist.getNumTotalReplicas()) == (0, 1, 1)


def test_bad_environments_are_named(job):
    job.setenv("POPDIST_NUM_LOCAL_REPLICAS", "zero")
    with pytest.raises(popsim.OptionError, match=r"POPDIST_NUM_LOCAL_REPLICAS must be a "
                                                 r"positive integer, got 'zero'"):
        popdist.getNumLocalReplicas()
    job.setenv("POPDIST_NUM_LOCAL_REPLICAS", "1")
    job.setenv("RANK", "3")
    with pytest.raises(popsim.OptionError, match=r"RANK 3 is not in \[0, 3\)"):
        popdist.init()


@pytest.mark.timeout(120)
def test_import_popdist_finds_the_api_on_the_printed_path(tmp_path):
    shims = subprocess.run([sys.executable, "-m", "popsim.popdist"], capture_output=True,
                           text=True, timeout=60, check=True).stdout.strip()
    env = dict(os.environ, PYTHONPATH=shims, RANK="0", WORLD_SIZE="2")
    script = ("import popdist, popdist.poptorch\n"
              "o = popdist.poptorch.Options()\n"
              "print(popdist.getNumInstances(), o.Distributed.numProcesses)\n")
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["2", "2"]
