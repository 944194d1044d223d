"""flow.save / flow.load: the safetensors layout, round trips and malformed files."""

import io
import json
import os
import struct

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import nn, optim
from oneflowlike.serialization import load, save

SAMPLES = {
    "float32": [[1.5, -2.25, 3.0e-8], [1e30, 0.0, -0.0]],
    "float64": [[1.0 / 3.0, -1e300, 5e-324]],
    "float16": [[1.0, -2.5, 65504.0, 0.000061035]],
    "bfloat16": [[1.0, -2.0, 3.140625, 2.0**100]],
    "int8": [-128, 0, 127],
    "uint8": [0, 1, 255],
    "int32": [[-(2**31), 2**31 - 1], [0, 7]],
    "int64": [-(2**63), 2**63 - 1, 42],
    "bool": [[True, False], [False, True]],
}
CODES = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16", "int8": "I8"}
CODES.update({"uint8": "U8", "int32": "I32", "int64": "I64", "bool": "BOOL"})


def values(tensor):
    if tensor.dtype in (flow.float16, flow.bfloat16):
        return tensor.float().numpy()
    return tensor.numpy()


def read_header(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]), data[8 + length :], length


def write_raw(path, header, payload=b""):
    header_bytes = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)) + header_bytes + payload)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_round_trip_preserves_values_dtype_and_shape_for_every_dtype(tmp_path, name):
    dtype = getattr(flow, name)
    if name == "bfloat16":  # numpy has no bfloat16; these values are exact in it
        expected = np.array(SAMPLES[name], np.float32)
        tensor = flow.tensor(SAMPLES[name], dtype=dtype)
    else:
        expected = np.array(SAMPLES[name], getattr(np, name if name != "bool" else "bool_"))
        tensor = flow.from_numpy(expected)
    save({"x": tensor}, tmp_path / "t.safetensors")
    loaded = load(tmp_path / "t.safetensors")["x"]
    assert loaded.dtype == dtype and loaded.shape == tensor.shape
    np.testing.assert_array_equal(values(loaded), expected)
    header, _, _ = read_header(tmp_path / "t.safetensors")
    assert header["x"]["dtype"] == CODES[name]
    assert header["x"]["shape"] == list(tensor.shape)


def test_flat_state_dict_is_a_plain_aligned_safetensors_file(tmp_path):
    path = tmp_path / "model.safetensors"
    save({"a": flow.ones(2, 3), "b": flow.zeros(4, dtype=flow.int64)}, path)
    header, payload, length = read_header(path)
    assert (8 + length) % 8 == 0
    assert list(header.pop("__metadata__")) == ["ofl.crc32"]  # the checksums only
    assert header["a"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    assert header["b"] == {"dtype": "I64", "shape": [4], "data_offsets": [24, 56]}
    assert len(payload) == 56
    np.testing.assert_array_equal(np.frombuffer(payload[:24], "<f4"), np.ones(6))
    assert list(load(path)) == ["a", "b"]


def test_bfloat16_is_stored_as_the_upper_half_of_float32(tmp_path):
    save({"x": flow.tensor([1.0, -2.0], dtype=flow.bfloat16)}, tmp_path / "b.safetensors")
    _, payload, _ = read_header(tmp_path / "b.safetensors")
    assert payload == b"\x80\x3f\x00\xc0"


def test_scalar_and_empty_tensors_round_trip(tmp_path):
    save({"s": flow.zeros(()) + 3.5, "e": flow.zeros(0, 3)}, tmp_path / "x.safetensors")
    loaded = load(tmp_path / "x.safetensors")
    assert loaded["s"].shape == () and loaded["s"].item() == 3.5
    assert loaded["e"].shape == (0, 3)


def test_reads_a_safetensors_file_written_by_hand(tmp_path):
    data = np.arange(6, dtype="<f4").reshape(2, 3)
    header = {"__metadata__": {"format": "pt"}}
    header["w"] = {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    write_raw(tmp_path / "ext.safetensors", header, data.tobytes())
    loaded = load(tmp_path / "ext.safetensors")
    np.testing.assert_array_equal(loaded["w"].numpy(), data)


def test_nested_structures_keep_key_types_tuples_and_scalars(tmp_path):
    obj = {
        "state": {0: {"step": 3, "buf": flow.ones(2)}, 1: {}},
        "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "nesterov": False, "params": [0, 1]}],
        "note": None,
        "name": "run-1",
        "inf": float("inf"),
    }
    save(obj, tmp_path / "nested.safetensors")
    header, _, _ = read_header(tmp_path / "nested.safetensors")
    assert "state.0.buf" in header
    loaded = load(tmp_path / "nested.safetensors")
    assert set(loaded) == set(obj) and list(loaded["state"]) == [0, 1]
    assert loaded["state"][0]["step"] == 3 and loaded["state"][1] == {}
    np.testing.assert_array_equal(loaded["state"][0]["buf"].numpy(), [1.0, 1.0])
    assert loaded["param_groups"] == obj["param_groups"]
    assert isinstance(loaded["param_groups"][0]["betas"], tuple)
    assert loaded["note"] is None and loaded["name"] == "run-1"
    assert loaded["inf"] == float("inf")


def test_module_state_dict_round_trips_into_a_fresh_module(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    save(model.state_dict(), tmp_path / "m.safetensors")
    fresh = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    fresh.load_state_dict(load(tmp_path / "m.safetensors"))
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[key].numpy(), value.numpy())


def test_optimizer_state_dict_round_trips_through_a_file(tmp_path):
    param = nn.Parameter(flow.tensor([1.0, 2.0]))
    opt = optim.Adam([param], lr=0.1, betas=(0.8, 0.9))
    for _ in range(2):
        param.grad = flow.tensor([0.5, -1.0])
        opt.step()
    save(opt.state_dict(), tmp_path / "opt.safetensors")
    clone = nn.Parameter(flow.tensor(param.numpy().copy()))
    resumed = optim.Adam([clone], lr=1.0)
    resumed.load_state_dict(load(tmp_path / "opt.safetensors"))
    assert resumed.param_groups[0]["betas"] == (0.8, 0.9)
    param.grad, clone.grad = flow.tensor([0.5, -1.0]), flow.tensor([0.5, -1.0])
    opt.step()
    resumed.step()
    np.testing.assert_array_equal(clone.numpy(), param.numpy())


def test_user_metadata_is_written(tmp_path):
    save({"a": flow.ones(1)}, tmp_path / "m.safetensors", metadata={"epoch": 3})
    header, _, _ = read_header(tmp_path / "m.safetensors")
    assert header["__metadata__"].pop("ofl.crc32") and header["__metadata__"] == {"epoch": "3"}
    with pytest.raises(ValueError, match="'ofl.crc32' is reserved"):
        save({"a": flow.ones(1)}, tmp_path / "m.safetensors", metadata={"ofl.crc32": "{}"})


def test_save_and_load_through_file_objects():
    buffer = io.BytesIO()
    save({"a": flow.ones(2)}, buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(load(buffer)["a"].numpy(), [1.0, 1.0])


def test_a_damaged_file_object_raises_naming_it_not_a_temporary_file():
    buffer = io.BytesIO()
    save({"a": flow.ones(2)}, buffer)
    with pytest.raises(ValueError, match=r"^\[load\] <file object>: tensor 'a'.*truncated"):
        load(io.BytesIO(buffer.getvalue()[:-1]))


def test_load_keeps_the_order_the_tensors_were_saved_in(tmp_path):
    save({"z": flow.ones(1), "a": flow.ones(2), "m": flow.ones(3)}, tmp_path / "o.safetensors")
    assert list(load(tmp_path / "o.safetensors")) == ["z", "a", "m"]


def test_map_location_moves_every_tensor(tmp_path):
    save({"a": flow.ones(2), "n": {"b": flow.zeros(1)}}, tmp_path / "d.safetensors")
    loaded = load(tmp_path / "d.safetensors", map_location="meta")
    assert loaded["a"].device.type == "meta" and loaded["n"]["b"].device.type == "meta"


def test_a_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "absent.safetensors")


def test_unsupported_object_raises_type_error_naming_its_path(tmp_path):
    with pytest.raises(TypeError, match="opt.fn"):
        save({"opt": {"fn": object()}}, tmp_path / "x.safetensors")


def test_failed_save_keeps_the_existing_file_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    save({"a": flow.ones(3)}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        save({"a": flow.zeros(3), "bad": [object()]}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_save_replaces_an_existing_file(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    save({"a": flow.ones(3)}, path)
    save({"b": flow.zeros(2)}, path)
    assert list(load(path)) == ["b"]
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


GOOD_ENTRY = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"", "0 bytes: too short"),
        (b"\x01\x02\x03", "3 bytes: too short"),
        (struct.pack("<Q", 1 << 40) + b"{}", "header claims 1099511627776 bytes"),
        (struct.pack("<Q", 4) + b"\xff\xfe{}", "not a JSON object"),
        (struct.pack("<Q", 5) + b"{oops", "not a JSON object"),
        (struct.pack("<Q", 2) + b"[]", "JSON object"),
        (bytes(np.random.RandomState(1).randint(0, 256, 64, dtype=np.uint8)), None),
    ],
    ids=["empty", "3-bytes", "huge-length", "not-utf8", "bad-json", "json-list", "random"],
)
def test_garbage_files_raise_value_error(tmp_path, raw, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(raw)
    with pytest.raises(ValueError, match=message):
        load(path)


@pytest.mark.parametrize(
    "entry, payload, message",
    [
        (dict(GOOD_ENTRY, dtype="F8"), b"\0" * 8, "dtype"),
        (dict(GOOD_ENTRY, shape=[-2]), b"\0" * 8, "shape"),
        (dict(GOOD_ENTRY, shape=[3]), b"\0" * 8, r"12 bytes\) claims bytes \[0, 8\)"),
        (dict(GOOD_ENTRY, data_offsets=[8, 0]), b"\0" * 8, r"claims bytes \[8, 0\)"),
        ({"dtype": "F32"}, b"", "data_offsets"),
        (GOOD_ENTRY, b"\0" * 5, "truncated"),
        (GOOD_ENTRY, b"\0" * 12, "4 of the 12 data bytes belong to no tensor"),
        (dict(GOOD_ENTRY, data_offsets=[4, 12]), b"\0" * 12, "4 of the 12 data bytes"),
    ],
    ids=["dtype", "shape", "size", "offsets", "missing-keys", "truncated", "trailing", "gap"],
)
def test_inconsistent_headers_raise_value_error(tmp_path, entry, payload, message):
    write_raw(tmp_path / "bad.safetensors", {"x": entry}, payload)
    with pytest.raises(ValueError, match=message):
        load(tmp_path / "bad.safetensors")


def test_metadata_that_is_not_strings_raises_value_error(tmp_path):
    write_raw(tmp_path / "m.safetensors", {"__metadata__": {"epoch": 3}})
    with pytest.raises(ValueError, match="__metadata__ must map strings to strings"):
        load(tmp_path / "m.safetensors")


def test_truncated_checkpoint_raises_value_error(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    save({"w": flow.ones(16, 16)}, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])
    with pytest.raises(ValueError, match="truncated"):
        load(path)


def test_flow_save_and_load_are_the_serialization_functions():
    assert flow.save is save and flow.load is load


def test_the_cpp_reader_reads_what_save_writes_for_every_dtype(tmp_path):
    """core/safetensors.h, which the C++ API loads weights with, reads flow.save's files: every
    dtype, scalars and empty tensors; a truncated file raises naming it."""
    tensors = {}
    for name, sample in SAMPLES.items():
        tensors[name] = flow.tensor(sample, dtype=getattr(flow, name))
    tensors["scalar"] = flow.tensor(2.5)
    tensors["empty"] = flow.zeros(0, 3)
    path = tmp_path / "all.safetensors"
    save(tensors, path)
    read = flow._C.read_safetensors(str(path))
    assert sorted(read) == sorted(tensors)
    for name, t in tensors.items():
        assert read[name].dtype == t.dtype and read[name].shape == t.shape, name
        np.testing.assert_array_equal(values(read[name]), values(t))
    data = path.read_bytes()
    (path.parent / "cut.safetensors").write_bytes(data[:-3])
    with pytest.raises(
        RuntimeError, match=r"cut\.safetensors: tensor '\w+' .*truncated or corrupt"
    ):
        flow._C.read_safetensors(str(path.parent / "cut.safetensors"))
