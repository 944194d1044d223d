"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/) from the installed
package: safetensors files as flow.save writes them, graph.json files as nn.Graph.save writes
them, conversations with the TCP store in its wire format, and HTTP requests to the inference
server. Run it after a format changes:

    python3 tests/fuzz/make_seeds.py
"""

import struct
import tempfile
from pathlib import Path

import oneflowlike as flow

CORPUS = Path(__file__).resolve().parent / "corpus"


def _write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def safetensors_seeds():
    flow.manual_seed(0)
    cases = {
        "flat": {"w": flow.randn(3, 4), "b": flow.zeros(4), "ids": flow.tensor([1, 2, 3])},
        "dtypes": {
            str(d).split(".")[-1]: flow.ones(2, 3, dtype=d)
            for d in (flow.float16, flow.bfloat16, flow.float64, flow.int8, flow.uint8, flow.bool)
        },
        "empty_and_scalar": {"e": flow.zeros(0, 5), "s": flow.tensor(3.0)},
        "nested": {"model": {"w": flow.randn(2, 2)}, "step": 7, "lr": [0.1, 0.01]},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, obj in cases.items():
            path = Path(tmp) / name
            flow.save(obj, path)
            _write("fuzz_safetensors", name, path.read_bytes())


class _Mlp(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = flow.nn.Embedding(11, 8)
        self.fc = flow.nn.Linear(8, 8)
        self.norm = flow.nn.LayerNorm(8)

    def forward(self, idx):
        x = self.norm(flow.nn.functional.gelu(self.fc(self.emb(idx))))
        b, t, c = x.shape
        y = x.view(b, t, 2, 4).transpose(1, 2).contiguous().view(b, t, c)
        return y.softmax(-1).sum(-1)


class _Forward(flow.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, idx):
        return self.model(idx)


def graph_seeds():
    flow.manual_seed(0)
    graph = _Forward(_Mlp().eval())
    graph(flow.randint(0, 11, (2, 5)))
    with tempfile.TemporaryDirectory() as tmp:
        graph.save(Path(tmp) / "g")
        _write("fuzz_graph_json", "mlp", (Path(tmp) / "g" / "graph.json").read_bytes())


def _frame(op, *args):
    out = bytes([op]) + struct.pack("<I", len(args))
    for a in args:
        a = struct.pack("<q", a) if isinstance(a, int) else a
        out += struct.pack("<I", len(a)) + a
    return out


def store_seeds():
    hello, set_, get, add, cas, wait, remove, check = range(1, 9)
    greet = _frame(hello, 1, b"")
    _write("fuzz_store_wire", "hello", greet)
    _write("fuzz_store_wire", "set_get", greet + _frame(set_, b"k", b"v") + _frame(get, b"k", 100))
    _write("fuzz_store_wire", "add", greet + _frame(add, b"n", 5) + _frame(add, b"n", -2))
    _write("fuzz_store_wire", "compare_set", greet + _frame(cas, b"k", b"", b"x"))
    _write(
        "fuzz_store_wire", "wait_check", greet + _frame(wait, 50, b"a", b"b") + _frame(check, b"a")
    )
    _write("fuzz_store_wire", "remove", greet + _frame(remove, b"k"))
    _write("fuzz_store_wire", "no_hello", _frame(get, b"k", 10))


def _http(method, path, body=None, headers=()):
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost", *headers]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n" + (body or "")).encode()


def server_seeds():
    seeds = {
        "health": _http("GET", "/v1/health"),
        "logits": _http(
            "POST", "/v1/logits", '{"tokens": [1, 2, 3]}', ["Content-Type: application/json"]
        ),
        "generate": _http("POST", "/v1/generate", '{"tokens": [5, 6], "max_new_tokens": 2}'),
        "deep": _http("POST", "/v1/logits", '{"tokens": ' + "[" * 40 + "]" * 40 + "}"),
        "gzip": _http("POST", "/v1/logits", '{"tokens": [1]}', ["Content-Encoding: gzip"]),
        "chunked": b"POST /v1/logits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'5\r\n{"tok\r\n0\r\n\r\n',
        "pipelined": _http("GET", "/v1/health", None, ["Range: bytes=0-1,2-3"])
        + _http("POST", "/v1/logits", '{"tokens": [9]}'),
        "completions": _http(
            "POST",
            "/v1/completions",
            '{"prompt": [1, 2], "max_tokens": 3, "temperature": 0.7, "top_k": 5, "top_p": 0.9, '
            '"seed": 3, "stop": [4]}',
        ),
        "completions-stream": _http(
            "POST", "/v1/completions", '{"prompt": [7], "max_tokens": 4, "stream": true}'
        )
        + _http("POST", "/v1/completions", '{"prompt": [8, 9], "max_tokens": 2, "stream": true}'),
    }
    for name, data in seeds.items():
        _write("fuzz_server_request", name, data)


if __name__ == "__main__":
    safetensors_seeds()
    graph_seeds()
    store_seeds()
    server_seeds()
