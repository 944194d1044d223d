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
