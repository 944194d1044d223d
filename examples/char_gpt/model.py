"""A small GPT (decoder-only transformer) for character-level language modelling."""

import json
import math
import os
from dataclasses import dataclass
from typing import Optional

import oneflowlike as flow
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F
from oneflowlike.utils.checkpoint import checkpoint


@dataclass
class GPTConfig:
    """Model hyper-parameters; the defaults train in about a minute on two CPU cores."""

    vocab_size: int
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    # The attention core as one op (F.scaled_dot_product_attention: where its fused kernel serves,
    # 16-bit on CUDA, the backward recomputes the attention probabilities and no (T, T) tensor is
    # kept), or written out as nanoGPT's slow path (q k^T, causal mask, softmax, dropout, @ v).
    fused_attention: bool = True
    # With the written-out core: keep only its inputs and recompute it in the backward (Korthikanti
    # et al. 2022's selective recomputation: the (T, T) tensors are most of a layer's activations
    # and little of its FLOPs).
    recompute_attention: bool = False


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where each position sees only itself and the past."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        if cfg.n_embd % cfg.n_head != 0:
            raise ValueError(f"n_embd ({cfg.n_embd}) must be divisible by n_head ({cfg.n_head})")
        self.n_head = cfg.n_head
        self.fused = cfg.fused_attention
        self.recompute = cfg.recompute_attention
        if not self.fused:
            self.attn_drop = nn.Dropout(cfg.dropout)
            future = flow.ones(cfg.block_size, cfg.block_size).triu(1) > 0
            future = future.view(1, 1, cfg.block_size, cfg.block_size)
            self.register_buffer("future", future, persistent=False)  # not in the state_dict
        self.query = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.key = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.value = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.resid_drop = nn.Dropout(cfg.dropout)

    def forward(self, x, cache=None, positions=None, span=None, prefill=False):
        """x (B, T, C). With `cache` (a layer's (keys, values) of KVCache) and `positions` (B, T)
        int64: this step's keys and values are written at their positions, and each query
        attends to the cache up to its own position (within its first `span` positions, when
        given: no later position is read). `prefill`: the positions are 0..T-1 in every row, so
        the past is this step's own tokens, attended causally without reading the cache."""
        B, T, C = x.shape
        hd = C // self.n_head
        # (B, T, C) -> (B, n_head, T, hd): every head attends independently.
        q = self.query(x).view(B, T, self.n_head, hd).transpose(1, 2)
        if cache is not None:
            keys, values = cache.write(self.key(x), self.value(x), positions)
            if prefill:
                keys, values = keys[:, :T], values[:, :T]
            elif span is not None:
                keys, values = keys[:, :span], values[:, :span]
            k = keys.view(B, -1, self.n_head, hd).transpose(1, 2)
            v = values.view(B, -1, self.n_head, hd).transpose(1, 2)
            if prefill:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                seen = flow.arange(k.size(2), device=x.device)[None, None, None, :]
                mask = seen <= positions[:, None, :, None]
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self.resid_drop(self.proj(y.transpose(1, 2).reshape(B, T, C)))
        k = self.key(x).view(B, T, self.n_head, hd).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, hd).transpose(1, 2)
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif self.recompute:
            y = checkpoint(self.core, q, k, v)
        else:
            y = self.core(q, k, v)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.resid_drop(self.proj(y))

    def core(self, q, k, v):
        """softmax(q k^T / sqrt(hd), the future masked) @ v, written out."""
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
        att = att.masked_fill(self.future[:, :, :T, :T], float("-inf"))
        return self.attn_drop(F.softmax(att, dim=-1)) @ v


class MLP(nn.Module):
    """Position-wise feed-forward network: Linear -> GELU -> Linear."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.act = nn.GELU()
        self.proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.drop(self.proj(self.act(self.fc(x))))


class Block(nn.Module):
    """One pre-LayerNorm transformer block with residual connections."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x, cache=None, positions=None, span=None, prefill=False):
        x = x + self.attn(self.ln1(x), cache, positions, span, prefill)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token + learned position embeddings, a stack of blocks, a final LayerNorm, an LM head."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.apply(self._init_weights)
        # GPT-2: scale the residual projections so the residual stream's variance stays ~1.
        for block in self.blocks:
            for proj in (block.attn.proj, block.mlp.proj):
                nn.init.normal_(proj.weight, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, targets=None, cache=None, positions=None, span=None, prefill=False):
        """idx: (B, T) int64 token ids; returns (logits (B, T, V), loss or None).

        Incremental decoding: with `cache` (a KVCache) and `positions` (B, T) int64 (where each
        token sits in its sequence), the tokens' keys and values are written into the cache and
        each attends to its sequence's cached past: a prefill of whole prompts, then one token a
        step, gives the logits the full window would. `span` (an int above every position)
        limits attention to the cache's first span positions, which costs less than all;
        `prefill` says the positions are 0..T-1 in every row (attention is then causal over the
        tokens themselves, as without a cache)."""
        B, T = idx.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.cfg.block_size}")
        if cache is not None:
            if positions is None or tuple(positions.shape) != (B, T):
                raise ValueError(
                    f"decoding with a cache needs positions of shape ({B}, {T}), one per token"
                )
            x = self.drop(self.tok_emb(idx) + self.pos_emb(positions))
            for block, layer in zip(self.blocks, cache.layers()):
                x = block(x, layer, positions, span, prefill)
            return self.head(self.ln_f(x)), None
        # Positions 0..T-1 are the table's first T rows (pos_emb(arange(T)), without an index
        # tensor that would have to be placed like idx when idx is global).
        x = self.drop(self.tok_emb(idx) + self.pos_emb.weight[:T])
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            V = logits.shape[-1]
            loss = F.cross_entropy(logits.view(-1, V), targets.view(-1))
        return logits, loss


class KVCache(nn.Module):
    """Every layer's keys and values for `batch` sequences of up to `length` positions (default
    the model's block_size), preallocated and written in place at each step (HF's StaticCache):
    buffers `k<layer>`, `v<layer>` of shape (batch, length, n_embd), not saved in a state_dict."""

    def __init__(self, cfg: GPTConfig, batch: int, length: Optional[int] = None, dtype=None,
                 device=None):  # fmt: skip
        super().__init__()
        self.batch, self.length = batch, length or cfg.block_size
        if self.length > cfg.block_size:
            raise ValueError(
                f"a cache of {self.length} positions exceeds block_size {cfg.block_size}"
            )
        for i in range(cfg.n_layer):
            for kind in "kv":
                buf = flow.zeros(batch, self.length, cfg.n_embd, dtype=dtype, device=device)
                self.register_buffer(f"{kind}{i}", buf, persistent=False)
        self.n_layer = cfg.n_layer

    def layers(self):
        return [
            _LayerCache(getattr(self, f"k{i}"), getattr(self, f"v{i}")) for i in range(self.n_layer)
        ]


class CacheTensors:
    """A cache given as tensors k0, v0, k1, v1, ... (each (B, length, C)), written in place: how a
    graph saved for generation takes it, so that its caller (ofl::Generator) owns the memory and
    keeps one row per sequence."""

    def __init__(self, tensors):
        self.tensors = tensors

    def layers(self):
        return [_LayerCache(k, v) for k, v in zip(self.tensors[0::2], self.tensors[1::2])]


class _LayerCache:
    """One layer's keys and values, (B, length, C)."""

    def __init__(self, keys, values):
        self.keys, self.values = keys, values

    def write(self, k, v, positions):
        """Writes k, v (B, T, C) at positions (B, T) of each row; returns the layer's (keys,
        values), (B, length, C)."""
        keys, values = self.keys, self.values
        at = positions[:, :, None].expand(*positions.shape, keys.size(2))
        keys.scatter_(1, at, k)  # a position outside the cache raises
        values.scatter_(1, at, v)
        return keys, values


def _last_logits(model, cache, idx, positions, last, span, prefill):
    """The logits of each row's token `last` (B,), the tokens written into the cache."""
    logits, _ = model(idx, cache=cache, positions=positions, span=span, prefill=prefill)
    return logits.gather(1, last[:, None, None].expand(-1, 1, logits.size(-1)))[:, 0]


class _DecodeStep(flow.nn.Graph):
    """One step of a Decoder as a graph, attending to the cache's first `span` positions: the
    cache is graph state written in place; the tokens, their positions and the index of each
    row's last token are inputs (a prefill and a one-token step are two traces, compiled once
    each)."""

    def __init__(self, model, cache, span, prefill):
        super().__init__()
        self.model, self.cache, self.span, self.prefill = model, cache, span, prefill

    def build(self, idx, positions, last):
        return _last_logits(self.model, self.cache, idx, positions, last, self.span, self.prefill)


class _SavedStep(flow.nn.Graph):
    """A decoding step as saved for C++ (save_for_generation): the cache comes in as tensors
    (CacheTensors) written in place, the tokens, positions and each row's last token too; a step
    attends to the cache's first `span` positions."""

    def __init__(self, model, prefill, span):
        super().__init__()
        self.model, self.prefill, self.span = model, prefill, span

    def build(self, idx, positions, last, *cache):
        return _last_logits(
            self.model, CacheTensors(cache), idx, positions, last, self.span, self.prefill
        )


GENERATION_FORMAT = "oneflowlike-generation"


def generation_spans(length: int):
    """The spans graphs are saved for: powers of two from 64, and the cache's length."""
    spans, span = [], 64
    while span < length:
        spans.append(span)
        span *= 2
    return spans + [length]


@flow.no_grad()
def save_for_generation(model: GPT, path, chars: Optional[str] = None, batch: Optional[int] = None):
    """Saves what ofl::Generator loads (C++), in path: generation.json (the cache's sizes, the
    graphs and, with `chars`, the vocabulary: token i is chars[i]) and the graphs, each taking
    (idx, positions, last, k0, v0, k1, v1, ...) and giving each row's logits after its token
    `last`, for each span of generation_spans(block_size): step_<span> (one token a row at its
    position, attending to the cache's first span positions) and prefill_<span> (prompts of up
    to span tokens, padded, at positions 0..span-1). Graphs with equal weights share one file
    (hard links).

    A local model's graphs take any batch. A global one's (tensor parallel: model.to_global)
    are saved by every rank for `batch` sequences, with each rank's shards of the weights and its
    cache split as the key projection's output is (by heads, for Megatron's layout): one step
    over the whole cache, no prefill (the C++ side feeds a prompt a token a step)."""
    cfg = model.cfg
    if chars is not None and len(chars) != cfg.vocab_size:
        raise ValueError(f"{len(chars)} characters for a vocabulary of {cfg.vocab_size} tokens")
    w = model.head.weight
    if w.is_global and not batch:
        raise ValueError("save_for_generation: a global model saves for one batch: give batch=")
    was_training = model.training
    model.eval()
    L, B = cfg.block_size, batch or 1
    if w.is_global:
        place, key = w.placement, model.blocks[0].attn.key.weight.sbp[0]
        split = key.is_split() and key.axis == 0  # column parallel: the heads split
        cache_sbp = flow.sbp.split(2) if split else flow.sbp.broadcast

        def made(*shape, dtype=flow.int64, sbp=flow.sbp.broadcast):
            return flow.zeros(*shape, dtype=dtype, placement=place, sbp=sbp)

    else:
        cache_sbp = None

        def made(*shape, dtype=flow.int64, sbp=None):
            return flow.zeros(*shape, dtype=dtype, device=w.device)

    spans = [L] if w.is_global else generation_spans(L)
    graphs = {kind: [] for kind in (("step",) if w.is_global else ("prefill", "step"))}
    for kind, saved in graphs.items():
        for span in spans:
            T = span if kind == "prefill" else 1
            cache = [
                made(B, L, cfg.n_embd, dtype=w.dtype, sbp=cache_sbp) for _ in range(2 * cfg.n_layer)
            ]
            positions = flow.arange(T)[None, :].expand(B, T).contiguous()
            if w.is_global:
                positions = positions.to_global(place, flow.sbp.broadcast)
            else:
                positions = positions.to(w.device)
            graph = _SavedStep(model, kind == "prefill", span)
            graph(made(B, T), positions, made(B), *cache)
            saved.append([span, f"{kind}_{span}"])
            graph.save(os.path.join(path, saved[-1][1]), dynamic_batch=not w.is_global)
    model.train(was_training)
    if not w.is_global:
        _link_equal_weights(path, [name for kind in graphs.values() for _, name in kind])
    meta = {
        "format": GENERATION_FORMAT,
        "format_version": 1,
        "length": L,
        "n_layer": cfg.n_layer,
        "n_embd": cfg.n_embd,
        "vocab_size": cfg.vocab_size,
        "cache": [f"{kind}{i}" for i in range(cfg.n_layer) for kind in "kv"],
        "graphs": graphs,
    }
    if chars is not None:
        meta["chars"] = list(chars)
    if flow.distributed.get_rank() == 0:
        with open(os.path.join(path, "generation.json"), "w") as f:
            json.dump(meta, f, indent=1)


def _link_equal_weights(path, names):
    """A graph's weights.safetensors holding the same tensors under the same names as an
    earlier graph's becomes a hard link to that file: one file on disk, and one copy in memory
    (ofl::Graph shares the weights of files that are one)."""
    kept = []  # (file, its tensors)
    for name in names:
        file = os.path.join(path, name, "weights.safetensors")
        tensors = flow.load(file)
        same = next((f for f, t in kept if _same_tensors(t, tensors)), None)
        if same is None:
            kept.append((file, tensors))
            continue
        try:
            os.link(same, file + ".link")
        except OSError:  # a file system without hard links: the copies stay
            continue
        os.replace(file + ".link", file)


def _same_tensors(a, b):
    return a.keys() == b.keys() and all(
        a[k].shape == b[k].shape and a[k].dtype == b[k].dtype and bool((a[k] == b[k]).all())
        for k in a
    )


class Decoder:
    """Generates for up to `batch` prompts at a time with one KVCache: one prefill of the
    prompts, then one token a step for the whole batch. With graph=True every step runs as an
    nn.Graph (compiled on first use, kept for later calls), without Python per op. Sampling is
    flow.sample_tokens's: greedy at temperature 0, else top-k and top-p with a seed per prompt
    (default 0), token i of a request drawn at step i, so a prompt gets the same tokens in any
    batch."""

    def __init__(self, model: GPT, batch: int, graph: bool = False):
        self.model, self.batch = model, batch
        w = model.head.weight
        self.cache = KVCache(model.cfg, batch, dtype=w.dtype, device=w.device)
        self.graph = graph
        self.steps = {}  # (span, prefill) -> its _DecodeStep

    # Attention reads the cache up to a multiple of SPAN past the furthest position: a handful of
    # shapes (graphs) per generation, and no step reads the whole cache before it must.
    SPAN = 64

    def _logits(self, idx, positions, last, furthest, prefill=False):
        span = min(self.cache.length, (furthest // self.SPAN + 1) * self.SPAN)
        if self.graph:
            key = (span, prefill)
            if key not in self.steps:
                self.steps[key] = _DecodeStep(self.model, self.cache, span, prefill)
            return self.steps[key](idx, positions, last)
        return _last_logits(self.model, self.cache, idx, positions, last, span, prefill)

    @flow.no_grad()
    def generate(self, prompts, max_new_tokens, temperature=0.0, top_k=0, top_p=1.0, seeds=None):
        """Up to max_new_tokens new tokens for each prompt (token-id lists of any lengths, at
        most `batch` of them; fewer are padded with empty rows), stopping at the block."""
        model, cfg = self.model, self.model.cfg
        n, lengths = len(prompts), [len(p) for p in prompts]
        if not 1 <= n <= self.batch:
            raise ValueError(f"a Decoder for {self.batch} prompts got {n}")
        if min(lengths) < 1:
            raise ValueError("every prompt needs at least one token")
        steps = min(max_new_tokens, cfg.block_size - max(lengths) + 1)
        if steps < 1:
            raise ValueError(
                f"a prompt of {max(lengths)} tokens leaves no room in block_size {cfg.block_size}"
            )
        # Only the modules in training mode are switched (and back): model.eval() on every
        # module costs as much as a short prompt's prefill.
        training = [m for m in model.modules() if m.training]
        for m in training:
            m.training = False
        B, T, device = self.batch, max(lengths), self.cache.k0.device
        rows = [list(p) + [0] * (T - len(p)) for p in prompts] + [[0] * T] * (B - n)
        lengths += [1] * (B - n)
        per_row = lambda v, dtype: flow.full((B,), v, dtype=dtype, device=device)  # noqa: E731
        seeds = list(seeds) if seeds is not None else [0] * n
        seeds = flow.tensor(seeds + [0] * (B - n), device=device)
        t, k = per_row(temperature, flow.float32), per_row(top_k, flow.int64)
        p = per_row(top_p, flow.float32)
        last = flow.tensor([m - 1 for m in lengths], device=device)
        positions = flow.arange(T, device=device)[None, :].expand(B, T).contiguous()
        logits = self._logits(flow.tensor(rows, device=device), positions, last, T - 1, True)
        out, first = [], per_row(0, flow.int64)
        for i in range(steps):
            token = flow.sample_tokens(logits.float(), seeds, per_row(i, flow.int64), t, k, p)
            out.append(token)
            if i + 1 < steps:
                furthest = max(lengths) + i
                logits = self._logits(token[:, None], (last + 1 + i)[:, None], first, furthest)
        for m in training:
            m.training = True
        return flow.stack(out, dim=1).tolist()[:n]


def generate_cached(
    model: GPT,
    prompts,
    max_new_tokens: int,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seeds=None,
    graph: bool = False,
):
    """Decoder(model, len(prompts), graph).generate(prompts, ...): the new tokens of each
    prompt, decoding with a KV cache."""  # fmt: skip
    return Decoder(model, len(prompts), graph).generate(
        prompts, max_new_tokens, temperature, top_k, top_p, seeds
    )


@flow.no_grad()
def generate(
    model: GPT,
    idx,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: Optional[int] = None,
    generator: Optional[flow.Generator] = None,
):
    """Extend idx (B, T) by max_new_tokens sampled tokens; returns the (B, T + new) tensor.

    nanoGPT's loop: crop to the block, keep the top-k logits, softmax, draw with multinomial."""
    was_training = model.training
    model.eval()
    block = model.cfg.block_size
    for _ in range(max_new_tokens):
        idx_cond = idx if idx.size(1) <= block else idx[:, -block:]
        logits, _ = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = flow.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        idx_next = flow.multinomial(probs, num_samples=1, generator=generator)
        idx = flow.cat((idx, idx_next), dim=1)
    model.train(was_training)
    return idx
