"""Every registered op is reachable from Python, and op costs follow their formulas."""

import oneflowlike as flow
import oneflowlike.nn.functional as F

# Ops that Python reaches through syntax rather than a function of the same name.
_SPELLED_DIFFERENTLY = {
    "slice": "__getitem__",
    "pow_scalar": "pow",
    "solve_triangular": "linalg_solve_triangular",  # flow._C's; flow.linalg.solve_triangular
}
# Ops that backward definitions call, besides the *_backward and *_grad ones.
_CALLED_BY_BACKWARD = {"max_pool2d_indices", "matmul_sum"}
# Fused ops that composites and the optimizers call (flow._C exposes them).
_CALLED_BY_COMPOSITES = {"flash_attention", "adam_moment_", "adam_step_", "_fft_c2c"} | {
    # The LAPACK-backed kernels under the linalg composites (python/oneflowlike/_linalg_*.py).
    "linalg_eig", "linalg_lu_factor_ex", "lu_permutation",
    "linalg_cholesky_ex", "linalg_qr", "linalg_eigh", "linalg_ldl_factor_ex", "linalg_ldl_solve",
}  # fmt: skip
# Ops that graph mode's passes make of others (nn.Graph runs them).
_MADE_BY_GRAPH_PASSES = {"_fused_elementwise"}


def _reachable(name):
    if name in _MADE_BY_GRAPH_PASSES:
        return hasattr(flow.nn, "Graph")
    if name.endswith(("_backward", "_grad")) or name in _CALLED_BY_BACKWARD:  # (_C.dispatch)
        return flow._C.dispatch is not None
    if name in _CALLED_BY_COMPOSITES:
        return hasattr(flow._C, name)
    name = _SPELLED_DIFFERENTLY.get(name, name)
    return any(hasattr(ns, name) for ns in (flow, flow.Tensor, F, flow._C))


def test_every_registered_op_is_reachable_from_python():
    ops = flow._C.registered_ops()
    assert len(ops) > 80
    missing = [op["name"] for op in ops if not _reachable(op["name"])]
    assert missing == []


def test_every_differentiable_op_the_dispatcher_runs_has_a_backward():
    # Without one its outputs would silently carry no gradient (double backward included: the
    # fused *_backward ops are differentiable too, except the norms', replaced under
    # create_graph by their gradients written in ops).
    ops = flow._C.registered_ops()
    missing = [
        o["name"] for o in ops if o["dispatched"] and o["differentiable"] and not o["has_backward"]
    ]
    assert missing == []
    fused = {o["name"]: o["has_backward"] for o in ops if o["name"].endswith("_backward")}
    assert fused["softmax_backward"] and fused["gelu_backward"] and fused["nll_loss_backward"]
    assert not fused["layer_norm_backward"]


def test_op_names_are_unique():
    names = [op["name"] for op in flow._C.registered_ops()]
    assert len(names) == len(set(names))


def test_matmul_cost_counts_two_flops_per_multiply_add():
    flops, nbytes = flow._C.op_cost("matmul", [[8, 4], [4, 16]], [8, 16], flow.float32)
    assert flops == 2 * 8 * 16 * 4
    assert nbytes == (8 * 4 + 4 * 16 + 8 * 16) * 4


def test_elementwise_cost_is_one_flop_per_output_element():
    flops, nbytes = flow._C.op_cost("add", [[3, 5], [5]], [3, 5], flow.float64)
    assert flops == 15
    assert nbytes == (15 + 5 + 15) * 8
