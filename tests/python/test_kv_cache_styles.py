"""KV caches as other people write them, with `import oneflowlike as torch`: Meta's Llama
reference style (a preallocated cache written by slice assignment, rotary embeddings as complex
numbers, grouped-query heads repeated), Hugging Face's StaticCache style (buffers written with
index_copy_, in eager mode and in nn.Graph), and the DynamicCache style (past keys and values
taken and returned, grown by cat). Each decodes to the full forward's logits; the Llama style
matches PyTorch's on the same weights."""

import math

import numpy as np
import pytest

import oneflowlike as flow

try:  # imported here: loading it starts a process, which a unit test may not
    import torch
except ImportError:
    torch = None

DIM, HEADS, KV_HEADS, VOCAB, MAX_LEN = 32, 4, 2, 40, 16


def attention_layer(T, cache_write, rotary=True):
    """A one-layer causal attention LM written against the library T (flow or torch). The
    cache is (batch, MAX_LEN, KV_HEADS, head_dim) keys and values; cache_write(cache, start,
    x) writes x at positions start..start+len."""
    nn, F = T.nn, T.nn.functional
    hd = DIM // HEADS

    def rotate(x, freqs):
        xc = T.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return T.view_as_real(xc * freqs.view(1, x.shape[1], 1, -1)).flatten(3).type_as(x)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, DIM)
            self.q = nn.Linear(DIM, HEADS * hd, bias=False)
            self.k = nn.Linear(DIM, KV_HEADS * hd, bias=False)
            self.v = nn.Linear(DIM, KV_HEADS * hd, bias=False)
            self.o = nn.Linear(HEADS * hd, DIM, bias=False)
            self.head = nn.Linear(DIM, VOCAB, bias=False)
            inv = 1.0 / (10000.0 ** (T.arange(0, hd, 2)[: hd // 2].float() / hd))
            angles = T.outer(T.arange(2 * MAX_LEN).float(), inv)
            self.freqs = T.polar(T.ones_like(angles), angles)  # complex64

        def forward(self, tokens, start, cache_k, cache_v):
            b, n = tokens.shape
            h = self.emb(tokens)
            q = self.q(h).view(b, n, HEADS, hd)
            k = self.k(h).view(b, n, KV_HEADS, hd)
            v = self.v(h).view(b, n, KV_HEADS, hd)
            if rotary:
                freqs = self.freqs[start : start + n]
                q, k = rotate(q, freqs), rotate(k, freqs)
            cache_write(cache_k, start, k)
            cache_write(cache_v, start, v)
            keys = cache_k[:b, : start + n].repeat_interleave(HEADS // KV_HEADS, dim=2)
            values = cache_v[:b, : start + n].repeat_interleave(HEADS // KV_HEADS, dim=2)
            q, keys, values = q.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
            scores = T.matmul(q, keys.transpose(2, 3)) / math.sqrt(hd)
            if n > 1:
                mask = T.triu(T.full((n, n), float("-inf")), diagonal=1)
                scores = scores + T.hstack([T.zeros((n, start)), mask])
            y = T.matmul(F.softmax(scores.float(), dim=-1).type_as(q), values)
            return self.head(self.o(y.transpose(1, 2).contiguous().view(b, n, -1)))

    return Model()


def slice_assign(cache, start, x):  # Meta's Llama: cache[:bsz, start : start + n] = x
    cache[: x.shape[0], start : start + x.shape[1]] = x


def weights(model):
    rng = np.random.default_rng(0)
    return {
        k: (0.2 * rng.standard_normal(tuple(v.shape))).astype(np.float32)
        for k, v in sorted(model.state_dict().items())
    }


def decode(T, model, prompt, steps, cache_write):
    """The logits of a prefill and of `steps` greedy one-token steps, (steps + 1, batch, V)."""
    b = len(prompt)
    cache_k = T.zeros(b, MAX_LEN, KV_HEADS, DIM // HEADS)
    cache_v = T.zeros(b, MAX_LEN, KV_HEADS, DIM // HEADS)
    out, start = [], 0
    tokens = T.tensor(prompt)
    with T.no_grad():
        for _ in range(steps + 1):
            logits = model(tokens, start, cache_k, cache_v)[:, -1]
            out.append(logits.numpy())
            start += tokens.shape[1]
            tokens = T.tensor(out[-1].argmax(-1)[:, None].astype(np.int64))
    return np.stack(out)


def full_forward(T, model, prompt, steps):
    """The same, each step the whole sequence again without a cache to read."""
    seq, out = [list(p) for p in prompt], []
    with T.no_grad():
        for _ in range(steps + 1):
            n = len(seq[0])
            cache_k = T.zeros(len(seq), MAX_LEN, KV_HEADS, DIM // HEADS)
            cache_v = T.zeros(len(seq), MAX_LEN, KV_HEADS, DIM // HEADS)
            logits = model(T.tensor(seq), 0, cache_k, cache_v)[:, n - 1]
            out.append(logits.numpy())
            for row, t in zip(seq, out[-1].argmax(-1)):
                row.append(int(t))
    return np.stack(out)


PROMPT = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]


def test_llamas_slice_assigned_cache_decodes_like_the_full_forward_and_pytorch():
    model = attention_layer(flow, slice_assign)
    w = weights(model)
    model.load_state_dict({k: flow.tensor(v) for k, v in w.items()})
    got = decode(flow, model, PROMPT, 5, slice_assign)
    np.testing.assert_allclose(got, full_forward(flow, model, PROMPT, 5), atol=1e-5)
    if torch is None:
        pytest.skip("PyTorch is not installed")
    theirs = attention_layer(torch, slice_assign)
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in w.items()})
    np.testing.assert_allclose(got, decode(torch, theirs, PROMPT, 5, slice_assign), atol=1e-5)


def index_copy(cache, start, x):  # Hugging Face's StaticCache: index_copy_ at cache_position
    cache.index_copy_(1, flow.arange(start, start + x.shape[1]), x)


class Step(flow.nn.Graph):
    """One decoding step of a StaticCache-style model: the cache buffers are graph state."""

    def __init__(self, model, start):
        super().__init__()
        self.model, self.start = model, start

    def build(self, tokens):
        m = self.model
        return m.model(tokens, self.start, m.cache_k, m.cache_v)[:, -1]


def test_a_static_cache_written_by_index_copy_decodes_in_a_graph_like_eager():
    model = attention_layer(flow, index_copy)
    model.load_state_dict({k: flow.tensor(v) for k, v in weights(model).items()})
    eager = decode(flow, model, PROMPT, 4, index_copy)
    np.testing.assert_allclose(eager, full_forward(flow, model, PROMPT, 4), atol=1e-5)

    holder = flow.nn.Module()  # the cache as buffers, as StaticCache keeps it
    holder.model = model
    holder.register_buffer("cache_k", flow.zeros(2, MAX_LEN, KV_HEADS, DIM // HEADS))
    holder.register_buffer("cache_v", flow.zeros(2, MAX_LEN, KV_HEADS, DIM // HEADS))
    tokens, start, out = flow.tensor(PROMPT), 0, []
    for _ in range(5):
        out.append(Step(holder, start)(tokens).numpy())
        start += tokens.shape[1]
        tokens = flow.tensor(out[-1].argmax(-1)[:, None].astype(np.int64))
    np.testing.assert_allclose(np.stack(out), eager, atol=1e-5)
    assert float(holder.cache_k[:, start - 1].abs().sum()) > 0  # the graph wrote the buffer


def test_a_graph_writing_a_cache_through_a_slice_says_how_to_write_it():
    model = attention_layer(flow, slice_assign)
    holder = flow.nn.Module()
    holder.model = model
    holder.register_buffer("cache_k", flow.zeros(2, MAX_LEN, KV_HEADS, DIM // HEADS))
    holder.register_buffer("cache_v", flow.zeros(2, MAX_LEN, KV_HEADS, DIM // HEADS))
    with pytest.raises(Exception, match=r"cache.index_copy_\(1, positions, x\)"):
        Step(holder, 0)(flow.tensor(PROMPT))


def test_a_dynamic_cache_grown_by_cat_decodes_eagerly_and_in_graphs():
    """past (keys, values) in, the grown past out: HF's DynamicCache / legacy past_key_values."""
    model = attention_layer(flow, slice_assign, rotary=False)
    model.load_state_dict({k: flow.tensor(v) for k, v in weights(model).items()})
    hd = DIM // HEADS

    def step(tokens, past_k, past_v):
        b, n = tokens.shape
        h = model.emb(tokens)
        q = model.q(h).view(b, n, HEADS, hd).transpose(1, 2)
        k = model.k(h).view(b, n, KV_HEADS, hd).repeat_interleave(2, dim=2).transpose(1, 2)
        v = model.v(h).view(b, n, KV_HEADS, hd).repeat_interleave(2, dim=2).transpose(1, 2)
        k, v = flow.cat([past_k, k], dim=2), flow.cat([past_v, v], dim=2)
        y = flow.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=n > 1)
        logits = model.head(model.o(y.transpose(1, 2).reshape(b, n, -1)))
        return logits[:, -1], k, v

    class Graph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, tokens, past_k, past_v):
            return step(tokens, past_k, past_v)

    want = full_forward(flow, model, PROMPT, 4)
    for run in (step, Graph()):  # a graph compiles once per past length
        past = flow.zeros(2, HEADS, 0, hd)
        tokens, past_k, past_v, out = flow.tensor(PROMPT), past, past, []
        with flow.no_grad():
            for _ in range(5):
                logits, past_k, past_v = run(tokens, past_k, past_v)
                out.append(logits.numpy())
                tokens = flow.tensor(out[-1].argmax(-1)[:, None].astype(np.int64))
        np.testing.assert_allclose(np.stack(out), want, atol=1e-5)
