"""Distributed checkpoints (flow.save / flow.load of global tensors, oneflowlike/_checkpoint.py):
saved on 4 ranks with ZeRO sharding, loaded resharded on 2 ranks tensor parallel, on 3 ranks
(uneven shards), and in one process, and training goes on exactly as if never stopped; saves
are atomic; damaged checkpoints raise naming the file."""

import json
import os
import re
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import oneflowlike as flow
from _launch import clean_env, json_lines, launch, worker

B, S = flow.sbp.broadcast, flow.sbp.split


def _run(nproc, *args):
    if nproc == 1:
        import subprocess

        p = subprocess.run(
            [sys.executable, worker("checkpoint_worker.py"), *args],
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        return json_lines(p.stdout)[0]
    r = launch(
        ["--nproc_per_node", str(nproc)], [worker("checkpoint_worker.py"), *args], timeout=300
    )
    assert r.returncode == 0, r
    return json_lines(r.stdout)[0]


@pytest.mark.multiprocess
def test_zero_on_4_ranks_resumes_tensor_parallel_on_2_zero_on_3_and_in_one_process(tmp_path):
    saved = _run(4, "save", str(tmp_path / "ckpt"), "zero")
    assert saved["reads_own_shards"] and saved["reloads_equal"]
    files = sorted(os.listdir(tmp_path / "ckpt"))
    assert files[0] == "index.json" and len(files) == 5
    for nproc, layout, state_sbp in [
        (2, "tp", {"(oneflowlike.sbp.split(axis=0),)", "(oneflowlike.sbp.split(axis=1),)"}),
        (3, "zero", {"(oneflowlike.sbp.split(axis=0),)"}),
        (1, "single", {"local"}),
    ]:
        resumed = _run(nproc, "load", str(tmp_path / "ckpt"), layout)
        assert resumed["step"] == 3
        assert state_sbp <= set(resumed["state_sbp"]), resumed["state_sbp"]
        np.testing.assert_allclose(resumed["losses"], saved["losses"], rtol=1e-5)


def _state():
    place = flow.placement("cpu", ranks=[0])
    flow.manual_seed(0)
    return {
        "w": flow.randn(5, 3).to_global(place, S(0)),
        "b": flow.randn(3).to_global(place, B),
        "h": flow.randn(2, 2).to(flow.bfloat16).to_global(place, S(1)),
        "steps": [flow.tensor(7), 3.5, "text"],
    }


def test_a_checkpoint_round_trips_every_layout_and_structure(tmp_path):
    state = _state()
    flow.save(state, tmp_path / "c")
    back = flow.load(tmp_path / "c")  # without `like`: whole local tensors
    for k in ("w", "b", "h"):
        assert not back[k].is_global and back[k].dtype == state[k].dtype
        np.testing.assert_array_equal(back[k].float().numpy(), state[k].float().numpy())
    assert back["steps"][0].item() == 7 and back["steps"][1:] == [3.5, "text"]
    like = flow.load(tmp_path / "c", like=state)
    assert like["w"].is_global and like["w"].sbp == state["w"].sbp
    np.testing.assert_array_equal(like["w"].numpy(), state["w"].numpy())
    index = json.loads((tmp_path / "c" / "index.json").read_text())
    assert index["tensors"]["w"]["shape"] == [5, 3] and index["world_size"] == 1


def test_a_save_that_dies_leaves_the_previous_checkpoint_loadable(tmp_path, monkeypatch):
    state = _state()
    flow.save(state, tmp_path / "c")
    before = sorted(os.listdir(tmp_path / "c"))
    newer = dict(state, w=(state["w"] * 2))
    real_replace = os.replace

    def dies_at_commit(src, dst):
        if str(dst).endswith("index.json"):
            raise KeyboardInterrupt("killed")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", dies_at_commit)
    with pytest.raises(KeyboardInterrupt):
        flow.save(newer, tmp_path / "c")
    monkeypatch.setattr(os, "replace", real_replace)
    np.testing.assert_array_equal(flow.load(tmp_path / "c")["w"].numpy(), state["w"].numpy())
    flow.save(newer, tmp_path / "c")  # the next save clears what the dead one left
    assert len(os.listdir(tmp_path / "c")) == len(before)
    np.testing.assert_array_equal(flow.load(tmp_path / "c")["w"].numpy(), newer["w"].numpy())


def test_damaged_checkpoints_raise_naming_the_file(tmp_path):
    flow.save(_state(), tmp_path / "c")
    shard = next(p for p in (tmp_path / "c").iterdir() if p.name.startswith("shard-"))
    data = shard.read_bytes()
    shard.write_bytes(data[:-10])
    with pytest.raises(ValueError, match=rf"{shard.name}.*truncated"):
        flow.load(tmp_path / "c")
    shard.write_bytes(b"\x01" * 12)
    with pytest.raises(ValueError, match=rf"{shard.name}"):
        flow.load(tmp_path / "c")
    shard.unlink()
    with pytest.raises(FileNotFoundError, match=rf"{shard.name}.*missing"):
        flow.load(tmp_path / "c")
    (tmp_path / "c" / "index.json").write_text("{")
    with pytest.raises(ValueError, match="index.json is not JSON"):
        flow.load(tmp_path / "c")


def test_loading_into_a_tensor_of_another_shape_names_it(tmp_path):
    state = _state()
    flow.save(state, tmp_path / "c")
    place = flow.placement("cpu", ranks=[0])
    other = dict(state, w=flow.zeros(4, 3).to_global(place, S(0)))
    with pytest.raises(ValueError, match=r"'w' is \(5, 3\) in the checkpoint but \(4, 3\)"):
        flow.load(tmp_path / "c", like=other)


def _rewrite_shard_header(path, change):
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    change(header)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + length :])


def _rename_w_piece(path):
    index = json.loads((path / "index.json").read_text())
    index["tensors"]["w"]["pieces"][0]["key"] = "nope"
    (path / "index.json").write_text(json.dumps(index))


@pytest.mark.parametrize(
    "damage, message",
    [
        (  # refused by the Python parser before the C++ reader replaced it, and by that reader
            lambda c, shard: _rewrite_shard_header(
                shard, lambda h: h["__metadata__"].update({"epoch": 3})
            ),
            r"{shard}: __metadata__ must map strings to strings",
        ),
        (lambda c, shard: _rename_w_piece(c), r"{shard} has no tensor 'nope'"),  # as both did
        (  # bytes no entry claims (which the Python parser let through)
            lambda c, shard: shard.write_bytes(shard.read_bytes() + b"\0" * 8),
            r"{shard}: 8 of the \d+ data bytes belong to no tensor",
        ),
    ],
    ids=["metadata-not-strings", "key-not-in-shard", "trailing-bytes"],
)
def test_a_damaged_shard_or_a_key_it_lacks_raises_naming_the_shard(tmp_path, damage, message):
    flow.save(_state(), tmp_path / "c")
    shard = next(p for p in (tmp_path / "c").iterdir() if p.name.startswith("shard-"))
    damage(tmp_path / "c", shard)
    with pytest.raises(ValueError, match=message.format(shard=re.escape(shard.name))):
        flow.load(tmp_path / "c")


def test_a_missing_checkpoint_index_raises_file_not_found(tmp_path):
    (tmp_path / "c").mkdir()
    with pytest.raises(FileNotFoundError, match=r"c/index\.json"):
        flow._checkpoint.load(str(tmp_path / "c"))
