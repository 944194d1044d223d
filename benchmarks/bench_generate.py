"""Generating text with the example GPT on this machine, three ways, in one run: decoding with
oneflowlike's KV cache (examples/char_gpt/model.py's generate_cached: one prefill, then one token
a step, written into the cache in place), today's recompute-the-window path (generate: the
whole window's forward for every new token, nanoGPT's loop), and PyTorch eager with a KV cache
written the usual way (each layer's past keys and values grown by torch.cat, as HF's
DynamicCache does), the same weights in each.

Ours runs eagerly and as graphs (Decoder(graph=True): the prefill and the one-token step each an
nn.Graph, compiled before timing). For each batch size and prompt length: time to first token
(the prefill and one sample) and tokens per second over the batch's new tokens (batch x new /
the whole generation), greedy, the best of --repeats. The window path is timed over its first --window-tokens new tokens (its step
costs the whole window, so all 128 would take minutes); its tokens/s is that rate, which later
tokens (longer windows) would only lower. Each library runs in its own process. Greedy tokens
are compared across the three at the end (the same weights give the same tokens).

The server row (with the C++ examples built, as the README shows): examples/cpp/inference_server
serving the same weights, saved with save_for_generation, to --clients concurrent clients, each
streaming one /v1/completions of --new greedy tokens after a prompt of 32 (continuous batching,
--max-batch = --clients), against today's /v1/generate (the window recomputed for every token,
the waiting requests' windows batched into one forward) timed over --window-tokens tokens a
client. Tokens/s is every client's tokens over the wall time; TTFT the mean wait for the first
streamed token.

    python3 benchmarks/bench_generate.py [--batches 1,8,32] [--prompts 32,256] [--new 128]
                                         [--clients 32] [--server PATH | --no-server]
"""

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from _timing import between_ops, run_child  # noqa: E402

VOCAB, LAYERS, HEADS, WIDTH = 65, 4, 4, 256
ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "build" / "examples" / "inference_server"
SERVER_PROMPT = 32


def weights(block):
    """The model's weights, by the example GPT's parameter names, from a fixed seed."""
    rng = np.random.default_rng(0)
    w = {"tok_emb.weight": (VOCAB, WIDTH), "pos_emb.weight": (block, WIDTH)}
    for i in range(LAYERS):
        for name in ("query", "key", "value", "proj"):
            w[f"blocks.{i}.attn.{name}.weight"] = (WIDTH, WIDTH)
            w[f"blocks.{i}.attn.{name}.bias"] = (WIDTH,)
        w[f"blocks.{i}.mlp.fc.weight"] = (4 * WIDTH, WIDTH)
        w[f"blocks.{i}.mlp.fc.bias"] = (4 * WIDTH,)
        w[f"blocks.{i}.mlp.proj.weight"] = (WIDTH, 4 * WIDTH)
        w[f"blocks.{i}.mlp.proj.bias"] = (WIDTH,)
        for ln in ("ln1", "ln2"):
            w[f"blocks.{i}.{ln}.weight"] = (WIDTH,)
            w[f"blocks.{i}.{ln}.bias"] = (WIDTH,)
    w["ln_f.weight"], w["ln_f.bias"] = (WIDTH,), (WIDTH,)
    w["head.weight"] = (VOCAB, WIDTH)
    out = {}
    for name, shape in w.items():
        if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name == "ln_f.weight":
            out[name] = np.ones(shape, np.float32)
        else:
            out[name] = (0.02 * rng.standard_normal(shape)).astype(np.float32)
    return out


def prompts(batch, length):
    rng = np.random.default_rng(length)
    return rng.integers(0, VOCAB, (batch, length)).tolist()


def timed(fn, repeats):
    """(best seconds, result) over repeats."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def ours(args, block):
    import oneflowlike as flow
    from char_gpt.model import GPT, Decoder, GPTConfig, generate

    model = GPT(GPTConfig(VOCAB, block, LAYERS, HEADS, WIDTH))
    model.load_state_dict({k: flow.tensor(v) for k, v in weights(block).items()})
    model.eval()
    out = {}
    for b in args.batches:
        for t in args.prompts:
            p = prompts(b, t)
            row = {}
            for name, graph in (("cached", False), ("graph", True)):
                decoder = Decoder(model, b, graph=graph)
                decoder.generate(p, 2)  # a graph compiles its two steps once
                ttft, _ = timed(lambda: decoder.generate(p, 1), args.repeats)
                total, tokens = timed(lambda: decoder.generate(p, args.new), args.repeats)
                row[name] = [ttft, b * args.new / total]
                row[name + " tokens"] = tokens[0]
            steps = [g for (_, prefill), g in decoder.steps.items() if not prefill]
            row["between"] = between_ops(steps, lambda: decoder.generate(p, args.new))
            idx = flow.tensor(p)
            n = args.window_tokens
            window, _ = timed(lambda: generate(model, idx, n, top_k=1), 1)
            w_ttft, _ = timed(lambda: generate(model, idx, 1, top_k=1), args.repeats)
            row["window"] = [w_ttft, b * n / window]
            out[f"{b} {t}"] = row
    return out


def torch_side(args, block):
    import torch
    import torch.nn.functional as F

    torch.set_grad_enabled(False)
    w = {k: torch.from_numpy(v) for k, v in weights(block).items()}

    def linear(x, name):
        return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))

    def forward(idx, past, start):
        """idx (B, T) at positions start..start+T-1; past: per layer (k, v) (B, H, S, hd) or
        None; returns the last position's logits and the grown past."""
        B, T = idx.shape
        hd = WIDTH // HEADS
        x = w["tok_emb.weight"][idx] + w["pos_emb.weight"][start : start + T]
        new_past = []
        for i in range(LAYERS):
            pre = f"blocks.{i}."
            h = F.layer_norm(x, (WIDTH,), w[pre + "ln1.weight"], w[pre + "ln1.bias"])
            q, k, v = (
                linear(h, pre + f"attn.{n}").view(B, T, HEADS, hd).transpose(1, 2)
                for n in ("query", "key", "value")
            )
            if past is not None:
                k = torch.cat([past[i][0], k], dim=2)
                v = torch.cat([past[i][1], v], dim=2)
            new_past.append((k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=past is None)
            x = x + linear(y.transpose(1, 2).reshape(B, T, WIDTH), pre + "attn.proj")
            h = F.layer_norm(x, (WIDTH,), w[pre + "ln2.weight"], w[pre + "ln2.bias"])
            x = x + linear(F.gelu(linear(h, pre + "mlp.fc")), pre + "mlp.proj")
        x = F.layer_norm(x[:, -1], (WIDTH,), w["ln_f.weight"], w["ln_f.bias"])
        return x @ w["head.weight"].T, new_past

    def generate(p, new):
        idx = torch.tensor(p)
        logits, past = forward(idx, None, 0)
        out = [logits.argmax(-1)]
        for i in range(new - 1):
            logits, past = forward(out[-1][:, None], past, idx.shape[1] + i)
            out.append(logits.argmax(-1))
        return torch.stack(out, 1).tolist()

    out = {}
    for b in args.batches:
        for t in args.prompts:
            p = prompts(b, t)
            ttft, _ = timed(lambda: generate(p, 1), args.repeats)
            total, tokens = timed(lambda: generate(p, args.new), args.repeats)
            out[f"{b} {t}"] = {"cached": [ttft, b * args.new / total], "cached tokens": tokens[0]}
    return out


def post_stream(host, port, body, first):
    """POSTs a streamed /v1/completions; returns its tokens, and calls first() at the first."""
    conn = http.client.HTTPConnection(host, port, timeout=600)
    conn.request("POST", "/v1/completions", json.dumps({**body, "stream": True}))
    r = conn.getresponse()
    assert r.status == 200, r.read()
    tokens = []
    for line in r:
        if line.startswith(b"data: {"):
            if not tokens:
                first()
            tokens += json.loads(line[6:])["choices"][0]["tokens"]
    conn.close()
    return tokens


def post(host, port, route, body):
    conn = http.client.HTTPConnection(host, port, timeout=600)
    conn.request("POST", route, json.dumps(body))
    r = conn.getresponse()
    out = json.loads(r.read())
    assert r.status == 200, out
    conn.close()
    return out


def concurrently(fn, n):
    """fn(i) on n threads at once; returns (wall seconds, results)."""
    out = [None] * n
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, fn(i))) for i in range(n)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, out


def server_side(args, _block=None):
    """The C++ server's tokens/s under args.clients clients: /v1/completions streamed, and
    today's /v1/generate."""
    import oneflowlike as flow
    from char_gpt.model import GPT, GPTConfig, save_for_generation

    sys.path.insert(0, str(ROOT / "examples" / "cpp"))
    from save_gpt import Logits

    block = SERVER_PROMPT + args.new
    model = GPT(GPTConfig(VOCAB, block, LAYERS, HEADS, WIDTH))
    model.load_state_dict({k: flow.tensor(v) for k, v in weights(block).items()})
    model.eval()
    n = args.clients
    p = prompts(n, SERVER_PROMPT)
    with tempfile.TemporaryDirectory() as d:
        graph = Logits(model)
        graph(flow.zeros(1, block, dtype=flow.int64))
        graph.save(f"{d}/gpt")
        save_for_generation(model, f"{d}/gpt/generation")
        cmd = [args.server, f"{d}/gpt", "--port", "0", "--max-batch", str(n)]
        proc = subprocess.Popen(cmd + ["--threads", str(2 * n)], stdout=subprocess.PIPE, text=True)
        try:
            host, port = proc.stdout.readline().split("//")[1].strip().split(":")
            port = int(port)
            body = lambda i, m: {"prompt": p[i], "max_tokens": m, "temperature": 0}  # noqa: E731
            post(host, port, "/v1/completions", body(0, 2))  # the graphs built
            best = None
            for _ in range(args.repeats):
                firsts = [None] * n
                t0 = time.perf_counter()
                first = lambda i: firsts.__setitem__(i, time.perf_counter() - t0)  # noqa: E731
                wall, made = concurrently(
                    lambda i: post_stream(host, port, body(i, args.new), lambda: first(i)), n
                )
                run = {"stream": [float(np.mean(firsts)), n * args.new / wall], "tokens": made[0]}
                if best is None or run["stream"][1] > best["stream"][1]:
                    best = run
            k = args.window_tokens
            gen = lambda i: post(  # noqa: E731
                host, port, "/v1/generate", {"tokens": p[i], "max_new_tokens": k}
            )
            post(host, port, "/v1/generate", {"tokens": p[0], "max_new_tokens": 1})
            wall, today = concurrently(gen, n)
            best["today"] = [float("nan"), n * k / wall]
            best["same"] = today[0]["tokens"] == best["tokens"][:k]
        finally:
            proc.terminate()
            proc.wait()
    return best


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    ap.add_argument("--batches", type=ints, default=[1, 8, 32])
    ap.add_argument("--prompts", type=ints, default=[32, 256])
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--window-tokens", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--server", default=str(SERVER), help="the inference_server binary")
    ap.add_argument("--no-server", action="store_true", help="leave the server row out")
    ap.add_argument("--lib", choices=["oneflowlike", "torch", "server"], help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main():
    args = parse_args()
    block = max(args.prompts) + args.new
    if args.lib:
        side = {"oneflowlike": ours, "torch": torch_side, "server": server_side}[args.lib]
        print(json.dumps(side(args, block)))
        return
    extra = sys.argv[1:]
    mine = run_child(__file__, "oneflowlike", extra)
    try:
        theirs = run_child(__file__, "torch", extra)
    except Exception as e:  # noqa: BLE001 - PyTorch is optional
        print(f"(PyTorch side skipped: {e})")
        theirs = {}
    print(
        f"generation, example GPT: {LAYERS} layers, width {WIDTH}, {HEADS} heads, vocabulary "
        f"{VOCAB}, float32 on the CPU; {args.new} new tokens, greedy; best of {args.repeats}"
    )
    head = (
        f"{'batch':>5s} {'prompt':>6s} | {'TTFT: eager':>11s} {'graph':>8s} {'window':>8s} "
        f"{'torch':>8s} | {'tokens/s: eager':>15s} {'graph':>8s} {'window':>8s} {'torch':>8s} "
        f"{'graph/torch':>11s} {'graph/window':>12s} | same tokens"
    )
    print(head)
    print("-" * len(head))
    ms = lambda s: f"{s * 1e3:6.1f} ms"  # noqa: E731
    for case, m in mine.items():
        b, t = case.split()
        th = theirs.get(case)
        same = m["cached tokens"] == m["graph tokens"]
        same = ("yes" if same else "NO") + (
            ""
            if th is None
            else (", torch yes" if th["cached tokens"] == m["graph tokens"] else ", torch NO")
        )
        torch_rate = th["cached"][1] if th else float("nan")
        print(
            f"{b:>5s} {t:>6s} | {ms(m['cached'][0]):>11s} {ms(m['graph'][0]):>8s} "
            f"{ms(m['window'][0]):>8s} {ms(th['cached'][0]) if th else '-':>8s} | "
            f"{m['cached'][1]:15.1f} {m['graph'][1]:8.1f} {m['window'][1]:8.1f} {torch_rate:8.1f} "
            f"{m['graph'][1] / torch_rate:10.2f}x {m['graph'][1] / m['window'][1]:11.2f}x | {same}"
        )
    between = ", ".join(
        f"batch {case.split()[0]} prompt {case.split()[1]}: {m['between']:.1%}"
        for case, m in mine.items()
        if m.get("between") is not None
    )
    print(f"the executor between ops in a one-token graph step (median over its spans): {between}")
    if args.no_server:
        return
    if not os.path.exists(args.server):
        print(f"(server row skipped: {args.server} is not built; see the README)")
        return
    sv = run_child(__file__, "server", extra)
    print(
        f"\nthe C++ server, {args.clients} clients at once, a prompt of {SERVER_PROMPT} and "
        f"{args.new} new tokens each, greedy: /v1/completions streamed (KV cache, continuous "
        f"batching) {sv['stream'][1]:.1f} tokens/s, mean TTFT {sv['stream'][0] * 1e3:.0f} ms; "
        f"today's /v1/generate (the window, over {args.window_tokens} tokens a client) "
        f"{sv['today'][1]:.1f} tokens/s: {sv['stream'][1] / sv['today'][1]:.1f}x; same tokens: "
        f"{'yes' if sv['same'] else 'NO'}"
    )


if __name__ == "__main__":
    main()
