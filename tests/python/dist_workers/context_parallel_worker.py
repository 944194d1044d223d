"""Context parallelism across real processes: attention with q, k and v split on the sequence
(S(2) of (batch, heads, sequence, head dim)), causal and not, equals the single-process result,
forward and gradients, eagerly and as an nn.Graph, by each of its three paths:
- ring: the fused op (flash_attention) takes k and v split as they are and passes their blocks
  around the ranks (no gather); the written-out form (q k^T, causal mask, softmax, @ v) keeps
  the split through its ops;
- gathered: k and v broadcast, each shard's query rows against every key at its offset;
- all-to-all (DeepSpeed-Ulysses): q, k and v to a heads split and the output back.
Self-attention (13 rows: uneven shards on 2 and 4 ranks) and cross-attention (13 queries and 9
keys: blocks of queries and keys that do not line up; 3 keys: an empty block on 4 ranks). And the
ring in the load-balanced order (causal, 16 rows in 2 x ranks chunks, F.load_balance): the
result equals one process's in that order. The ring's cases attend one sequence of one head:
at so few keys a split of the batch or the heads would cost less than the ring's exchanges, and
the op would take it. The written-out form runs with the fused op switched off
(scaled_dot_product_attention takes the fused op on the CPU too). Prints one JSON line of
problems.
"""

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
import oneflowlike.nn.functional as F
from _common import report

SEQ, HEADS, B = flow.sbp.split(2), flow.sbp.split(1), flow.sbp.broadcast
N, H, T, D = 2, 3, 13, 4
SCALE = 0.5


def arrays(keys, rows=T, batch=N, heads=H):
    rng = np.random.default_rng(3 + keys)
    q = rng.standard_normal((batch, heads, rows, D)).astype(np.float32)
    k, v = (rng.standard_normal((batch, heads, keys, D)).astype(np.float32) for _ in range(2))
    w = rng.standard_normal((batch, heads, rows, D)).astype(np.float32)  # the loss's weights
    return q, k, v, w


def balanced(a, ranks):
    """The array's sequence in the load-balanced order for `ranks` ranks (F.load_balance's)."""
    return F.load_balance(flow.tensor(a), ranks).numpy()


def split(a, place):
    """The whole array as a global tensor split on the sequence."""
    return flow.tensor(a).to_global(place, B).to_global(sbp=SEQ)


def attention(path, fused, q, k, v, causal, balance=0):
    if balance:
        return flow._C.flash_attention(q, k, v, SCALE, causal, balance=balance)
    if path == "gathered":
        k, v = k.to_global(sbp=B), v.to_global(sbp=B)
    elif path == "all-to-all":
        q, k, v = (t.to_global(sbp=HEADS) for t in (q, k, v))
    if fused:
        out = flow._C.flash_attention(q, k, v, SCALE, causal)
    else:
        with flow.backends.cuda.sdp_kernel(enable_flash=False):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=SCALE)
    return out.to_global(sbp=SEQ) if path == "all-to-all" else out


def single_process(fused, causal, case):
    """Output and gradients in one process, in order."""
    q, k, v, w = (flow.tensor(a) for a in case)
    for t in (q, k, v):
        t.requires_grad = True
    out = attention("one process", fused, q, k, v, causal)
    (out * w).sum().backward()
    return out.numpy(), [t.grad.numpy() for t in (q, k, v)]


class Params(flow.nn.Module):
    def __init__(self, place, qkv):
        super().__init__()
        for name, a in zip("qkv", qkv):
            setattr(self, name, flow.nn.Parameter(split(a, place)))


class Step(flow.nn.Graph):
    """One SGD step of lr 1 on q, k and v: each parameter moves by minus its gradient."""

    def __init__(self, params, path, fused, causal, w, balance):
        super().__init__()
        self.params, self.path, self.fused, self.causal, self.w = params, path, fused, causal, w
        self.balance = balance
        self.add_optimizer(flow.optim.SGD(params.parameters(), lr=1.0))

    def build(self):
        p = self.params
        out = attention(self.path, self.fused, p.q, p.k, p.v, self.causal, self.balance)
        (out * self.w).sum().backward()
        return out


CASES = [  # (path, fused, keys)
    ("ring", True, T),
    ("ring", False, T),
    ("ring", True, 9),
    ("ring", True, 3),  # fewer keys than 4 ranks: an empty block
    ("gathered", True, T),
    ("all-to-all", True, T),
    ("balanced", True, 16),  # the ring in the load-balanced order: causal only
]


def main():
    world = dist.get_world_size()
    place = flow.placement("cpu", ranks=list(range(world)))
    problems = []

    def check(name, got, want):
        if not np.allclose(got, want, atol=1e-5, rtol=1e-5):
            problems.append(f"{name}: off by {np.abs(np.asarray(got) - want).max():.3g}")

    for path, fused, keys in CASES:
        balance = world if path == "balanced" else 0
        rows = keys if balance else T
        one = (1, 1) if path in ("ring", "balanced") else (N, H)  # (batch, heads)
        case = arrays(keys, rows, *one)
        q_np, k_np, v_np, w_np = case
        order = (lambda a: balanced(a, world)) if balance else (lambda a: a)
        w = split(order(w_np), place)
        for causal in (True,) if balance else (False, True):
            tag = f"{path} {'fused' if fused else 'parts'} {keys} keys"
            tag += " causal" if causal else ""
            want_out, want_grads = single_process(fused, causal, case)
            want_out, want_grads = order(want_out), [order(g) for g in want_grads]
            stored = [order(a) for a in (q_np, k_np, v_np)]
            qkv = [split(a, place) for a in stored]
            for t in qkv:
                t.requires_grad = True
            with flow.boxing.comm_log() as log:
                out = attention(path, fused, *qkv, causal, balance)
            if path in ("ring", "balanced") and fused and any("all_" in line for line in log):
                problems.append(f"eager {tag}: not the ring (k and v moved): {log}")
            if path == "all-to-all" and sum("all_to_all" in line for line in log) != 4:
                problems.append(f"eager {tag}: not four all-to-alls: {log}")
            if out.sbp != (SEQ,):
                problems.append(f"eager {tag}: the output is {out.sbp}, not split on the sequence")
            check(f"eager {tag} output", out.numpy(), want_out)
            (out * w).sum().backward()
            for name, t, g in zip("qkv", qkv, want_grads):
                check(f"eager {tag} d{name}", t.grad.numpy(), g)

            params = Params(place, stored)
            graph_out = Step(params, path, fused, causal, w, balance)()
            check(f"graph {tag} output", graph_out.numpy(), want_out)
            for name, a, g in zip("qkv", stored, want_grads):
                check(f"graph {tag} d{name}", a - getattr(params, name).numpy(), g)
    report(rank=dist.get_rank(), problems=problems)


if __name__ == "__main__":
    main()
