"""The inference server's /v1/completions on a GPT saved with save_gpt.py --generation: continuous
batching gives each of 32 concurrent streamed requests the tokens it gets alone, greedy tokens
are Python's, text prompts go through the saved vocabulary, and bad or unfittable requests are
refused with the reason (400 / 503) while the server lives on."""

import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.request

import numpy as np
import pytest

import oneflowlike as flow
from examples.char_gpt.model import GPT, GPTConfig, generate_cached
from test_cpp_api import SAVE_GPT, Server

pytestmark = [
    pytest.mark.multiprocess,
    pytest.mark.skipif(
        shutil.which("cmake") is None or shutil.which("ninja") is None,
        reason="needs cmake and ninja",
    ),
]

TEXT = "the quick brown fox jumps over the lazy dog\n"
CHARS = "".join(sorted(set(TEXT)))
SIZES = ["--block-size", "24", "--n-embd", "16", "--n-head", "2"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The GPT saved for generation, with TEXT's characters as its vocabulary."""
    out = tmp_path_factory.mktemp("generation")
    data = out / "input.txt"
    data.write_text(TEXT)
    cmd = [sys.executable, SAVE_GPT, str(out / "gpt"), "--generation", "--data", str(data), *SIZES]
    subprocess.run(cmd, check=True, timeout=120)
    return str(out / "gpt")


def small_gpt():
    """The model save_gpt.py saves with SIZES and TEXT's vocabulary."""
    flow.manual_seed(0)
    return GPT(GPTConfig(vocab_size=len(CHARS), block_size=24, n_layer=2, n_head=2, n_embd=16))


def stream(server, body, timeout=60):
    """The events of a streamed completion: (token ids, text, finish reasons, saw [DONE])."""
    req = urllib.request.Request(
        server.url + "/v1/completions",
        data=json.dumps({**body, "stream": True}).encode(),
        method="POST",
    )
    tokens, text, reasons, done = [], "", [], False
    with urllib.request.urlopen(req, timeout=timeout) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        for line in r:
            line = line.decode().strip()
            if not line:
                continue
            assert line.startswith("data: "), line
            if line == "data: [DONE]":
                done = True
                continue
            event = json.loads(line[len("data: ") :])
            assert "error" not in event, event
            (choice,) = event["choices"]
            tokens += choice["tokens"]
            text += choice["text"]
            reasons.append(choice["finish_reason"])
    return tokens, text, reasons, done


def test_32_concurrent_streamed_requests_get_the_tokens_each_gets_alone(examples, saved):
    rng = np.random.default_rng(0)
    requests = []
    for i in range(32):
        n = int(rng.integers(1, 12))
        requests.append(
            {
                "prompt": rng.integers(0, len(CHARS), size=n).tolist(),
                "max_tokens": int(rng.integers(1, 24 - n + 2)),
                "temperature": [0.0, 0.7, 1.0, 1.5][i % 4],
                "top_k": [0, 5][i % 2],
                "top_p": [1.0, 0.9][(i // 2) % 2],
                "seed": i,
            }
        )
    # 8 sequences at a time: the others wait, join as earlier ones leave, at every step.
    server = Server(examples / "inference_server", saved, "--max-batch", "8", "--threads", "40")
    try:
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            together = list(pool.map(lambda b: stream(server, b), requests))
        for body, (tokens, text, reasons, done) in zip(requests, together):
            status, alone = server.post("/v1/completions", body)
            assert status == 200, alone
            (choice,) = alone["choices"]
            assert tokens == choice["tokens"], body
            assert text == choice["text"] == "".join(CHARS[t] for t in tokens)
            assert done and reasons[-1] == choice["finish_reason"] == "length"
            assert reasons[:-1] == [None] * (len(reasons) - 1)
            assert len(tokens) == min(body["max_tokens"], 24 - len(body["prompt"]) + 1)
            assert alone["usage"] == {
                "prompt_tokens": len(body["prompt"]),
                "completion_tokens": len(tokens),
                "total_tokens": len(body["prompt"]) + len(tokens),
            }
    finally:
        server.stop()
    # Greedy and seeded tokens are Python's Decoder's.
    model = small_gpt().eval()
    for body, (tokens, _, _, _) in list(zip(requests, together))[:8]:
        want = generate_cached(
            model, [body["prompt"]], body["max_tokens"], body["temperature"], body["top_k"],
            body["top_p"], seeds=[body["seed"]],
        )[0]  # fmt: skip
        assert tokens == want, body


def test_text_prompts_stop_tokens_and_refusals(examples, saved):
    server = Server(examples / "inference_server", saved, "--max-batch", "2")
    try:
        status, body = server.post("/v1/completions", {"prompt": "the ", "temperature": 0})
        assert status == 200, body
        (choice,) = body["choices"]
        assert choice["text"] == "".join(CHARS[t] for t in choice["tokens"])
        model = small_gpt().eval()
        prompt = [CHARS.index(c) for c in "the "]
        assert choice["tokens"] == generate_cached(model, [prompt], 16)[0]
        # A stop token ends the completion, and is not in it (OpenAI's), streamed or not.
        stop = CHARS[choice["tokens"][2]]
        first = choice["tokens"].index(choice["tokens"][2])
        status, body = server.post(
            "/v1/completions", {"prompt": "the ", "temperature": 0, "stop": [stop]}
        )
        assert body["choices"][0]["tokens"] == choice["tokens"][:first]
        assert body["choices"][0]["finish_reason"] == "stop"
        assert body["usage"]["completion_tokens"] == first + 1  # the stop token was made
        tokens, text, reasons, done = stream(
            server, {"prompt": "the ", "temperature": 0, "stop": stop}
        )
        assert tokens == choice["tokens"][:first] and reasons[-1] == "stop" and done
        for bad, reason in [
            ({}, 'the body needs "prompt"'),
            ({"prompt": "Z"}, 'the character "Z" at byte 0 is not in the vocabulary'),
            ({"prompt": []}, "the prompt is empty"),
            ({"prompt": [99]}, f"token 99 is not in [0, {len(CHARS)})"),
            ({"prompt": "a" * 25}, "a prompt of 25 tokens exceeds the 24 positions"),
            ({"prompt": "a", "max_tokens": 0}, '"max_tokens" is 0, not an integer in [1, 25]'),
            ({"prompt": "a", "max_tokens": 2**70}, '"max_tokens" is'),
            ({"prompt": "a", "temperature": -1}, '"temperature" is -1'),
            ({"prompt": "a", "temperature": "hot"}, '"temperature" is "hot"'),
            ({"prompt": "a", "top_p": 0}, '"top_p" is 0'),
            ({"prompt": "a", "top_p": 1.5}, '"top_p" is 1.5'),
            ({"prompt": "a", "top_k": -3}, '"top_k" is -3'),
            ({"prompt": "a", "seed": 2**64}, '"seed" is'),
            ({"prompt": "a", "stop": ["ab"]}, '"stop" holds "ab" is not one token'),
            ({"prompt": "a", "stop": list(range(17))}, '"stop" holds 17 tokens, over 16'),
            ({"prompt": "a", "stream": "yes"}, '"stream" is "yes", not a bool'),
            ({"prompt": "a", "n": 2}, '"n" is 2: one completion a request'),
            ({"prompt": ["a", "b"]}, '"prompt" holds text in a list'),
            ({"prompt": {"text": "a"}}, '"prompt" is object, not text or token ids'),
        ]:
            status, body = server.post("/v1/completions", bad)
            # OpenAI's shape: its clients show error.message.
            assert status == 400 and reason in body["error"]["message"], (bad, body)
            assert body["error"]["type"] == "invalid_request_error"
        # The server lives on.
        assert server.post("/v1/completions", {"prompt": "a", "max_tokens": 2})[0] == 200
    finally:
        server.stop()


def test_a_request_that_cannot_fit_gets_503_and_clients_leaving_midstream_do_no_harm(
    examples, saved
):
    server = Server(
        examples / "inference_server", saved, "--max-batch", "1", "--max-tokens", "10",
        "--max-waiting", "1",
    )  # fmt: skip
    try:
        status, body = server.post("/v1/completions", {"prompt": "the", "max_tokens": 9})
        assert status == 503, body
        assert body["error"]["message"] == (
            "the prompt's 3 tokens and max_tokens 9 need 11 positions of the cache, over the "
            "server's --max-tokens 10"
        )
        # Clients that read one event of a stream and leave.
        host, port = server.url.split("//")[1].split(":")
        request = json.dumps({"prompt": "t", "max_tokens": 10, "stream": True}).encode()
        for _ in range(3):
            with socket.create_connection((host, int(port)), timeout=30) as s:
                s.sendall(
                    b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                    + str(len(request)).encode() + b"\r\n\r\n" + request
                )  # fmt: skip
                got = b""
                while b"data: " not in got:
                    chunk = s.recv(4096)
                    assert chunk, got
                    got += chunk
        status, body = server.post("/v1/completions", {"prompt": "the", "max_tokens": 8})
        assert status == 200, body
        # One sequence at a time and one waiting: each of many at once is answered, or refused
        # with the reason.
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            long = {"prompt": "t", "max_tokens": 10, "temperature": 0}
            answers = list(pool.map(lambda _: server.post("/v1/completions", long), range(32)))
        assert {status for status, _ in answers} <= {200, 503}
        assert any(status == 200 for status, _ in answers)
        for status, body in answers:
            if status == 503:
                assert "waiting for room in the batch (--max-waiting)" in body["error"]["message"]
    finally:
        server.stop()


def test_completions_need_a_model_saved_for_generation(examples, gpt):
    server = Server(examples / "inference_server", gpt[1])
    try:
        status, body = server.post("/v1/completions", {"prompt": [1]})
        assert status == 400 and "save_gpt.py --generation" in body["error"]["message"]
        with urllib.request.urlopen(server.url + "/v1/health", timeout=10) as r:
            assert json.loads(r.read())["generation"] is False
    finally:
        server.stop()
    bad = subprocess.run(
        [str(examples / "inference_server"), gpt[1], "--max-tokens", "5"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 1 and "holds no model saved for generation" in bad.stderr


def test_the_generate_example_continues_text_prompts_as_pythons_decoder(examples, saved):
    out = subprocess.run(
        [str(examples / "generate"), os.path.join(saved, "generation"), "--temperature", "0.9",
         "--top-k", "8", "--seed", "5", "--max-new-tokens", "12", "the ", "lazy"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    model = small_gpt().eval()
    prompts = [[CHARS.index(c) for c in p] for p in ("the ", "lazy")]
    want = generate_cached(model, prompts, 12, 0.9, 8, seeds=[5, 5])
    assert out.stdout == "".join("".join(CHARS[t] for t in w) + "\n" for w in want)
    bad = subprocess.run(
        [str(examples / "generate"), os.path.join(saved, "generation"), "thE"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 1 and '"E" at byte 2 is not in the vocabulary' in bad.stderr


def test_a_tensor_parallel_model_decodes_from_cpp_on_two_ranks(examples, tmp_path):
    """Saved from a Megatron-style model on 2 ranks for 3 sequences (the cache split by heads),
    decoded by the generate example on 2 ranks: the single-process model's tokens, greedy and
    sampled; in one process, or for more sequences than saved, a clear error."""
    from _launch import launch
    from test_cpp_api import SIZES as CPP_SIZES, small_gpt as cpp_gpt

    out = str(tmp_path / "tp")
    r = launch(
        ["--nproc_per_node", "2"],
        [SAVE_GPT, out, "--tensor-parallel", "--generation", "--batch", "3", *CPP_SIZES],
    )
    assert r.returncode == 0, r
    prompts = [[3, 1, 4], [1, 5], [9, 2, 6, 5, 3]]
    model = cpp_gpt()
    for flags, (t, k, seed) in [
        ([], (0.0, 0, 0)),
        (["--temperature", "1", "--seed", "4"], (1.0, 0, 4)),
    ]:
        r = launch(
            ["--nproc_per_node", "2", "--no_python"],
            [str(examples / "generate"), os.path.join(out, "generation"), "--max-new-tokens", "6",
             *flags, *(",".join(map(str, p)) for p in prompts)],
        )  # fmt: skip
        assert r.returncode == 0, r
        want = generate_cached(model, prompts, 6, t, k, seeds=[seed] * 3)
        assert r.stdout.splitlines()[-3:] == [" ".join(map(str, w)) + " " for w in want], r
    alone = subprocess.run(
        [str(examples / "generate"), os.path.join(out, "generation"), "1,2"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert alone.returncode == 1 and "load it with a World" in alone.stderr, alone.stderr
    r = launch(
        ["--nproc_per_node", "2", "--no_python"],
        [str(examples / "generate"), os.path.join(out, "generation"), "1", "2", "3", "4"],
    )
    assert r.returncode != 0 and "saved for a batch of 3 sequences: max_batch 4 exceeds it" in (
        r.stdout + r.stderr
    ), r


def test_the_openai_client_completes_streams_and_shows_the_servers_errors(examples, saved):
    """OpenAI's own Python client (a client we did not write) against /v1/completions."""
    openai = pytest.importorskip("openai")
    server = Server(examples / "inference_server", saved, "--max-batch", "4")
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        args = dict(model="gpt", prompt="the ", max_tokens=12, temperature=0.8, seed=3)
        whole = client.completions.create(**args)
        (choice,) = whole.choices
        assert choice.finish_reason == "length" and len(choice.text) == 12
        assert whole.usage.prompt_tokens == 4 and whole.usage.completion_tokens == 12
        streamed = "".join(
            c.choices[0].text for c in client.completions.create(**args, stream=True)
        )
        assert streamed == choice.text
        model = small_gpt().eval()
        want = generate_cached(model, [[CHARS.index(c) for c in "the "]], 12, 0.8, seeds=[3])[0]
        assert choice.text == "".join(CHARS[t] for t in want)
        with pytest.raises(openai.BadRequestError) as e:
            client.completions.create(model="gpt", prompt="the ", max_tokens=1000)
        assert '"max_tokens" is 1000, not an integer in [1, 25]' in str(e.value)
    finally:
        server.stop()
