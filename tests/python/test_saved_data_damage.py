"""Saved data that was damaged after the save is refused, never loaded as other values (issue 27):
each tensor's checksum (over its dtype, shape and bytes) in flow.save's files, index.json checked
against its shard files and for pieces that tile each tensor, temporary files of killed saves
removed by the next save, malformed index.json files raising ValueError naming them."""

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import oneflowlike as flow
from _launch import clean_env, json_lines, launch, worker
from oneflowlike._safetensors import HOST as _HOST
from oneflowlike.serialization import load, save

B, S = flow.sbp.broadcast, flow.sbp.split


def read_header(path):
    data = open(path, "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]), 8 + length


def rewrite_header(path, change):
    """Applies change to the header dict of a safetensors file and writes it back (the header
    length fixed up, the data kept)."""
    data = open(path, "rb").read()
    header, start = read_header(path)
    change(header)
    text = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data[start:])


def flip_byte(path, tensor, at=1):
    """Flips one bit of byte `at` of a tensor's data in a safetensors file."""
    header, start = read_header(path)
    data = bytearray(open(path, "rb").read())
    data[start + header[tensor]["data_offsets"][0] + at] ^= 0x10
    open(path, "wb").write(bytes(data))


def shard(path, rank, world):
    return next(path.glob(f"shard-{rank:05d}-of-{world:05d}.*.safetensors"))


# ---- single files -------------------------------------------------------------------------------


def test_a_flipped_byte_in_a_saved_tensor_raises_naming_the_file_and_tensor(tmp_path):
    path = tmp_path / "m.safetensors"
    save({"w": flow.randn(4, 5), "b": flow.randn(5)}, path)
    flip_byte(path, "b")
    with pytest.raises(
        ValueError, match=r"m\.safetensors: tensor 'b'.*fails its checksum.*damaged"
    ):
        load(path)


def test_a_relabelled_dtype_in_a_header_raises(tmp_path):
    path = tmp_path / "m.safetensors"
    save({"w": flow.tensor([1.5, -2.0, 3.25])}, path)
    data = open(path, "rb").read()
    assert data.count(b'"F32"') == 1
    path.write_bytes(data.replace(b'"F32"', b'"I32"'))  # the same length: a valid header
    with pytest.raises(
        ValueError, match=r"m\.safetensors: tensor 'w' \(\(3,\) int32\) fails its checksum"
    ):
        load(path)
    with pytest.raises(RuntimeError, match=r"m\.safetensors: tensor 'w'.*checksum"):
        flow._C.read_safetensors(str(path))  # the C++ reader too


def test_the_checksums_are_written_in_the_documented_format(tmp_path):
    save({"w": flow.ones(2, 3), "s": flow.tensor(2, dtype=flow.int64)}, tmp_path / "m.st")
    header, start = read_header(tmp_path / "m.st")
    sums = json.loads(header["__metadata__"]["ofl.crc32"])
    data = (tmp_path / "m.st").read_bytes()[start:]
    for name, prefix in [("w", b"F32:2,3"), ("s", b"I64:")]:
        begin, end = header[name]["data_offsets"]
        assert sums[name] == f"{zlib.crc32(data[begin:end], zlib.crc32(prefix)):08x}"


def test_the_cpp_reader_checks_the_same_checksums(tmp_path):
    path = tmp_path / "m.safetensors"
    save({"w": flow.randn(3, 4), "b": flow.randn(4)}, path)
    np.testing.assert_array_equal(
        flow._C.read_safetensors(str(path))["b"].numpy(), load(path)["b"].numpy()
    )
    flip_byte(path, "w")
    with pytest.raises(RuntimeError, match=r"m\.safetensors: tensor 'w'.*checksum.*damaged"):
        flow._C.read_safetensors(str(path))


def test_files_of_other_writers_without_checksums_still_load(tmp_path):
    data = np.arange(6, dtype="<f4")
    for i, metadata in enumerate([None, {"format": "pt"}]):
        header = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}
        if metadata:
            header["__metadata__"] = metadata
        text = json.dumps(header).encode()
        path = tmp_path / f"ext{i}.safetensors"
        path.write_bytes(struct.pack("<Q", len(text)) + text + data.tobytes())
        np.testing.assert_array_equal(load(path)["w"].numpy(), data.reshape(2, 3))


def test_a_tensor_without_a_checksum_in_a_file_that_has_them_raises(tmp_path):
    path = tmp_path / "m.safetensors"
    save({"w": flow.ones(2), "b": flow.ones(2)}, path)

    def drop_b(header):
        sums = json.loads(header["__metadata__"]["ofl.crc32"])
        del sums["b"]
        header["__metadata__"]["ofl.crc32"] = json.dumps(sums)

    rewrite_header(path, drop_b)
    with pytest.raises(ValueError, match=r"m\.safetensors.*'b' has no checksum"):
        load(path)
    rewrite_header(path, lambda h: h["__metadata__"].update({"ofl.crc32": "[1]"}))
    with pytest.raises(ValueError, match=r"m\.safetensors: the checksums in __metadata__"):
        load(path)


# ---- distributed checkpoints --------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved_on_2_ranks(tmp_path_factory):
    """A checkpoint 2 ranks saved: w (6, 4) S(0), b (4,) B, h (4, 6) bfloat16 S(1), a step."""
    path = tmp_path_factory.mktemp("two_ranks") / "c"
    r = launch(["--nproc_per_node", "2"], [worker("checkpoint_worker.py"), "small-save", str(path)])
    assert r.returncode == 0, r
    return path


@pytest.fixture
def ckpt(saved_on_2_ranks, tmp_path):
    """A copy of it, to damage."""
    return shutil.copytree(saved_on_2_ranks, tmp_path / "c")


def load_on_2_ranks(path):
    r = launch(["--nproc_per_node", "2"], [worker("checkpoint_worker.py"), "small-load", str(path)])
    assert r.returncode == 0, r
    return {rep["rank"]: rep for rep in json_lines(r.stdout)}


def edit_index(path, change):
    index = json.loads((path / "index.json").read_text())
    change(index)
    (path / "index.json").write_text(json.dumps(index))


@pytest.mark.multiprocess
def test_a_flipped_byte_in_one_ranks_shard_raises_naming_the_file_and_tensor(ckpt):
    damaged = shard(ckpt, 1, 2)
    flip_byte(damaged, "w", at=5)
    with pytest.raises(
        ValueError, match=rf"{damaged.name}: tensor 'w'.*fails its checksum.*damaged"
    ):
        flow.load(ckpt)
    reports = load_on_2_ranks(ckpt)  # each rank reads only its own shard of w
    assert reports[1]["error"].startswith("ValueError") and damaged.name in reports[1]["error"]
    assert "tensor 'w' ((3, 4) float32) fails its checksum" in reports[1]["error"]
    # rank 0 read no damaged byte (loading is collective: it fails with its peer, not alone)
    assert "checksum" not in (reports[0]["error"] or "")


@pytest.mark.multiprocess
def test_a_relabelled_dtype_in_index_json_raises_naming_the_shard_and_tensor(ckpt):
    edit_index(ckpt, lambda index: index["tensors"]["w"].update(dtype="int32"))
    with pytest.raises(ValueError, match=r"shard-0000\d-of-00002.*'w' is F32 \[3, 4\].*I32"):
        flow.load(ckpt)


@pytest.mark.multiprocess
def test_a_relabelled_dtype_in_a_shard_header_raises(ckpt):
    damaged = shard(ckpt, 0, 2)
    rewrite_header(damaged, lambda header: header["w"].update(dtype="I32"))
    # The checksum covers the dtype the header gives: the relabelled entry fails it.
    with pytest.raises(
        ValueError, match=rf"{damaged.name}: tensor 'w' \(\(3, 4\) int32\) fails its"
    ):
        flow.load(ckpt)


@pytest.mark.multiprocess
def test_a_duplicated_piece_in_index_json_raises_instead_of_leaving_zeros(ckpt):
    def duplicate(index):
        pieces = index["tensors"]["w"]["pieces"]
        assert len(pieces) == 2  # rows [0, 3) and [3, 6): now rows [0, 3) twice
        pieces[1] = dict(pieces[0])

    edit_index(ckpt, duplicate)
    with pytest.raises(ValueError, match=r"index\.json: tensor 'w': pieces 0 and 1 overlap"):
        flow.load(ckpt)
    edit_index(ckpt, lambda index: index["tensors"]["w"]["pieces"].append({}))
    with pytest.raises(ValueError, match=r"index\.json: tensor 'w': piece 2"):
        flow.load(ckpt)


def _tiling_error(shape, pieces):
    """global/checkpoint.h's tiling_error, None where the pieces tile the shape."""
    to_int = [[[int(b), int(e)] for b, e in ranges] for ranges in pieces]
    return flow._C.checkpoint_tiling_error([int(n) for n in shape], to_int) or None


def test_pieces_must_tile_the_tensor_exactly():
    assert _tiling_error([6, 4], [[[0, 3], [0, 4]], [[3, 6], [0, 4]]]) is None
    assert _tiling_error([], [[]]) is None and _tiling_error([0, 3], []) is None
    # as many elements as the tensor, but row 2 twice and row 4 not at all
    pieces = [[[0, 3], [0, 3]], [[2, 4], [0, 3]]]
    assert _tiling_error([5, 3], pieces) == "pieces 0 and 1 overlap"
    assert "hold 30 elements" in _tiling_error([5, 3], [[[0, 5], [0, 3]]] * 2)
    assert "hold 2 elements" in _tiling_error([], [[], []])
    rng = np.random.RandomState(0)  # against counting, cell by cell, on random pieces
    for _ in range(300):
        shape = list(rng.randint(1, 5, rng.randint(1, 4)))
        cuts = [sorted({0, n, *rng.randint(0, n + 1, 2)}) for n in shape]
        pieces = [  # every cell of a grid, then maybe some moved or stretched
            [[c[i], c[i + 1]] for c, i in zip(cuts, idx)]
            for idx in np.ndindex(*[len(c) - 1 for c in cuts])
        ]
        for _ in range(rng.randint(0, 3)):
            axis, k = rng.randint(len(shape)), rng.randint(len(pieces))
            b = rng.randint(0, shape[axis])
            pieces[k] = [
                r if d != axis else [b, rng.randint(b + 1, shape[axis] + 1)]
                for d, r in enumerate(pieces[k])
            ]
        count = np.zeros(shape, int)
        for ranges in pieces:
            count[tuple(slice(b, e) for b, e in ranges)] += 1
        assert (_tiling_error(shape, pieces) is None) == (count == 1).all(), (shape, pieces)


@pytest.mark.multiprocess
def test_checkpoint_shards_without_checksums_still_load(ckpt):
    for rank in range(2):
        rewrite_header(shard(ckpt, rank, 2), lambda header: header.pop("__metadata__", None))
    loaded = flow.load(ckpt)
    assert loaded["w"].shape == (6, 4) and loaded["step"].item() == 7


GOOD = {"format": "oneflowlike-checkpoint", "format_version": 1, "world_size": 1, "tree": []}


def _tensor(**change):
    entry = {"dtype": "float32", "shape": [2], "pieces": []}
    entry["pieces"].append({"file": "shard-00000-of-00001.x.safetensors", "key": "w"})
    entry["pieces"][0]["ranges"] = [[0, 2]]
    entry.update(change)
    return {"tensors": {"w": entry}}


@pytest.mark.parametrize(
    "index, message",
    [
        (b"\xff\xfe\x00garbage", "is not JSON"),
        (b'{"format": "oneflowlike-checkpoint", "tens', "is not JSON"),
        ([], "is not a JSON object but a list"),
        (dict(GOOD, format_version="1"), "format version '1'"),
        (GOOD, "has no 'tensors'"),
        (dict(GOOD, tensors=[]), "'tensors' is a list"),
        (dict(GOOD, tensors={"w": 5}), "tensor 'w' is not an object"),
        (dict(GOOD, tensors={"w": {"dtype": "float32"}}), "tensor 'w' is not an object with"),
        (dict(GOOD, **_tensor(dtype=32)), "tensor 'w' has an unsupported dtype 32"),
        (dict(GOOD, **_tensor(shape="2")), "tensor 'w' has an invalid shape '2'"),
        (dict(GOOD, **_tensor(shape=[True])), "tensor 'w' has an invalid shape"),
        (dict(GOOD, **_tensor(pieces={})), "tensor 'w': pieces is a dict"),
        (dict(GOOD, **_tensor(pieces=[5])), "tensor 'w': piece 0 is not an object"),
        (
            dict(GOOD, **_tensor(pieces=[{"file": "../x", "key": "w", "ranges": [[0, 2]]}])),
            "names '../x'",
        ),
        (dict(GOOD, **_tensor(pieces=[{"file": "f", "key": 1, "ranges": [[0, 2]]}])), "key 1"),
        (dict(GOOD, **_tensor(pieces=[{"file": "f", "key": "w", "ranges": [0, 2]}])), "ranges"),
        (dict(GOOD, **_tensor(pieces=[{"file": "f", "key": "w", "ranges": [[0, 3]]}])), "inside"),
        (dict(GOOD, **_tensor(pieces=[{"file": "f", "key": "w", "ranges": [[0, "2"]]}])), "ranges"),
        (dict(GOOD, tensors={}, tree={"__dict__": 5}), "stored dict"),
        (dict(GOOD, tensors={}, tree={"__tuple__": 5}), "stored structure is malformed"),
        (dict(GOOD, tensors={}, tree={"__tensor__": "w"}), "missing tensor 'w'"),
    ],
)
def test_a_malformed_index_raises_value_error_naming_it(tmp_path, index, message):
    (tmp_path / "c").mkdir()
    text = index if isinstance(index, bytes) else json.dumps(index).encode()
    (tmp_path / "c" / "index.json").write_bytes(text)
    with pytest.raises(ValueError, match=rf"index\.json.*{message}"):
        flow.load(tmp_path / "c")


def test_an_index_nested_100000_deep_raises_value_error_naming_it(tmp_path):
    """Refused by the Python parser (its RecursionError) before the C++ reader replaced it, and
    by that reader while parsing, before a recursive copy could exhaust the stack."""
    (tmp_path / "c").mkdir()
    deep = b'{"tree": ' + b"[" * 100_000 + b"]" * 100_000 + b', "tensors": {}}'
    (tmp_path / "c" / "index.json").write_bytes(deep)
    with pytest.raises(ValueError, match=r"index\.json nests deeper than 200 levels"):
        flow.load(tmp_path / "c")


# ---- temporary files of killed saves ------------------------------------------------------------

KILLED_SAVE = """
import os, signal, sys
import oneflowlike as flow
path, kind, when, value = sys.argv[1:]
real = os.replace

def replace(src, dst):  # killed putting any file in place, or index.json
    if when == "replace" or (when == "commit" and os.path.basename(dst) == "index.json"):
        os.kill(os.getpid(), signal.SIGKILL)
    real(src, dst)

os.replace = replace
w = flow.full((64, 64), float(value))
if kind == "checkpoint":
    w = w.to_global(flow.placement("cpu", ranks=[0]), flow.sbp.split(0))
flow.save({"w": w}, path)
"""


def save_in_a_process(path, kind, when=None, value=1.0):
    """Saves in another process, which kills itself at `when` (or ends); returns its pid."""
    args = [str(path), kind, str(when), str(value)]
    p = subprocess.Popen([sys.executable, "-c", KILLED_SAVE, *args], env=clean_env())
    assert p.wait(timeout=120) == (0 if when is None else -9)
    return p.pid


@pytest.fixture
def live_pid():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield p.pid
    p.kill()
    p.wait()


@pytest.mark.multiprocess
def test_a_save_removes_the_temporary_files_of_killed_saves_of_its_path(tmp_path, live_pid):
    path = tmp_path / "m.safetensors"
    for _ in range(3):  # each removes the one before's: they no longer pile up
        dead = save_in_a_process(path, "file", "replace")
        left = os.listdir(tmp_path)
        assert len(left) == 1 and left[0].startswith(f".m.safetensors.{_HOST}-{dead}-"), left
    others = [
        f".m.safetensors.{_HOST}-{live_pid}-{'a' * 16}.tmp",  # a save in progress elsewhere
        f".m.safetensors.{int(_HOST, 16) ^ 1:08x}-{dead}-{'b' * 16}.tmp",  # another host's
        f".other.safetensors.{_HOST}-{dead}-{'c' * 16}.tmp",  # another file's
        ".m.safetensors.backup",
        "notes.txt",
    ]
    for name in others:
        (tmp_path / name).write_bytes(b"x")
    save({"w": flow.ones(2)}, path)
    assert sorted(os.listdir(tmp_path)) == sorted(others + ["m.safetensors"])
    np.testing.assert_array_equal(load(path)["w"].numpy(), [1.0, 1.0])


@pytest.mark.multiprocess
def test_a_checkpoint_save_removes_what_killed_saves_left_and_keeps_live_ones(tmp_path, live_pid):
    path = tmp_path / "ckpt"
    save_in_a_process(path, "checkpoint", value=4.0)  # committed; that process has ended since
    committed = set(os.listdir(path))
    dead = save_in_a_process(path, "checkpoint", "replace")  # leaves its shard's temporary
    killed_in_shard = set(os.listdir(path)) - committed
    assert len(killed_in_shard) == 1 and killed_in_shard.pop().endswith(".tmp")
    save_in_a_process(path, "checkpoint", "commit")  # leaves a shard, and the index aside
    left = set(os.listdir(path)) - committed
    assert len(left) == 2 and not killed_in_shard & left  # that save cleared the first one's
    np.testing.assert_array_equal(flow.load(path)["w"].numpy(), np.full((64, 64), 4.0))

    live = f"{'1' * 16}-{_HOST}-{live_pid}"  # a save in progress in another process
    foreign = f"{'2' * 16}-{int(_HOST, 16) ^ 1:08x}-{dead}"  # another host's: cannot tell
    others = [f"shard-00000-of-00002.{live}.safetensors", f".index.json.{live}.tmp"]
    others += [f"shard-00001-of-00002.{foreign}.safetensors", "notes.txt", "shard-notes.txt"]
    for name in others:
        (path / name).write_bytes(b"x")
    place = flow.placement("cpu", ranks=[0])
    flow.save({"w": flow.full((64, 64), 9.0).to_global(place, S(0))}, path)
    mine = {f for f in os.listdir(path) if f.startswith("shard-00000-of-00001.")}
    assert sorted(os.listdir(path)) == sorted(others + ["index.json", *mine]) and len(mine) == 1
    np.testing.assert_array_equal(flow.load(path)["w"].numpy(), np.full((64, 64), 9.0))


@pytest.mark.multiprocess
def test_a_checkpoint_save_removes_a_dead_ranks_temporary_while_its_rank_0_lives(
    tmp_path, live_pid
):
    """Rank 1 of a save killed writing its shard while that save's rank 0 still runs (waiting at
    the barrier, or still being stopped): its temporary was kept as long as rank 0 lived, and
    nothing looked again after. Only its writer could ever put it in place."""
    path = tmp_path / "ckpt"
    place = flow.placement("cpu", ranks=[0])
    flow.save({"w": flow.full((64, 64), 4.0).to_global(place, S(0))}, path)
    token = f"{'3' * 16}-{_HOST}-{live_pid}"  # that save's rank 0 is live_pid
    shard_1 = path / f"shard-00001-of-00002.{token}.safetensors"
    save_in_a_process(shard_1, "file", "replace")  # rank 1, killed putting its shard in place
    dead = [n for n in os.listdir(path) if n.endswith(".tmp")]
    assert len(dead) == 1 and dead[0].startswith(f".{shard_1.name}.{_HOST}-"), dead
    shard_0 = path / f"shard-00000-of-00002.{token}.safetensors"  # rank 0's, finished
    shard_0.write_bytes(b"x")
    flow.save({"w": flow.full((64, 64), 9.0).to_global(place, S(0))}, path)
    left = os.listdir(path)
    assert dead[0] not in left and shard_0.name in left, left
    np.testing.assert_array_equal(flow.load(path)["w"].numpy(), np.full((64, 64), 9.0))
