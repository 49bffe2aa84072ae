"""The checker/candidate protocol: values cross as data, and what arrives is checked before it is used."""

from __future__ import annotations

import json
import os
from collections import namedtuple

import pytest
import torch

from trialtui.runner import wire
from trialtui.runner.wire import Channel, Opaque, WireError


@pytest.fixture
def pair(tmp_path):
    dirs = [tmp_path / "fast", tmp_path / "spill"]
    for d in dirs:
        d.mkdir()
    r, w = os.pipe()
    sender = Channel(None, os.fdopen(w, "wb"), dirs, "a")
    receiver = Channel(os.fdopen(r, "rb"), None, dirs, "b")
    return sender, receiver, dirs


def test_nested_values_cross_as_data(pair):
    sender, receiver, dirs = pair
    value = {"x": (torch.randn(3, 5).to(torch.bfloat16), [torch.arange(4), 2, 2.5, float("nan"), None, "s"]),
             "empty": torch.zeros(0, 7), "scalar": torch.tensor(3.0), "strided": torch.randn(6, 4).t()}
    sender.send({"op": "t"}, value)
    header, got = receiver.recv()
    assert header == {"op": "t"}
    assert torch.equal(got["x"][0], value["x"][0]) and got["x"][0].dtype == torch.bfloat16
    assert torch.equal(got["x"][1][0], value["x"][1][0]) and got["x"][1][1:3] == [2, 2.5]
    assert got["x"][1][3] != got["x"][1][3] and got["x"][1][4:] == [None, "s"]
    assert got["empty"].shape == (0, 7) and torch.equal(got["strided"], value["strided"])
    assert not any(any(d.iterdir()) for d in dirs)  # the receiver removes what it read


def test_a_dict_keyed_by_numbers_crosses_as_itself(pair):
    """A reference keyed its outputs by layer number: the dict crossed as an Opaque, and no candidate could pass."""
    sender, receiver, _ = pair
    sender.send({}, {0: torch.ones(2), 1: {None: 2, True: "t", 2.5: 3}})
    _, got = receiver.recv()
    assert set(got) == {0, 1} and torch.equal(got[0], torch.ones(2)) and got[1] == {None: 2, True: "t", 2.5: 3}
    sender.send({}, {(1, 2): torch.ones(1)})  # a key JSON cannot carry still crosses as the dict's type name
    assert receiver.recv()[1] == Opaque("dict")


def test_objects_cross_only_as_their_type_name(pair):
    sender, receiver, _ = pair

    class Always:
        def __eq__(self, other):
            return True

    sender.send({}, [Always(), namedtuple("P", "a")(torch.ones(2))])
    _, got = receiver.recv()
    assert got[0] == Opaque("Always") and isinstance(got[1], tuple)


def test_spills_to_the_second_directory_when_the_first_lacks_room(pair, monkeypatch):
    sender, receiver, dirs = pair
    usage = wire.shutil.disk_usage
    monkeypatch.setattr(wire.shutil, "disk_usage", lambda p: usage(p)._replace(free=0) if p == dirs[0] else usage(p))
    sender.send({}, torch.ones(1000))
    assert [p.name for p in dirs[1].iterdir()] == ["a-0.bin"] and not any(dirs[0].iterdir())
    _, got = receiver.recv()
    assert torch.equal(got, torch.ones(1000))


@pytest.mark.parametrize("meta, error", [
    ({"dtype": "object", "shape": [2], "files": [[0, "a.bin"]]}, "unknown dtype"),
    ({"dtype": "float32", "shape": [-1], "files": [[0, "a.bin"]]}, "bad shape"),
    ({"dtype": "float32", "shape": [2], "files": [[0, "../../etc/passwd"]]}, "bad file name"),
    ({"dtype": "float32", "shape": [2], "files": [[0, "missing.bin"]]}, "missing"),
    ({"dtype": "float32", "shape": [10**6, 10**6], "files": [[0, "small.bin"]]}, "hold 8 bytes"),
    ({"dtype": "float32", "shape": [1], "files": [[0, "small.bin"]]}, "hold 8 bytes, its description says 4$"),
    ({"dtype": "float32", "shape": [2], "files": [[0, "link.bin"]]}, "not a regular file"),
    ({"dtype": "float32", "shape": [2], "files": [[7, "small.bin"]]}, "directory index"),
    ({"dtype": "float32", "shape": [2], "files": "small.bin"}, "list of files"),
])
def test_forged_descriptions_are_rejected(tmp_path, meta, error):
    d = tmp_path / "x"
    d.mkdir()
    (d / "small.bin").write_bytes(b"\0" * 8)
    os.symlink("/etc/hostname", d / "link.bin")
    r, w = os.pipe()
    os.write(w, (json.dumps({"ok": True, "payload": {"t": 0}, "tensors": [meta]}) + "\n").encode())
    os.close(w)
    with pytest.raises(WireError, match=error):
        Channel(os.fdopen(r, "rb"), None, [d], "b").recv()


def test_large_tensors_cross_in_files_under_the_file_size_limit(pair, monkeypatch):
    sender, receiver, dirs = pair
    monkeypatch.setattr(wire, "CHUNK_BYTES", 1000)
    value = torch.randn(1001)  # 4004 bytes: five files
    sender.send({}, value)
    assert sum(1 for _ in dirs[0].iterdir()) == 5
    _, got = receiver.recv()
    assert torch.equal(got, value)


def test_payload_naming_a_tensor_never_sent_is_rejected(tmp_path):
    r, w = os.pipe()
    os.write(w, b'{"payload": {"t": 3}, "tensors": []}\n')
    os.close(w)
    with pytest.raises(WireError, match="not sent"):
        Channel(os.fdopen(r, "rb"), None, [tmp_path], "b").recv()


def test_a_planted_link_is_never_written_through(pair, tmp_path):
    sender, _, dirs = pair
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    for directory in dirs:
        os.symlink(victim, directory / "a-0.bin")
    with pytest.raises(WireError, match="tampered"):
        sender.send({}, torch.ones(4))
    assert victim.read_text() == "untouched"
