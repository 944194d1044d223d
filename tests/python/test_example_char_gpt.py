"""The char-GPT example trains (the loss falls), samples, and round-trips its state_dict."""

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import oneflowlike as flow  # noqa: E402
from char_gpt.model import GPT  # noqa: E402
from char_gpt.train import main  # noqa: E402

# Enforced by pytest-timeout where it is installed; the elapsed-time assert below holds anyway.
pytestmark = [pytest.mark.timeout(60)] if importlib.util.find_spec("pytest_timeout") else []

# fmt: off
SMALL = [
    "--steps", "40",
    "--batch-size", "16",
    "--block-size", "32",
    "--n-layer", "1",
    "--n-head", "2",
    "--n-embd", "32",
    "--lr", "1e-2",
    "--eval-batches", "2",
    "--sample-len", "40",
    "--seed", "0",
]
# fmt: on


def test_char_gpt_loss_falls_and_samples(tmp_path):
    ckpt = tmp_path / "gpt.ckpt"
    start = time.perf_counter()
    result = main(SMALL + ["--out", str(ckpt)])
    elapsed = time.perf_counter() - start

    losses = result["losses"]
    assert len(losses) == 40
    assert all(np.isfinite(losses))
    initial = np.mean(losses[:3])
    final = np.mean(losses[-10:])
    # A uniform guess over ~90 characters costs ln(90) ~ 4.5; character frequencies alone ~3.1.
    assert initial > 3.5, losses[:3]
    assert final < 0.85 * initial, (initial, final)
    assert np.isfinite(result["val_loss"]) and result["val_loss"] < 0.85 * initial

    sample = result["sample"]
    ds = result["dataset"]
    assert isinstance(sample, str) and len(sample) == 40
    assert set(sample) <= set(ds.chars)
    assert elapsed < 60, f"the small run took {elapsed:.1f}s"

    # The checkpoint loads into a fresh model and reproduces its logits exactly.
    model = result["model"]
    fresh = GPT(model.cfg)
    fresh.load_state_dict(flow.load(str(ckpt)))
    model.eval()
    fresh.eval()
    x, _ = ds.get_batch("val", 2, rng=np.random.default_rng(0))
    with flow.no_grad():
        np.testing.assert_array_equal(fresh(x)[0].numpy(), model(x)[0].numpy())


def test_char_dataset_encode_decode_and_batches():
    from char_gpt.data import CharDataset

    text = "hello world, hello fortunes!\n" * 20
    ds = CharDataset(text, block_size=8, seed=3)
    assert ds.decode(ds.encode("hello")) == "hello"
    assert ds.vocab_size == len(set(text))
    x, y = ds.get_batch("train", 4)
    x, y = x.numpy(), y.numpy()
    assert x.shape == (4, 8) and y.shape == (4, 8)
    np.testing.assert_array_equal(x[:, 1:], y[:, :-1])  # y is x shifted by one character
    # The same seed gives the same batches.
    x2, _ = CharDataset(text, block_size=8, seed=3).get_batch("train", 4)
    np.testing.assert_array_equal(x, x2.numpy())
    with pytest.raises(ValueError):
        ds.encode("\u00e9")


def test_generate_runs_nanogpts_loop_top_k_softmax_multinomial_cat():
    from char_gpt.model import GPTConfig, generate

    flow.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16))
    idx = flow.tensor([[1, 2, 3], [4, 5, 6]])
    # Past block_size, so the context is cropped as in nanoGPT.
    out = generate(model, idx, 12, temperature=0.9, top_k=3, generator=flow.Generator(0))
    assert out.dtype == flow.int64 and tuple(out.shape) == (2, 15)
    assert model.training  # restored after sampling in eval mode
    ids = out.numpy()
    np.testing.assert_array_equal(ids[:, :3], idx.numpy())
    again = generate(model, idx, 12, temperature=0.9, top_k=3, generator=flow.Generator(0))
    np.testing.assert_array_equal(again.numpy(), ids)

    model.eval()
    with flow.no_grad():
        for t in range(3, 15):  # every token is among the 3 largest logits of its step
            logits = model(flow.tensor(ids[:, max(0, t - 8) : t]))[0][:, -1, :].numpy()
            top = np.argsort(-logits, axis=1)[:, :3]
            assert all(ids[b, t] in top[b] for b in range(2)), (t, ids[:, t], top)
        greedy = generate(model, idx, 4, top_k=1).numpy()  # top-1 sampling is argmax decoding
        want = idx.numpy()
        for _ in range(4):
            logits = model(flow.tensor(want))[0][:, -1, :].numpy()
            want = np.concatenate([want, logits.argmax(axis=1)[:, None]], axis=1)
        np.testing.assert_array_equal(greedy, want)


def _written_out(recompute, dropout=0.2):
    """A 2-layer GPT with nanoGPT's written-out attention (its core recomputed in the backward or
    not), every instance from the same seed."""
    from char_gpt.model import GPTConfig

    flow.manual_seed(0)
    cfg = GPTConfig(11, 8, 2, 2, 16, dropout, fused_attention=False, recompute_attention=recompute)
    return GPT(cfg)


def test_written_out_attention_matches_the_fused_op():
    from char_gpt.model import GPTConfig

    flow.manual_seed(0)
    fused = GPT(GPTConfig(11, 8, 2, 2, 16))
    written = _written_out(False, dropout=0.0)
    written.load_state_dict(fused.state_dict())
    idx = flow.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]])
    np.testing.assert_allclose(written(idx)[0].numpy(), fused(idx)[0].numpy(), rtol=1e-5, atol=1e-6)


def test_selective_recomputation_gives_the_same_gradients_eagerly_and_in_a_graph():
    """Recomputing the attention core (its dropout drawing the forward's values again) changes
    what the backward keeps, not what it computes: eager gradients, and a graph step's update."""
    sys.path.insert(0, str(ROOT / "examples" / "parallel"))
    from gpt_layouts import TrainStep

    idx = flow.tensor([[1, 2, 3, 4, 5, 6, 7, 8], [8, 7, 6, 5, 4, 3, 2, 1]])
    grads, updated = {}, {}
    for recompute in (False, True):
        model = _written_out(recompute)
        flow.manual_seed(1)
        model(idx, idx)[1].backward()
        grads[recompute] = {n: p.grad.numpy() for n, p in model.named_parameters()}
        model = _written_out(recompute)
        step = TrainStep(model, flow.optim.SGD(model.parameters(), lr=0.5))
        flow.manual_seed(1)
        for _ in range(2):
            step(idx, idx)
        updated[recompute] = {n: p.numpy() for n, p in model.named_parameters()}
    for n, g in grads[False].items():
        np.testing.assert_allclose(grads[True][n], g, rtol=1e-5, atol=1e-6, err_msg=n)
        np.testing.assert_allclose(updated[True][n], updated[False][n], rtol=1e-5, atol=1e-6)
    assert any(np.abs(g).max() > 0 for g in grads[False].values())


def test_decoding_with_the_kv_cache_gives_the_full_forwards_logits_at_every_step():
    """A prefill of prompts of different lengths, then one token a step for the whole batch:
    every step's logits are the full window's, for a batch of one and a ragged batch."""
    from char_gpt.model import GPTConfig, KVCache

    flow.manual_seed(0)
    model = GPT(GPTConfig(11, 12, 2, 2, 16)).eval()
    rng = np.random.default_rng(0)
    for prompts in ([[1, 2, 3]], [[1, 2, 3, 4, 5], [6], [7, 8, 9]]):
        B, T = len(prompts), max(map(len, prompts))
        cache = KVCache(model.cfg, B)
        seqs = [list(p) for p in prompts]
        idx = flow.tensor([p + [0] * (T - len(p)) for p in prompts])
        logits, _ = model(
            idx, cache=cache, positions=flow.arange(T)[None].expand(B, T).contiguous()
        )
        got = [logits.numpy()[b, len(p) - 1] for b, p in enumerate(prompts)]
        for step in range(12 - T):
            for b, seq in enumerate(seqs):
                full = model(flow.tensor([seq]))[0].numpy()[0, -1]
                np.testing.assert_allclose(got[b], full, rtol=1e-4, atol=1e-5, err_msg=str(step))
            new = rng.integers(0, 11, B)
            positions = flow.tensor([[len(s)] for s in seqs])
            for seq, t in zip(seqs, new):
                seq.append(int(t))
            logits, _ = model(flow.tensor(new[:, None]), cache=cache, positions=positions)
            got = list(logits.numpy()[:, 0])


def test_cached_generation_is_greedy_or_seeded_and_a_prompt_gets_its_tokens_in_any_batch():
    from char_gpt.model import GPTConfig, generate_cached

    flow.manual_seed(0)
    model = GPT(GPTConfig(11, 16, 2, 2, 16, dropout=0.1))
    prompts = [[1, 2, 3, 4, 5], [6, 7], [8]]
    greedy = generate_cached(model, prompts, 6)
    assert model.training  # restored
    for prompt, tokens in zip(prompts, greedy):
        seq = list(prompt)
        model.eval()
        for _ in range(6):
            seq.append(int(model(flow.tensor([seq]))[0].numpy()[0, -1].argmax()))
        model.train()
        assert tokens == seq[len(prompt) :]
    args = dict(temperature=1.0, top_k=5, top_p=0.9)
    together = generate_cached(model, prompts, 8, seeds=[3, 4, 5], **args)
    alone = [
        generate_cached(model, [p], 8, seeds=[s], **args)[0] for p, s in zip(prompts, [3, 4, 5])
    ]
    assert together == alone
    assert generate_cached(model, prompts, 8, seeds=[3, 4, 5], **args) == together
    # As graphs (a prefill and a one-token step, compiled once), and again on the same Decoder.
    from char_gpt.model import Decoder

    decoder = Decoder(model, 4, graph=True)
    assert decoder.generate(prompts, 6) == greedy
    assert decoder.generate(prompts, 8, seeds=[3, 4, 5], **args) == together
    assert decoder.generate(prompts[:1], 6) == greedy[:1]
    with pytest.raises(ValueError, match="a Decoder for 4 prompts got 5"):
        decoder.generate(prompts + prompts[:2], 1)
    assert (
        len({tuple(generate_cached(model, [[1]], 8, seeds=[s], **args)[0]) for s in range(6)}) > 1
    )
    # Past the block: as many tokens as fit; a prompt that fills it leaves none.
    assert len(generate_cached(model, [[1] * 14], 10)[0]) == 3
    with pytest.raises(ValueError, match="leaves no room in block_size 16"):
        generate_cached(model, [[1] * 17], 1)
    with pytest.raises(ValueError, match="at least one token"):
        generate_cached(model, [[1], []], 1)


def test_a_graph_decodes_with_its_cache_as_state_like_the_full_forward():
    """The Decoder's step graph: the cache is graph state, written in place; tokens, positions
    and each row's last token are inputs (a prefill and a one-token step are two traces)."""
    from char_gpt.model import GPTConfig, KVCache, _DecodeStep

    flow.manual_seed(0)
    model = GPT(GPTConfig(11, 12, 2, 2, 16)).eval()
    cache = KVCache(model.cfg, 2)
    prefill, step = _DecodeStep(model, cache, 12, True), _DecodeStep(model, cache, 12, False)
    seqs = [[1, 2, 3], [4, 5]]
    positions = flow.tensor([[0, 1, 2], [0, 1, 2]])
    got = list(prefill(flow.tensor([[1, 2, 3], [4, 5, 0]]), positions, flow.tensor([2, 1])).numpy())
    before = cache.k0.numpy().copy()
    for i in range(6):
        for seq, row in zip(seqs, got):
            full = model(flow.tensor([seq]))[0].numpy()[0, -1]
            np.testing.assert_allclose(row, full, rtol=1e-4, atol=1e-5, err_msg=str(i))
        new = [(i * 3 + 1) % 11, (i * 5 + 2) % 11]
        positions = flow.tensor([[len(s)] for s in seqs])
        for seq, t in zip(seqs, new):
            seq.append(t)
        got = list(step(flow.tensor([[t] for t in new]), positions, flow.tensor([0, 0])).numpy())
    assert not np.array_equal(cache.k0.numpy(), before)  # the module's buffer, written in place
