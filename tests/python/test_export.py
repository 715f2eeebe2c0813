"""compileAndExport, save, loadExecutable and popsim.load, as PopTorch's
precompilation: the exported file restores the model, its options and its
program without compiling; with export_model=False, a model wrapped again
loads the program; a file that does not fit the model or options, or is
damaged, is an ExecutableFileError that says why."""

import os

import pytest
import torch
import torch.nn as nn

import popsim


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(6, 8)
        self.out = nn.Linear(8, 3)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels=None):
        logits = self.out(torch.relu(self.hidden(x)))
        if labels is None:
            return logits
        return logits, self.loss(logits, labels)


def batch(samples=8):
    generator = torch.Generator().manual_seed(3)
    return (torch.randn(samples, 6, generator=generator),
            torch.randint(0, 3, (samples,), generator=generator))


def test_an_exported_inference_model_loads_and_runs_without_compiling(tmp_path, counted):
    torch.manual_seed(0)
    model = Classifier()
    x, _ = batch()
    options = popsim.Options().deviceIterations(2)
    inference = popsim.inferenceModel(model, options)
    path = tmp_path / "classifier.popsim"
    inference.compileAndExport(path, x)
    expected = inference(x)
    loaded = popsim.load(path, trusted=True)
    assert counted == {"compile": 1, "load": 1}
    assert isinstance(loaded, Classifier)
    assert loaded.options.device_iterations == 2
    assert torch.equal(loaded(x), expected)
    assert torch.equal(loaded(x * 2), inference(x * 2))


def test_exporting_to_a_directory_writes_one_file_named_by_the_program(tmp_path, counted):
    """PopTorch's save() takes a directory too: one file in it, which loads as the file
    compileAndExport names itself would."""
    x, _ = batch()
    model = Classifier()
    inference = popsim.inferenceModel(model)
    inference.compileAndExport(tmp_path, x, export_model=False)
    written = os.listdir(tmp_path)
    assert len(written) == 1 and written[0].endswith(".popsim") and len(written[0]) > 40
    again = popsim.inferenceModel(model)
    again.loadExecutable(tmp_path / written[0])
    assert counted == {"compile": 1, "load": 1}
    assert torch.equal(again(x), inference(x))


@pytest.mark.parametrize("training", [False, True])
def test_a_program_compiled_for_an_offline_target_loads_to_run(tmp_path, counted, training):
    # As PopTorch's precompilation: compiled where there is no IPU, run where there is.
    torch.manual_seed(0)
    model = Classifier()
    x, labels = batch()
    options = popsim.Options().useOfflineIpuTarget()
    wrapped = (popsim.trainingModel(model, options, torch.optim.SGD(model.parameters(), lr=0.1))
               if training else popsim.inferenceModel(model, options))
    inputs = (x, labels) if training else (x,)
    path = tmp_path / "offline.popsim"
    wrapped.compileAndExport(path, *inputs)
    with pytest.raises(popsim.OfflineTargetError):
        wrapped(*inputs)
    loaded = popsim.load(path, trusted=True)
    assert counted == {"compile": 1, "load": 1}
    assert loaded.options.connection_type == popsim.ConnectionType.Always
    result = loaded(*inputs)
    if training:
        assert torch.isfinite(result[1])
    else:
        with torch.no_grad():
            torch.testing.assert_close(result, model(x), rtol=1e-5, atol=1e-6)
    kept = popsim.load(path, lambda opts: opts.connectionType(popsim.ConnectionType.Never),
                       trusted=True)
    with pytest.raises(popsim.OfflineTargetError):
        kept(*inputs)


def test_an_exported_training_model_carries_its_weights_and_trains_on(tmp_path, counted):
    torch.manual_seed(0)
    model = Classifier()
    trainer = popsim.trainingModel(model, popsim.Options(),
                                   torch.optim.Adam(model.parameters(), lr=0.01))
    x, labels = batch()
    trainer(x, labels)
    trainer(x, labels)
    path = tmp_path / "trainer.popsim"
    trainer.save(path)
    loaded = popsim.load(path, trusted=True)
    assert counted == {"compile": 1, "load": 1}
    for name, weight in model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], weight), name
    # The original and the restored model (with Adam's moments) take the same next steps.
    for _ in range(2):
        assert torch.equal(loaded(x, labels)[1], trainer(x, labels)[1])
    for name, weight in model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], weight), name


def test_without_the_model_the_program_loads_into_a_model_wrapped_again(tmp_path, counted):
    torch.manual_seed(0)
    x, labels = batch()
    exporter = popsim.trainingModel(Classifier(), popsim.Options())
    path = tmp_path / "program_only.popsim"
    exporter.compileAndExport(path, x, labels, export_model=False)
    with pytest.raises(popsim.ExecutableFileError,
                       match=r"was exported with export_model=False, so it holds no model: wrap "
                       r"the model .* and call loadExecutable\("):
        popsim.load(path, trusted=True)
    torch.manual_seed(0)
    trainer = popsim.trainingModel(Classifier(), popsim.Options())
    trainer.loadExecutable(path)
    assert trainer.isCompiled()
    assert counted == {"compile": 1, "load": 1}
    torch.manual_seed(0)
    reference = popsim.trainingModel(Classifier(), popsim.Options())
    assert torch.equal(trainer(x, labels)[1], reference(x, labels)[1])


def test_edit_opts_fn_changes_options_that_do_not_change_the_program(tmp_path):
    x, _ = batch()
    path = tmp_path / "model.popsim"
    popsim.inferenceModel(Classifier()).compileAndExport(path, x)
    profiles = tmp_path / "profiles"

    def edit(opts):
        opts.useIpuId(1)
        opts.enableProfiling(str(profiles))

    loaded = popsim.load(path, edit_opts_fn=edit, trusted=True)
    loaded(x)
    assert loaded.options.ipu_id == 1
    assert os.listdir(profiles)
    with pytest.raises(popsim.ExecutableFileError,
                       match=r"option compiler\.device_iterations: 1 in the file, 2 now"):
        popsim.load(path, edit_opts_fn=lambda opts: opts.deviceIterations(2), trusted=True)


def test_a_program_for_another_model_is_refused_naming_the_difference(tmp_path):
    x, labels = batch()
    path = tmp_path / "model.popsim"
    popsim.trainingModel(Classifier()).compileAndExport(path, x, labels, export_model=False)
    with pytest.raises(popsim.ExecutableFileError,
                       match=r"holds the program of a trainingModel; this model was wrapped with "
                       r"inferenceModel"):
        popsim.inferenceModel(Classifier()).loadExecutable(path)
    wider = Classifier()
    wider.hidden, wider.out = nn.Linear(6, 16), nn.Linear(16, 3)
    with pytest.raises(popsim.ExecutableFileError,
                       match=r"compiled for another program: the traced model \(its ops, shapes, "
                       r"constants or source lines\)"):
        popsim.trainingModel(wider).loadExecutable(path)
    with pytest.raises(popsim.ExecutableFileError, match=r"option compiler\.training\.optimizer: "
                       r"'OptimizerKind\.Sgd' in the file, 'OptimizerKind\.Adam' now"):
        model = Classifier()
        popsim.trainingModel(model, optimizer=torch.optim.Adam(model.parameters())
                             ).loadExecutable(path)


def test_a_damaged_export_is_an_error_not_a_recompilation(tmp_path):
    x, _ = batch()
    path = tmp_path / "model.popsim"
    popsim.inferenceModel(Classifier()).compileAndExport(path, x)
    data = bytearray(path.read_bytes())
    data[-40] ^= 0x80
    path.write_bytes(bytes(data))
    with pytest.raises(popsim.ExecutableFileError, match=r"is damaged: its SHA-256 does not match"):
        popsim.load(path, trusted=True)
    with pytest.raises(popsim.ExecutableFileError, match=r"is damaged"):
        popsim.inferenceModel(Classifier()).loadExecutable(path)


def test_nested_arguments_are_exported_as_the_model_took_them(tmp_path, counted):
    class TakesADict(nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = Classifier()

        def forward(self, batch, scale=1.0):
            return self.classifier(batch["x"] * scale, batch["labels"])

    x, labels = batch()
    model = TakesADict()
    trainer = popsim.trainingModel(model, popsim.Options())
    path = tmp_path / "dict.popsim"
    trainer.compileAndExport(path, {"x": x, "labels": labels}, scale=2.0, export_model=False)
    reloaded = popsim.trainingModel(TakesADict(), popsim.Options())
    reloaded.loadExecutable(path)  # traced again on zeros of the same structure
    assert counted == {"compile": 1, "load": 1}
    assert reloaded({"x": x, "labels": labels}, scale=2.0)[1].shape == ()


@pytest.mark.parametrize("ipu_id", [-1, 1.5, True, "0"])
def test_useIpuId_takes_a_device_id(ipu_id):
    with pytest.raises(popsim.OptionError, match="useIpuId expects a non-negative device ID"):
        popsim.Options().useIpuId(ipu_id)


def test_a_model_that_cannot_be_pickled_is_exported_without_it(tmp_path):
    model = Classifier()
    model.scale = lambda t: t * 2  # lambdas do not pickle
    inference = popsim.inferenceModel(model)
    x, _ = batch()
    path = tmp_path / "model.popsim"
    with pytest.raises(popsim.ExecutableFileError, match=r"cannot be pickled .*Export a model "
                       r"that cannot be pickled with export_model=False"):
        inference.compileAndExport(path, x)
    assert not path.exists()
    inference.save(path, export_model=False)
    reloaded = popsim.inferenceModel(model)
    reloaded.loadExecutable(path)
    assert torch.equal(reloaded(x), inference(x))


def test_save_needs_a_compiled_model(tmp_path):
    with pytest.raises(popsim.InputError, match=r"save\(\) needs a compiled model"):
        popsim.inferenceModel(Classifier()).save(tmp_path / "model.popsim")


def test_poptorch_spelling():
    import popsim as poptorch

    assert callable(poptorch.load)
    assert callable(poptorch.PoplarExecutor.compileAndExport)
    assert callable(poptorch.PoplarExecutor.loadExecutable)
    assert callable(poptorch.Options().enableExecutableCaching)
