"""Context parallelism across real processes: attention with q, k and v split on the sequence
(S(2) of (batch, heads, sequence, head dim)), causal and not, equals the single-process result,
forward and gradients, eagerly and as an nn.Graph, and its output stays split on the sequence.
The fused op (flash_attention) runs each shard's query rows against the gathered keys at the
shard's offset; the written-out form (q k^T, causal mask, softmax, @ v) keeps the split through
its ops. Prints one JSON line of problems."""

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
import oneflowlike.nn.functional as F
from _common import report

SEQ = flow.sbp.split(2)
B_, H, T, D = 2, 3, 13, 4  # 13 rows: uneven shards on 2 and 4 ranks
SCALE = 0.5


def arrays():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((B_, H, T, D)).astype(np.float32) for _ in range(3))
    w = rng.standard_normal((B_, H, T, D)).astype(np.float32)  # the loss's weights
    return q, k, v, w


def split(a, place):
    """The whole array as a global tensor split on the sequence."""
    return flow.tensor(a).to_global(place, flow.sbp.broadcast).to_global(sbp=SEQ)


def attention(fused, q, k, v, causal):
    if fused:
        return flow._C.flash_attention(q, k, v, SCALE, causal)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=SCALE)


def single_process(fused, causal):
    q, k, v, w = (flow.tensor(a) for a in arrays())
    for t in (q, k, v):
        t.requires_grad = True
    out = attention(fused, q, k, v, causal)
    (out * w).sum().backward()
    return out.numpy(), [t.grad.numpy() for t in (q, k, v)]


class Params(flow.nn.Module):
    def __init__(self, place):
        super().__init__()
        q, k, v, _ = arrays()
        for name, a in zip("qkv", (q, k, v)):
            setattr(self, name, flow.nn.Parameter(split(a, place)))


class Step(flow.nn.Graph):
    """One SGD step of lr 1 on q, k and v: each parameter moves by minus its gradient."""

    def __init__(self, params, fused, causal, w):
        super().__init__()
        self.params, self.fused, self.causal, self.w = params, fused, causal, w
        self.add_optimizer(flow.optim.SGD(params.parameters(), lr=1.0))

    def build(self):
        p = self.params
        out = attention(self.fused, p.q, p.k, p.v, self.causal)
        (out * self.w).sum().backward()
        return out


def main():
    world = dist.get_world_size()
    place = flow.placement("cpu", ranks=list(range(world)))
    problems = []

    def check(name, got, want):
        if not np.allclose(got, want, atol=1e-5, rtol=1e-5):
            problems.append(f"{name}: off by {np.abs(np.asarray(got) - want).max():.3g}")

    q_np, k_np, v_np, w_np = arrays()
    w = split(w_np, place)
    for fused in (True, False):
        for causal in (False, True):
            tag = f"{'fused' if fused else 'parts'} {'causal' if causal else 'full'}"
            want_out, want_grads = single_process(fused, causal)
            qkv = [split(a, place) for a in (q_np, k_np, v_np)]
            for t in qkv:
                t.requires_grad = True
            out = attention(fused, *qkv, causal)
            if out.sbp != (SEQ,):
                problems.append(f"eager {tag}: the output is {out.sbp}, not split on the sequence")
            check(f"eager {tag} output", out.numpy(), want_out)
            (out * w).sum().backward()
            for name, t, g in zip("qkv", qkv, want_grads):
                check(f"eager {tag} d{name}", t.grad.numpy(), g)

            params = Params(place)
            graph_out = Step(params, fused, causal, w)()
            check(f"graph {tag} output", graph_out.numpy(), want_out)
            for name, a, g in zip("qkv", (q_np, k_np, v_np), want_grads):
                check(f"graph {tag} d{name}", a - getattr(params, name).numpy(), g)
    report(rank=dist.get_rank(), problems=problems)


if __name__ == "__main__":
    main()
