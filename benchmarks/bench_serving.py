"""Serving the example GPT over HTTP: examples/cpp/inference_server (the C++ API, one forward per
request, or the waiting requests batched into one forward) next to the same model and weights
served by PyTorch eager from Python (http.server, a thread per connection), on this machine.

Each of 1, 4, 16 and 64 clients sends POST /v1/logits requests back to back over a kept-alive
connection (prompts of 1 to block_size random tokens) for --seconds; the table gives requests
per second, the p50 / p99 / max latency and the requests that failed (a connection reset or
refused, a timeout, a status other than 200: the client reconnects and goes on), for --rounds
rounds (the spread: best / worst; max and failures over all rounds). 64 clients outnumber the
C++ server's 16 threads and fill a small listen backlog. The clients run in this process, so
they share the two cores with the server under test, equally for every server.

    python3 benchmarks/bench_serving.py [--seconds 4] [--rounds 3] [--clients 1,4,16,64]
                                        [--server PATH]
    (needs the C++ examples built on their own, as the README shows: cmake -S examples/cpp -B
    build/examples -G Ninja -DCMAKE_PREFIX_PATH=$(python3 -m oneflowlike --cmake-prefix-path)
    && cmake --build build/examples; --server runs another build of inference_server)"""

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "build", "examples", "inference_server")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from model_loader import load_model_module  # noqa: E402

TORCH_SERVER = r"""
import http.server, json, sys
import numpy as np
import torch
sys.path.insert(0, sys.argv[1])
from model_loader import load_model_module
from safetensors_numpy import read

m = load_model_module("torch")
cfg = m.GPTConfig(**json.loads(sys.argv[3]))
model = m.GPT(cfg).eval()
model.load_state_dict({k: torch.from_numpy(v) for k, v in read(sys.argv[2]).items()})

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes
    def log_message(self, *args):
        pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        tokens = body["tokens"][-cfg.block_size:]
        with torch.no_grad():
            logits = model(torch.tensor([tokens], dtype=torch.int64))[0][0, -1]
        out = json.dumps({"logits": logits.tolist()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
"""

SAFETENSORS_NUMPY = """
import json, struct
import numpy as np
DTYPES = {"F32": np.float32, "I64": np.int64}
def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a : 8 + n + b], DTYPES[e["dtype"]]).reshape(e["shape"]).copy()
    return out
"""


def start(cmd, env=None):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    if not line.startswith("listening on http://"):
        proc.kill()
        raise RuntimeError(f"{cmd[0]} did not start: {line!r}")
    host, port = line.split("//")[1].strip().split(":")
    return proc, host, int(port)


def load(host, port, clients, seconds, prompts):
    """(requests per second, p50 s, p99 s, max s, failed requests) of `clients` threads posting
    back to back; the latencies are of the requests answered 200."""
    latencies = [[] for _ in range(clients)]
    failures = [0] * clients
    stop = time.perf_counter() + seconds

    def client(i):
        conn = http.client.HTTPConnection(host, port, timeout=60)
        k = i
        while time.perf_counter() < stop:
            body = json.dumps({"tokens": prompts[k % len(prompts)]})
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/v1/logits", body, {"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):  # reset, refused, timed out
                conn.close()  # the next request connects again
                ok = False
            if ok:
                latencies[i].append(time.perf_counter() - t0)
            else:
                failures[i] += 1
            k += clients
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    flat = np.array([x for lat in latencies for x in lat])
    if len(flat) == 0:
        return 0.0, np.nan, np.nan, np.nan, sum(failures)
    p50, p99 = np.percentile(flat, [50, 99])
    return len(flat) / elapsed, p50, p99, flat.max(), sum(failures)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", default="1,4,16,64")
    ap.add_argument("--server", default=SERVER, help="the inference_server binary to run")
    args = ap.parse_args()
    if not os.path.exists(args.server):
        sys.exit(
            f"{args.server} is not built: cmake -S examples/cpp -B build/examples -G Ninja "
            "-DCMAKE_PREFIX_PATH=$(python3 -m oneflowlike --cmake-prefix-path) && cmake --build "
            "build/examples"
        )
    import oneflowlike as flow

    config = dict(vocab_size=65, block_size=64, n_layer=2, n_head=4, n_embd=128)
    m = load_model_module("oneflowlike")
    flow.manual_seed(0)
    model = m.GPT(m.GPTConfig(**config)).eval()
    work = tempfile.mkdtemp(prefix="bench_serving_")
    weights = os.path.join(work, "weights.safetensors")
    flow.save(model.state_dict(), weights)
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "cpp", "save_gpt.py"), work + "/gpt"]
        + [f"--{k.replace('_', '-')}={v}" for k, v in config.items()]
        + [f"--state-dict={weights}"],
        check=True,
        capture_output=True,
    )
    with open(os.path.join(work, "safetensors_numpy.py"), "w") as f:
        f.write(SAFETENSORS_NUMPY)
    with open(os.path.join(work, "torch_server.py"), "w") as f:
        f.write(TORCH_SERVER)
    rng = np.random.default_rng(0)
    prompts = [rng.integers(0, 65, size=int(rng.integers(1, 65))).tolist() for _ in range(256)]
    env = dict(os.environ, PYTHONPATH=work)
    cpp = [args.server, work + "/gpt", "--port", "0"]
    servers = {
        "oneflowlike C++": cpp,
        "oneflowlike C++ batched": cpp + ["--max-batch", "16"],
        "PyTorch eager (Python)": [
            sys.executable,
            os.path.join(work, "torch_server.py"),
            os.path.dirname(os.path.abspath(__file__)),
            weights,
            json.dumps(config),
        ],
    }
    clients = [int(c) for c in args.clients.split(",")]
    results = {}  # (server, clients) -> [(rps, p50, p99, max, failures)]
    for r in range(args.rounds):
        for name, cmd in servers.items():
            proc, host, port = start(cmd, env)
            try:
                load(host, port, 2, 0.5, prompts)  # warm up
                for c in clients:
                    results.setdefault((name, c), []).append(
                        load(host, port, c, args.seconds, prompts)
                    )
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    torch_name = "PyTorch eager (Python)"
    print(f"GPT {config}, /v1/logits, {args.rounds} rounds of {args.seconds:g} s per case")
    header = f"{'server':26s} {'clients':>7s} {'req/s (best / worst)':>22s}"
    header += f" {'p50 ms':>14s} {'p99 ms':>14s} {'max ms':>8s} {'failed':>6s}"
    header += f" {'req/s vs PyTorch':>17s}"
    print(header)
    print("-" * len(header))
    for c in clients:
        torch_rps = [x[0] for x in results[(torch_name, c)]]
        for name in servers:
            runs = results[(name, c)]
            rps = [x[0] for x in runs]
            p50 = [x[1] * 1e3 for x in runs]
            p99 = [x[2] * 1e3 for x in runs]
            worst = max(x[3] for x in runs) * 1e3
            failed = sum(x[4] for x in runs)
            ratio = [a / b if b else np.nan for a, b in zip(rps, torch_rps)]
            print(
                f"{name:26s} {c:7d} {max(rps):10.0f} / {min(rps):<9.0f}"
                f" {min(p50):6.2f}-{max(p50):<6.2f} {min(p99):6.2f}-{max(p99):<6.2f}"
                f" {worst:8.1f} {failed:6d} {min(ratio):7.2f}-{max(ratio):.2f}x"
            )


if __name__ == "__main__":
    main()
