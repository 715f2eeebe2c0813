"""Executable caching (Options.enableExecutableCaching, POPSIM_CACHE_DIR and
PopTorch's POPTORCH_CACHE_DIR): a model compiled again with the same traced
program, options and popsim build loads its program from the cache instead
of running the compiler, in this process or another; a changed model or
option compiles a new program; a damaged or stale file is compiled again with
a warning and never run."""

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
import torch.nn as nn

import popsim

SCRIPT = textwrap.dedent("""
    import json, sys
    import torch
    import popsim

    hidden, iterations = int(sys.argv[1]), int(sys.argv[2])
    calls = {"compile": 0, "load": 0}

    executable_for = popsim._C.executable_for

    def counted(*args):
        executable, origin, problems = executable_for(*args)
        calls["load" if origin == "cache" else "compile"] += 1
        return executable, origin, problems

    popsim._C.executable_for = counted

    class Regression(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(),
                                           torch.nn.Linear(hidden, 2))

        def forward(self, x, target):
            out = self.net(x)
            return out, torch.nn.functional.mse_loss(out, target)

    torch.manual_seed(0)
    model = Regression()
    trainer = popsim.trainingModel(model, popsim.Options().deviceIterations(iterations),
                                   torch.optim.SGD(model.parameters(), lr=0.1))
    x = torch.randn(4 * iterations, 4)
    losses = []
    for _ in range(3):
        _, loss = trainer(x, torch.zeros(4 * iterations, 2))
        losses.append(loss.tolist())
    print(json.dumps({"calls": calls, "losses": losses}))
""")


class RegressionWithLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 8)
        self.second = nn.Linear(8, 2)

    def forward(self, x, target):
        with popsim.Block("B0", ipu_id=0):
            hidden = torch.relu(self.first(x))
        with popsim.Block("B1", ipu_id=1):
            out = self.second(hidden)
            return out, nn.functional.mse_loss(out, target)


def run_script(path, cache, *arguments):
    environment = dict(os.environ, POPSIM_CACHE_DIR=str(cache))
    result = subprocess.run([sys.executable, str(path), *map(str, arguments)], env=environment,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_program_instead_of_compiling(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    cache = tmp_path / "cache"
    first = run_script(script, cache, 8, 1)
    assert first["calls"] == {"compile": 1, "load": 0}
    assert len(os.listdir(cache)) == 1
    second = run_script(script, cache, 8, 1)
    assert second["calls"] == {"compile": 0, "load": 1}
    assert second["losses"] == first["losses"]  # the same training, bit for bit
    # A changed model, then a changed option, compile programs of their own.
    assert run_script(script, cache, 5, 1)["calls"] == {"compile": 1, "load": 0}
    assert run_script(script, cache, 8, 2)["calls"] == {"compile": 1, "load": 0}
    assert len(os.listdir(cache)) == 3
    assert run_script(script, cache, 5, 1)["calls"] == {"compile": 0, "load": 1}


def train_pipeline(options, steps=3):
    torch.manual_seed(1)
    model = RegressionWithLoss()
    options.deviceIterations(2).Training.gradientAccumulation(3).recomputation(True)
    trainer = popsim.trainingModel(model, options,
                                   torch.optim.Adam(model.parameters(), lr=0.01))
    x, target = torch.randn(24, 4), torch.randn(24, 2)
    losses = [trainer(x, target)[1] for _ in range(steps)]
    result = {"losses": torch.stack(losses), "cycles": trainer.cycleCount(),
              "memory": trainer.memoryReport(), "program": trainer._debug_ir(optimized=True)}
    trainer.destroy()
    result["weights"] = {name: value.clone() for name, value in model.state_dict().items()}
    return result


def test_a_cached_pipelined_program_trains_as_the_compiled_one(tmp_path, counted):
    compiled = train_pipeline(popsim.Options())
    cache = popsim.Options().enableExecutableCaching(tmp_path)
    train_pipeline(cache)
    assert counted == {"compile": 2, "load": 0}
    loaded = train_pipeline(popsim.Options().enableExecutableCaching(tmp_path))
    assert counted == {"compile": 2, "load": 1}
    assert torch.equal(loaded["losses"], compiled["losses"])
    for name, weight in compiled["weights"].items():
        assert torch.equal(loaded["weights"][name], weight), name
    assert loaded["cycles"] == compiled["cycles"]
    assert loaded["memory"] == compiled["memory"]
    assert loaded["program"] == compiled["program"]


def test_stream_callback_threads_apply_to_a_cached_program_as_it_loads(tmp_path, counted,
                                                                       monkeypatch):
    """Poplar's engine options apply when a program loads, not to the program: a cached
    program loads under other stream-callback threads, and its host transfers follow them."""
    def host_latencies():
        opts = popsim.Options().replicationFactor(2).enableExecutableCaching(tmp_path)
        model = popsim.inferenceModel(nn.Linear(3, 5), opts)
        model(torch.ones(4, 3))
        return {event["end"] - event["start"] for event in model.executionTrace().events
                if event["kind"] == "host_input"}

    assert host_latencies() == {2 * 50_000}  # the replicas take turns on the main thread
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"streamCallbacks.multiThreadMode": '
                       '"dedicated", "streamCallbacks.numWorkerThreads": 2}')
    assert host_latencies() == {50_000}
    assert counted["compile"] == 1  # the second model loaded the file


def inference_output(options):
    torch.manual_seed(2)
    model = popsim.inferenceModel(nn.Sequential(nn.Linear(3, 5), nn.Tanh()), options)
    return model(torch.ones(2, 3))


def only_file(directory):
    (name,) = os.listdir(directory)
    return os.path.join(directory, name)


def test_a_damaged_cache_file_is_compiled_again_with_a_warning(tmp_path, counted):
    options = popsim.Options().enableExecutableCaching(tmp_path)
    expected = inference_output(options)
    path = only_file(tmp_path)
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0x01
    open(path, "wb").write(bytes(data))
    with pytest.warns(UserWarning, match=r"is damaged: its SHA-256 does not match.*Compiling the "
                      r"model again and replacing the file"):
        assert torch.equal(inference_output(options), expected)
    assert counted == {"compile": 2, "load": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(inference_output(options), expected)  # the replaced file is good
    assert counted == {"compile": 2, "load": 1}


@pytest.mark.parametrize("content,message", [
    (b"", "is not a popsim program file"),
    (b"POPSIMEX\x01\x00", "is damaged"),
    (b"a text file that happens to sit there", "is not a popsim program file"),
])
def test_a_file_that_is_no_program_is_replaced(tmp_path, counted, content, message):
    options = popsim.Options().enableExecutableCaching(tmp_path)
    expected = inference_output(options)
    open(only_file(tmp_path), "wb").write(content)
    with pytest.warns(UserWarning, match=message):
        assert torch.equal(inference_output(options), expected)
    assert counted["compile"] == 2


def test_a_file_another_popsim_build_wrote_is_stale(tmp_path, counted):
    options = popsim.Options().enableExecutableCaching(tmp_path)
    expected = inference_output(options)
    # The entry as an older popsim would have written it: its program under its build.
    path = only_file(tmp_path)
    stored = popsim._C.read_program_file(path)
    older = popsim._C.ProgramKey(stored.key.graph, stored.key.options, "0.5.0+0123456789abcdef")
    popsim._C.write_program_file(path, older, stored.program)
    with pytest.warns(UserWarning, match=r"written by popsim 0\.5\.0\+0123456789abcdef; this is "
                      rf"popsim {re.escape(popsim.__version__)}\+[0-9a-f]{{16}}, whose compiler "
                      r"may build another program"):
        assert torch.equal(inference_output(options), expected)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inference_output(options)
    assert len(os.listdir(tmp_path)) == 1  # replaced, not added
    assert counted == {"compile": 2, "load": 1}


def test_the_environment_variables_name_the_cache_and_none_turns_it_off(tmp_path, monkeypatch,
                                                                        counted):
    monkeypatch.setenv("POPTORCH_CACHE_DIR", str(tmp_path / "poptorch"))
    inference_output(popsim.Options())
    assert len(os.listdir(tmp_path / "poptorch")) == 1
    monkeypatch.setenv("POPSIM_CACHE_DIR", str(tmp_path / "popsim"))  # popsim's first
    inference_output(popsim.Options())
    assert len(os.listdir(tmp_path / "popsim")) == 1
    inference_output(popsim.Options().enableExecutableCaching(None))
    assert counted == {"compile": 3, "load": 0}
    assert len(os.listdir(tmp_path / "popsim")) == 1


def test_a_cache_that_cannot_be_written_warns_and_the_model_runs(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.warns(UserWarning, match="does not use the executable cache directory .*cannot be "
                      "created or read.*Models compile without the cache"):
        output = inference_output(popsim.Options().enableExecutableCaching(blocker / "cache"))
    assert torch.equal(output, inference_output(popsim.Options()))


@pytest.mark.parametrize("path", [3, "", ["dir"]])
def test_enableExecutableCaching_takes_a_directory(path):
    with pytest.raises(popsim.OptionError, match="enableExecutableCaching expects a directory "
                       "path or None"):
        popsim.Options().enableExecutableCaching(path)


def bound_fields(value, prefix=""):
    """Every option field Python's bindings expose, dotted ("compiler.training.optimizer"):
    what the key must cover, whatever fields C++ grows."""
    for name in dir(value):
        field = getattr(value, name)
        if name.startswith("_") or callable(field):
            continue
        dotted = f"{prefix}{name}"
        if type(field).__module__.startswith("popsim") and not hasattr(type(field), "__members__"):
            yield from bound_fields(field, dotted + ".")
        else:
            yield dotted, field


def flattened(value, prefix=""):
    if isinstance(value, dict):
        for name, item in value.items():
            yield from flattened(item, f"{prefix}{name}.")
    else:
        yield prefix[:-1]


def compiled_pipeline():
    torch.manual_seed(0)
    model = RegressionWithLoss()
    options = popsim.Options().deviceIterations(2)
    options.Training.gradientAccumulation(3)
    trainer = popsim.trainingModel(model, options, torch.optim.Adam(model.parameters()))
    trainer(torch.randn(24, 4), torch.zeros(24, 2))
    return trainer._compiled


def test_the_program_key_holds_every_compile_option_and_names_each_change():
    compiled = compiled_pipeline()
    graph, options = compiled.graph, compiled.compile_options
    key = popsim._C.program_key(graph, options)
    fields = dict(bound_fields(options))
    # The replicas taking turns on a host thread apply as a program loads, not to it.
    assert set(flattened(key.options)) == set(fields) - {"system.replicas_per_host_thread"}
    changed = 0
    for name, value in fields.items():
        *parents, leaf = name.split(".")
        owner = options
        for parent in parents:
            owner = getattr(owner, parent)
        if isinstance(value, bool):
            new = not value
        elif isinstance(value, int) and not isinstance(value, bool):
            new = value + 1
        elif isinstance(value, float):
            new = value / 2 + 1
        else:
            continue  # enums, lists and records: covered by the key set above
        try:
            setattr(owner, leaf, new)
        except AttributeError:  # read-only (clock_hz follows the chip)
            continue
        try:
            if name == "system.replicas_per_host_thread":
                assert popsim._C.key_mismatch(key, popsim._C.program_key(graph, options)) is None
                continue
            reason = popsim._C.key_mismatch(key, popsim._C.program_key(graph, options))
            assert reason is not None and f"option {name}: " in reason, (name, reason)
            assert popsim._C.program_key(graph, options).digest != key.digest, name
            changed += 1
        finally:
            setattr(owner, leaf, value)
    assert changed >= 30
    assert popsim._C.key_mismatch(key, popsim._C.program_key(graph, options)) is None
