"""The C++ API as its users meet it: examples/cpp built on its own against the installed package
(find_package(oneflowlike CONFIG) with `python -m oneflowlike --cmake-prefix-path`), run_graph,
and the inference server answering concurrent HTTP requests like Python eager."""

import concurrent.futures
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request

import numpy as np
import pytest

import oneflowlike as flow
from examples.char_gpt.model import GPT, GPTConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [
    pytest.mark.multiprocess,
    pytest.mark.skipif(
        shutil.which("cmake") is None or shutil.which("ninja") is None,
        reason="needs cmake and ninja",
    ),
]


SAVE_GPT = os.path.join(ROOT, "examples", "cpp", "save_gpt.py")
SIZES = ["--vocab-size", "23", "--block-size", "12", "--n-embd", "16", "--n-head", "2"]


def small_gpt():
    """The model save_gpt.py saves with SIZES: the same seed and sizes."""
    flow.manual_seed(0)
    return GPT(GPTConfig(vocab_size=23, block_size=12, n_layer=2, n_head=2, n_embd=16)).eval()


def next_logits(model, tokens):
    """Python eager's logits after the last token (the last block_size tokens)."""
    idx = flow.tensor([tokens[-model.cfg.block_size :]], dtype=flow.int64)
    with flow.no_grad():
        return model(idx)[0][0, -1].numpy()


def test_run_graph_built_against_the_installed_package(examples, gpt):
    model, path = gpt
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    out = subprocess.run(
        [str(examples / "run_graph"), path] + [str(i) for i in ids],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "Graph(idx: (-1, 12) int64 -> output: (-1, 12, 23) float32" in out.stdout
    with flow.no_grad():
        want = model(flow.tensor([ids], dtype=flow.int64))[0][0].numpy().argmax(-1)
    assert out.stdout.splitlines()[-1] == "next tokens: " + " ".join(map(str, want))
    bad = subprocess.run(
        [str(examples / "run_graph"), path, "1", "2"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1
    assert "input 0 is (1, 2) int64 where the graph takes idx: (-1, 12) int64" in bad.stderr


class Server:
    def __init__(self, binary, path, *flags):
        self.proc = subprocess.Popen(
            [str(binary), path, "--port", "0", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line + self.proc.stderr.read()
        self.url = line.split()[-1]

    def post(self, route, body):
        req = urllib.request.Request(
            self.url + route, data=json.dumps(body).encode(), method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def stop(self):
        self.proc.terminate()
        try:
            assert self.proc.wait(timeout=30) == 0
        finally:
            self.proc.kill()


def greedy(model, tokens, n):
    tokens, made = list(tokens), []
    for _ in range(n):
        made.append(int(next_logits(model, tokens).argmax()))
        tokens.append(made[-1])
    return made


def test_plan_pipeline_plans_from_cpp_what_python_planned(examples, tmp_path):
    """examples/cpp/plan_pipeline (ofl::plan_pipeline) on the inputs plan_pipeline(save=) wrote:
    the same pipeline and layouts as Python's, and a damaged folder a clear error."""
    from test_pipeline_planner import LAYERS, least_bytes, step_for

    budget = 0.9 * least_bytes([4])  # one stage does not fit: a pipeline
    p = flow.auto_parallel.plan_pipeline(
        step_for, LAYERS, 4, cluster=flow.boxing.ClusterSpec.cpu_loopback(4),
        memory_budget=budget, micro_batches=(1, 4), save=tmp_path / "inputs", chunks=(1, 2),
    )  # fmt: skip
    assert p.stages > 1
    out = subprocess.run(
        [str(examples / "plan_pipeline"), str(tmp_path / "inputs")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["description"] == p.description
    assert (got["stages"], got["micro_batches"], got["recompute"], got["chunks"]) == (
        p.stages, p.micro_batches, p.recompute, p.chunks,
    )  # fmt: skip
    assert got["first_layer"] == p.first_layer
    assert got["seconds"] == pytest.approx(p.seconds, rel=1e-12)
    assert [tuple(o) for o in got["options"]] == [tuple(o) for o in p.options]
    assert got["layouts"] == {k: flow.sbp.nd_sbp(v).to_string() for k, v in p.intra.layouts.items()}

    (tmp_path / "inputs" / "step0.json").write_text('{"format_version": 1, "values": [')
    bad = subprocess.run(
        [str(examples / "plan_pipeline"), str(tmp_path / "inputs")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 1
    assert "step0.json" in bad.stderr and "not a JSON object" in bad.stderr, bad.stderr


@pytest.mark.parametrize("max_batch", ["1", "8"])
def test_the_inference_server_answers_concurrent_requests_like_python_eager(
    examples, gpt, max_batch
):
    model, path = gpt
    rng = np.random.default_rng(int(max_batch))
    prompts = [rng.integers(0, 23, size=int(rng.integers(1, 20))).tolist() for _ in range(24)]
    server = Server(examples / "inference_server", path, "--max-batch", max_batch)
    try:
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda p: server.post("/v1/logits", {"tokens": p}), prompts))
            gens = list(
                pool.map(
                    lambda p: server.post("/v1/generate", {"tokens": p, "max_new_tokens": 4}),
                    prompts[:8],
                )
            )
        for prompt, (status, body) in zip(prompts, answers):
            assert status == 200, body
            np.testing.assert_allclose(body["logits"], next_logits(model, prompt), atol=1e-4)
        for prompt, (status, body) in zip(prompts, gens):
            assert status == 200 and body["tokens"] == greedy(model, prompt, 4)
        assert server.post("/v1/logits", {"tokens": [1, 99]}) == (
            400,
            {"error": "token 99 is not in [0, 23)"},
        )
        assert server.post("/v1/logits", {"tokens": "abc"})[0] == 400
        assert server.post("/v1/generate", {"tokens": [1], "max_new_tokens": -1})[0] == 400
    finally:
        server.stop()


def test_a_tensor_parallel_graph_runs_from_cpp_on_two_ranks(examples, tmp_path):
    """Saved from a Megatron-style model on 2 ranks (weights as per-rank shards), loaded by
    run_graph on 2 ranks under the launcher (ofl::init_distributed): every rank gives the
    single-process model's answer; in one process it refuses clearly."""
    from _launch import launch

    r = launch(
        ["--nproc_per_node", "2"], [SAVE_GPT, str(tmp_path / "tp"), "--tensor-parallel", *SIZES]
    )
    assert r.returncode == 0, r
    assert sorted(os.listdir(tmp_path / "tp" / "weights"))[0] == "index.json"
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    r = launch(
        ["--nproc_per_node", "2", "--no_python"],
        [str(examples / "run_graph"), str(tmp_path / "tp"), *map(str, ids)],
    )
    assert r.returncode == 0, r
    model = small_gpt()
    with flow.no_grad():
        want = model(flow.tensor([ids], dtype=flow.int64))[0][0].numpy().argmax(-1)
    for rank in (0, 1):
        assert f"rank {rank}: next tokens: " + " ".join(map(str, want)) in r.stdout, r
    alone = subprocess.run(
        [str(examples / "run_graph"), str(tmp_path / "tp"), *map(str, ids)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert alone.returncode == 1 and "load it with a World" in alone.stderr
