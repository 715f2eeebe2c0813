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


def _run(script, cwd, **env):
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", script], env=environment, cwd=cwd,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.timeout(120)
def test_import_popdist_needs_no_path_where_popsim_is_installed(tmp_path):
    done = _run("import popdist, popdist.poptorch\n"
                "print(popdist.__file__)\n"
                "print(popdist.getNumTotalReplicas(), popdist.poptorch.Options(4).replication_factor)\n",
                tmp_path, RANK="1", WORLD_SIZE="2", POPDIST_NUM_LOCAL_REPLICAS="3")
    assert done.returncode == 0, done.stderr
    path, counts = done.stdout.splitlines()
    assert path.endswith(os.path.join("popsim", "_shims", "popdist", "__init__.py"))
    assert counts.split() == ["6", "3"]


@pytest.mark.timeout(120)
def test_a_real_popdist_is_not_shadowed(tmp_path):
    real = tmp_path / "real" / "popdist"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("WHO = 'the real PopDist'\n")
    (real / "poptorch.py").write_text("WHO = 'the real popdist.poptorch'\n")
    done = _run("import popdist, popdist.poptorch\nprint(popdist.WHO, '/', popdist.poptorch.WHO)\n",
                tmp_path, PYTHONPATH=str(tmp_path / "real"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "the real PopDist / the real popdist.poptorch"


def test_execute_on_instances_runs_only_on_the_listed_ones(job):
    calls = []
    assert popdist.execute_on_instances({2}, lambda x: calls.append(x) or x * 2, 21) == 42
    assert popdist.execute_on_instances({0, 1}, calls.append, "not here") is None
    assert calls == [21]
