"""Files and caches from elsewhere run no code, crash nothing and change no result
(docs/guide/security.md).

An attacker here is another local user who can write a file this user opens:
an exported program passed around, or an entry of a shared executable cache.
loadExecutable reads only data (no pickle); popsim.load unpickles only with
trusted=True; the cache uses only a directory and entries this user owns and
no one else can write; every damaged or foreign entry is a miss, compiled
again with a warning."""

import hashlib
import io
import json
import os
import pickle
import stat
import struct
import typing
import warnings

import pytest
import torch
import torch.nn as nn

import popsim
from popsim.compile import executable_file as _executable_file


class Doubler(nn.Module):
    def forward(self, x):
        return x * 2 + 1


class RunsACommand:
    """A pickle payload: unpickling it creates `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def sections_of(path):
    data = open(path, "rb").read()
    offset, sections = 12, []
    for _ in range(3):
        (length,) = struct.unpack_from("<Q", data, offset)
        sections.append(data[offset + 8:offset + 8 + length])
        offset += 8 + length
    return sections


def rewrite(path, header=None, program=None, model=None):
    """The file with sections replaced and its SHA-256 recomputed: integrity checks pass,
    as they do for anyone who can write the file."""
    old = sections_of(path)
    parts = [header if header is not None else old[0], program if program is not None else old[1],
             model if model is not None else old[2]]
    body = b"POPSIMEX" + struct.pack("<I", _executable_file.CONTAINER_VERSION)
    for part in parts:
        body += struct.pack("<Q", len(part)) + part
    with open(path, "wb") as out:
        out.write(body + hashlib.sha256(body).digest())


def exported(tmp_path, **kwargs):
    path = tmp_path / "model.popsim"
    popsim.inferenceModel(Doubler()).compileAndExport(path, torch.ones(2, 3), **kwargs)
    return path


def test_loadExecutable_runs_no_code_from_the_file(tmp_path):
    path = exported(tmp_path)
    marker = tmp_path / "pwned"
    rewrite(path, model=pickle.dumps(RunsACommand(marker)))
    model = popsim.inferenceModel(Doubler())
    model.loadExecutable(path)
    assert torch.equal(model(torch.ones(2, 3)), torch.full((2, 3), 3.0))
    assert not marker.exists()


def test_popsim_load_unpickles_only_a_trusted_file(tmp_path):
    path = exported(tmp_path)
    marker = tmp_path / "pwned"
    rewrite(path, model=pickle.dumps(RunsACommand(marker)))
    with pytest.raises(popsim.ExecutableFileError,
                       match=r"would unpickle the model the file holds, which runs any code the "
                       r"file's author put in it\. Pass trusted=True .* otherwise wrap the model "
                       r"yourself and call loadExecutable"):
        popsim.load(path)
    assert not marker.exists()
    # Told to trust it, popsim unpickles as torch.load does: the payload runs, then the
    # section is refused as what it is.
    with pytest.raises(popsim.ExecutableFileError, match="its model section does not unpickle"):
        popsim.load(path, trusted=True)
    assert marker.exists()
    buffer = io.BytesIO()
    torch.save({"model": "not a module"}, buffer)
    rewrite(path, model=buffer.getvalue())
    with pytest.raises(popsim.ExecutableFileError, match=r"its model section holds dict, not the "
                       r"model and options compileAndExport stores"):
        popsim.load(path, trusted=True)


def test_the_call_is_data_and_a_call_json_cannot_describe_is_refused_when_writing(tmp_path):
    path = exported(tmp_path, export_model=False)
    header = json.loads(sections_of(path)[0])
    assert header["call"]["leaves"] == [{"tensor": [2, 3], "dtype": "float32"}]
    assert header["training"] is False
    assert sections_of(path)[2] == b""

    class TakesAnObject(nn.Module):
        def forward(self, x, thing):
            return x + 1

    model = popsim.inferenceModel(TakesAnObject())
    with pytest.raises(popsim.ExecutableFileError, match=r"cannot hold argument 2 of the call "
                       r"\(object\)"):
        model.compileAndExport(tmp_path / "other.popsim", torch.ones(2), object())

    class Pair(typing.NamedTuple):
        first: torch.Tensor
        second: torch.Tensor

    class TakesAPair(nn.Module):
        def forward(self, pair):
            return pair.first + pair.second

    model = popsim.inferenceModel(TakesAPair())
    with pytest.raises(popsim.ExecutableFileError, match=r"cannot hold an argument of type Pair "
                       r"\(a NamedTuple\)"):
        model.compileAndExport(tmp_path / "pair.popsim", Pair(torch.ones(2), torch.ones(2)))


@pytest.mark.parametrize("change,message", [
    (lambda header: b"[]", "the header is not a JSON object"),
    (lambda header: b"{not json", "malformed header"),
    (lambda header: header.replace(b'"program_sha256": "', b'"program_sha256": "00'),
     "the program's SHA-256 is not the one its header records"),
    (lambda header: header.replace(b'"tensor": [2, 3]', b'"tensor": [-2, 3]'),
     r"a tensor of the call has shape \[-2, 3\]"),
    (lambda header: header.replace(b'"kind": "leaf"', b'"kind": "module"'),
     "a node of kind 'module'"),
    (lambda header: header.replace(b'"training": false', b'"training": "yes"'),
     "'training' is \"yes\""),
])
def test_a_crafted_header_is_an_executable_file_error(tmp_path, change, message):
    path = exported(tmp_path, export_model=False)
    # The header as Python's json.dumps spaces it (any JSON spacing reads the same).
    rewrite(path, header=change(json.dumps(json.loads(sections_of(path)[0])).encode()))
    with pytest.raises(popsim.ExecutableFileError, match=message):
        popsim.inferenceModel(Doubler()).loadExecutable(path)


def test_sections_longer_than_the_file_are_refused(tmp_path):
    path = exported(tmp_path, export_model=False)
    data = bytearray(open(path, "rb").read())
    data[12:20] = struct.pack("<Q", 2**62)
    body = bytes(data[:-32])
    open(path, "wb").write(body + hashlib.sha256(body).digest())
    with pytest.raises(popsim.ExecutableFileError, match=r"its header section claims "
                       r"4611686018427387904 bytes"):
        popsim.inferenceModel(Doubler()).loadExecutable(path)


def test_a_program_the_reader_refuses_is_an_executable_file_error(tmp_path):
    path = exported(tmp_path, export_model=False)
    program = bytearray(sections_of(path)[1])
    program[40:48] = struct.pack("<q", -1)  # inside the payload, under a valid checksum below
    payload = bytes(program[28:])
    fnv = 14695981039346656037
    for byte in payload:
        fnv = ((fnv ^ byte) * 1099511628211) % 2**64
    program[20:28] = struct.pack("<Q", fnv)
    new_program = bytes(program)
    header = json.loads(sections_of(path)[0])
    header["program_sha256"] = hashlib.sha256(new_program).hexdigest()
    rewrite(path, header=json.dumps(header).encode(), program=new_program)
    with pytest.raises(popsim.ExecutableFileError, match=r"loadExecutable\('.*model\.popsim'\): "
                       r"The compiled program is damaged or was not written by popsim"):
        popsim.inferenceModel(Doubler()).loadExecutable(path)


def test_exported_files_are_readable_by_their_owner_only(tmp_path):
    assert stat.S_IMODE(os.stat(exported(tmp_path)).st_mode) == 0o600


# The executable cache.

def cached_output(directory, counted=None):
    model = popsim.inferenceModel(Doubler(), popsim.Options().enableExecutableCaching(directory))
    return model(torch.ones(2, 3))


def only_file(directory):
    (name,) = os.listdir(directory)
    return os.path.join(directory, name)


def test_the_cache_directory_popsim_creates_is_private(tmp_path):
    cached_output(tmp_path / "new" / "cache")
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "cache").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(only_file(tmp_path / "new" / "cache")).st_mode) == 0o600


def test_a_directory_others_can_write_is_not_used(tmp_path, counted):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.warns(UserWarning, match=r"does not use the executable cache directory .*shared': "
                      r"it is writable by its group or by others \(mode 0777; `chmod go-w` it\)\. "
                      r"Another user could place programs there"):
        assert torch.equal(cached_output(shared), torch.full((2, 3), 3.0))
    assert os.listdir(shared) == []
    with warnings.catch_warnings():  # said once per directory
        warnings.simplefilter("error")
        cached_output(shared)
    assert counted == {"compile": 2, "load": 0}


class Thousands(nn.Module):
    def forward(self, x):
        return x * 2000 + 1000


def poisoned_entry(tmp_path, other=Thousands(), options=None, example=torch.ones(2, 3)):
    """The cache entry of Doubler, its program replaced by `other`'s under a forged header:
    what another user who can write the entry would leave."""
    cache = tmp_path / "cache"
    cached_output(cache)
    entry = only_file(cache)
    exported_other = tmp_path / "other.popsim"
    popsim.inferenceModel(other, options or popsim.Options()).compileAndExport(
        exported_other, example, export_model=False)
    program = sections_of(exported_other)[1]
    header = json.loads(sections_of(entry)[0])
    header["program_sha256"] = hashlib.sha256(program).hexdigest()
    rewrite(entry, header=json.dumps(header).encode(), program=program)
    return cache, entry


def test_an_entry_others_can_write_is_a_miss(tmp_path, counted):
    cache, entry = poisoned_entry(tmp_path)
    os.chmod(entry, 0o666)
    with pytest.warns(UserWarning, match=r"is writable by its group or by others \(mode 0666"):
        assert torch.equal(cached_output(cache), torch.full((2, 3), 3.0))
    assert stat.S_IMODE(os.stat(entry).st_mode) == 0o600  # replaced by this user's program
    assert torch.equal(cached_output(cache), torch.full((2, 3), 3.0))
    assert counted["load"] == 1


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_an_entry_another_user_owns_is_a_miss(tmp_path, counted):
    cache, entry = poisoned_entry(tmp_path)
    os.chown(entry, 12345, -1)
    with pytest.warns(UserWarning, match=r"is owned by user id 12345, not by this user"):
        assert torch.equal(cached_output(cache), torch.full((2, 3), 3.0))
    assert os.stat(entry).st_uid == os.getuid()


def test_a_symlinked_entry_is_a_miss_and_its_target_is_untouched(tmp_path, counted):
    cache = tmp_path / "cache"
    cached_output(cache)
    entry = only_file(cache)
    target = tmp_path / "precious"
    original = open(entry, "rb").read()
    target.write_bytes(original)
    os.unlink(entry)
    os.symlink(target, entry)
    with pytest.warns(UserWarning, match="is a symbolic link"):
        assert torch.equal(cached_output(cache), torch.full((2, 3), 3.0))
    assert not os.path.islink(entry)
    assert target.read_bytes() == original
    assert counted == {"compile": 2, "load": 0}


def test_a_program_the_compiler_refuses_is_a_miss(tmp_path, counted):
    """An entry whose program loads under other options than its key's (here: a program
    for two IPUs under a one-IPU key) is a miss, never a failed call."""
    class TwoBlocks(nn.Module):
        def forward(self, x):
            with popsim.Block("A", ipu_id=0):
                x = x * 2
            with popsim.Block("B", ipu_id=1):
                return x + 1

    cache, _ = poisoned_entry(tmp_path, TwoBlocks(), popsim.Options().deviceIterations(2),
                              torch.ones(4, 3))
    with pytest.warns(UserWarning, match=r"does not use a file: '.*\.popsim': .*Compiling the "
                      r"model again and replacing the file"):
        assert torch.equal(cached_output(cache), torch.full((2, 3), 3.0))


# Files popsim writes into directories others may reach.

def test_a_report_name_planted_as_a_symlink_is_replaced_not_followed(tmp_path):
    precious = tmp_path / "precious"
    precious.write_text("keep me")
    profiles = tmp_path / "profiles"
    model = popsim.inferenceModel(Doubler(), popsim.Options().enableProfiling(str(profiles)))
    model(torch.ones(2, 3))
    (directory,) = profiles.iterdir()
    report = directory / "report.html"
    report.unlink()
    report.symlink_to(precious)
    model(torch.ones(2, 3))  # writes report.html again
    assert precious.read_text() == "keep me"
    assert not report.is_symlink() and "<html" in report.read_text().lower()


def test_a_profile_directory_another_user_prepared_is_refused(tmp_path):
    profiles = tmp_path / "profiles"
    planted = profiles / "Doubler"
    planted.mkdir(parents=True)
    os.chmod(planted, 0o777)
    opts = popsim.Options().enableProfiling(str(profiles)).modelName("Doubler")
    with pytest.raises(popsim.OptionError, match=r"enableProfiling: .*popsim does not write "
                       r"profiles into a directory that is writable by its group or by others"):
        popsim.inferenceModel(Doubler(), opts)(torch.ones(2, 3))


def test_log_dir_files_replace_planted_links(tmp_path):
    precious = tmp_path / "precious"
    precious.write_text("keep me")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "Doubler_0.ir.txt").symlink_to(precious)
    (logs / "Doubler_1.ir.txt").symlink_to(precious)
    popsim.inferenceModel(Doubler(), popsim.Options().logDir(str(logs)))(torch.ones(2, 3))
    assert precious.read_text() == "keep me"
    os.chmod(logs, 0o777)
    with pytest.raises(popsim.OptionError, match=r"logDir: popsim does not write into .*, which "
                       r"is writable by its group or by others without the sticky bit"):
        popsim.inferenceModel(Doubler(), popsim.Options().logDir(str(logs)))(torch.ones(2, 3))


def test_ir_dumps_are_not_written_into_a_directory_others_control(tmp_path, monkeypatch):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    os.chmod(dumps, 0o777)
    monkeypatch.setenv("POPSIM_DUMP_IR", str(dumps))
    with pytest.raises(popsim.OptionError, match=r"POPSIM_DUMP_IR: popsim does not write into "
                       r".*dumps', which is writable by its group or by others"):
        popsim.inferenceModel(Doubler())(torch.ones(2, 3))
    os.chmod(dumps, 0o1777)  # as /tmp: others cannot replace what this user puts there
    popsim.inferenceModel(Doubler())(torch.ones(2, 3))
    assert any(dumps.iterdir())


# Small inputs that reached internals.

@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e20", "0", "-3", "soon"])
def test_the_distributed_timeout_is_a_bounded_number_of_seconds(monkeypatch, value):
    from popsim.device import process_group
    monkeypatch.setenv("POPSIM_DISTRIBUTED_TIMEOUT", value)
    with pytest.raises(popsim.OptionError, match=r"POPSIM_DISTRIBUTED_TIMEOUT is .*: set it to a "
                       r"number of seconds above 0 and at most 86400 \(a day\)"):
        process_group.timeout()


@pytest.mark.parametrize("name", ["__init__", "__setattr__", "_session", "", "a..b", 3])
def test_popart_option_names_are_option_names(name):
    with pytest.raises(popsim.OptionError, match="Options._Popart.set expects a PopART option "
                       "name"):
        popsim.Options()._Popart.set(name, 1)


def test_a_streamed_width_beyond_the_input_is_an_input_error():
    graph = popsim._C.parse_graph("graph(%x: f32[2]) {\n  %y: f32[2] = relu(%x)\n  return (%y)\n}\n")
    with pytest.raises(popsim.InputError, match=r"input 0 \(f32\[2\]\) can stream at most 4 bytes "
                       r"per element \(0: its own width\), got 1099511627776"):
        graph.set_input_streamed_element_bytes(0, 2**40)
