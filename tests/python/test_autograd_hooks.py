"""Tensor.register_hook, register_post_accumulate_grad_hook and autograd.queue_callback, against
PyTorch's semantics (what DistributedDataParallel is built on)."""

import numpy as np
import pytest

import oneflowlike as flow


def leaf(values=(1.0, 2.0, 3.0)):
    return flow.tensor(list(values), requires_grad=True)


def test_a_leaf_hook_sees_the_gradient_and_its_result_replaces_it():
    x = leaf()
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))  # returns None: kept
    x.register_hook(lambda g: g * 10)
    (x * x).sum().backward()
    np.testing.assert_allclose(seen[0], [2.0, 4.0, 6.0])
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 40.0, 60.0])


def test_hooks_run_in_registration_order_each_on_the_last_result():
    x = leaf()
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 2)
    x.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0, 4.0])


def test_a_non_leaf_hook_changes_what_flows_on_and_what_retain_grad_keeps():
    x = leaf()
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0, 6.0])


def test_a_non_leaf_hook_sees_the_sum_of_every_use():
    x = leaf()
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    (y * 2 + y * 3).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], [5.0, 5.0, 5.0])


def test_removed_hooks_do_not_run_and_remove_twice_is_harmless():
    x = leaf()
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    handle.remove()
    with x.register_hook(lambda g: g * 2):
        x.sum().backward()
    x.grad = None
    x.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0, 1.0])


def test_a_hook_on_a_tensor_without_grad_or_returning_a_wrong_shape_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        flow.ones(3).register_hook(lambda g: g)
    x = leaf()
    x.register_hook(lambda g: flow.ones(2))
    with pytest.raises(RuntimeError, match=r"register_hook.*shape \(2,\).*shape \(3,\)"):
        x.sum().backward()


def test_an_error_in_a_hook_reaches_backward_s_caller():
    x = leaf()

    def broken(g):
        raise ValueError("hook broke")

    x.register_hook(broken)
    with pytest.raises(ValueError, match="hook broke"):
        x.sum().backward()


def test_post_accumulate_hooks_see_the_accumulated_grad_once_per_backward():
    x = leaf()
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (x * 2).sum().backward()
    (x * 3 + x).sum().backward()  # two uses: one accumulation
    assert len(seen) == 2
    np.testing.assert_allclose(seen[1], [6.0, 6.0, 6.0])  # 2 from before + 4


def test_post_accumulate_hooks_are_for_leaves_only():
    y = leaf() * 2
    with pytest.raises(RuntimeError, match=r"only a leaf tensor accumulates.*shape \(3,\)"):
        y.register_post_accumulate_grad_hook(lambda t: None)


def test_a_parameter_s_post_accumulate_hook_after_a_module_s_backward():
    lin = flow.nn.Linear(4, 2)
    ready = []
    for name, p in lin.named_parameters():
        p.register_post_accumulate_grad_hook(lambda t, name=name: ready.append(name))
    lin(flow.ones(3, 4)).sum().backward()
    assert sorted(ready) == ["bias", "weight"]


def test_queued_callbacks_run_after_every_gradient_is_in_place():
    a, b = leaf(), leaf()
    order = []

    def at_end():
        order.append(("end", a.grad is not None and b.grad is not None))

    def first_ready(t):
        order.append("ready")
        if len(order) == 1:
            flow.autograd.queue_callback(at_end)

    a.register_post_accumulate_grad_hook(first_ready)
    b.register_post_accumulate_grad_hook(first_ready)
    (a * b).sum().backward()
    assert order == ["ready", "ready", ("end", True)]


def test_queue_callback_outside_backward_raises_and_a_failed_backward_skips_callbacks():
    with pytest.raises(RuntimeError, match="no backward pass is running"):
        flow.autograd.queue_callback(lambda: None)
    x = leaf()
    ran = []

    def hook(g):
        flow.autograd.queue_callback(lambda: ran.append(1))
        raise ValueError("then fail")

    x.register_hook(hook)
    with pytest.raises(ValueError):
        x.sum().backward()
    assert ran == []
    y = leaf()
    y.register_post_accumulate_grad_hook(
        lambda t: flow.autograd.queue_callback(lambda: ran.append(2))
    )
    y.sum().backward()
    assert ran == [2]  # the failed pass's callback did not leak into the next one
