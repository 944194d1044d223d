"""Conv1d/2d/3d, ConvTranspose1d/2d/3d, Fold/Unfold and their functionals against PyTorch: float64
forward, input and parameter gradients with the torch module's weights loaded through
state_dict (so the keys must match), extra_repr, float32 spot checks and the errors."""

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
torch.set_num_threads(1)  # tiny tensors: threads only add overhead


def _arr(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _close(a, b, tol=1e-10):
    a = a.detach().numpy() if isinstance(a, flow.Tensor) else np.asarray(a)
    b = b.detach().numpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def check_module(make, shape, forward_kwargs=None, dtype="float64", tol=1e-10):
    """Builds the same module in both, loads torch's weights, compares output and gradients."""
    forward_kwargs = forward_kwargs or {}
    tm = make(torch.nn).to(getattr(torch, dtype))
    fm = make(nn).to(getattr(flow, dtype))
    assert sorted(fm.state_dict()) == sorted(tm.state_dict())
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert repr(fm) == repr(tm)
    x = _arr(shape)
    tx = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    fx = flow.tensor(x, dtype=getattr(flow, dtype), requires_grad=True)
    ty, fy = tm(tx, **forward_kwargs), fm(fx, **forward_kwargs)
    _close(fy, ty, tol)
    g = _arr(tuple(ty.shape), seed=1)
    ty.backward(torch.tensor(g, dtype=ty.dtype))
    fy.backward(flow.tensor(g, dtype=fy.dtype))
    _close(fx.grad, tx.grad, tol)
    fparams = dict(fm.named_parameters())
    for name, p in tm.named_parameters():
        _close(fparams[name].grad, p.grad, tol)


CONVS = {
    "1d_basic": (lambda m: m.Conv1d(4, 6, 3), (2, 4, 9)),
    "1d_groups_dilation_stride": (
        lambda m: m.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2),
        (2, 4, 11),
    ),
    "1d_same_even_kernel": (lambda m: m.Conv1d(3, 2, 4, padding="same", bias=False), (2, 3, 7)),
    "1d_unbatched": (lambda m: m.Conv1d(3, 2, 3, padding=1), (3, 6)),
    "2d_same_dilated": (
        lambda m: m.Conv2d(4, 4, (3, 2), padding="same", dilation=(1, 2)),
        (2, 4, 6, 5),
    ),
    "2d_valid_groups": (lambda m: m.Conv2d(6, 9, 2, padding="valid", groups=3), (2, 6, 5, 4)),
    "2d_depthwise_stride": (
        lambda m: m.Conv2d(3, 6, 3, stride=(2, 1), padding=1, groups=3),
        (2, 3, 7, 6),
    ),
    "3d_basic": (lambda m: m.Conv3d(2, 3, (2, 3, 2), padding=(1, 0, 1)), (2, 2, 4, 5, 4)),
    "3d_groups_stride_dilation": (
        lambda m: m.Conv3d(4, 6, 3, stride=(2, 1, 2), padding=1, dilation=(1, 2, 1), groups=2),
        (1, 4, 5, 6, 5),
    ),
    "3d_same_unbatched": (lambda m: m.Conv3d(2, 2, 2, padding="same"), (2, 3, 4, 3)),
}
for _mode in ("reflect", "replicate", "circular"):
    CONVS[f"1d_{_mode}"] = (
        lambda m, p=_mode: m.Conv1d(2, 3, 3, padding=2, padding_mode=p),
        (2, 2, 6),
    )
    CONVS[f"2d_{_mode}"] = (
        lambda m, p=_mode: m.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=p),
        (2, 2, 5, 4),
    )
    CONVS[f"3d_{_mode}"] = (
        lambda m, p=_mode: m.Conv3d(2, 2, 2, padding=1, padding_mode=p),
        (1, 2, 3, 4, 3),
    )
CONVS["2d_same_reflect"] = (
    lambda m: m.Conv2d(2, 2, (3, 4), padding="same", padding_mode="reflect"),
    (1, 2, 5, 6),
)

TRANSPOSED = {
    "1d_basic": (lambda m: m.ConvTranspose1d(4, 2, 3), (2, 4, 5), None),
    "1d_stride_output_padding_groups": (
        lambda m: m.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
        (2, 4, 5),
        None,
    ),
    "2d_dilation": (
        lambda m: m.ConvTranspose2d(3, 2, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 3)),
        (2, 3, 4, 3),
        None,
    ),
    "2d_output_padding_over_stride": (  # allowed because dilation is larger
        lambda m: m.ConvTranspose2d(2, 2, 3, padding=2, output_padding=2, dilation=3, bias=False),
        (1, 2, 4, 4),
        None,
    ),
    "2d_output_size": (
        lambda m: m.ConvTranspose2d(2, 3, 3, stride=2, padding=1),
        (2, 2, 4, 3),
        {"output_size": (8, 6)},
    ),
    "2d_unbatched": (lambda m: m.ConvTranspose2d(2, 4, 2, stride=2, groups=2), (2, 3, 3), None),
    "3d_all": (
        lambda m: m.ConvTranspose3d(
            4, 2, (3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 1),
            groups=2, dilation=(1, 2, 1),
        ),
        (2, 4, 3, 3, 3),
        None,
    ),  # fmt: skip
    "3d_output_size": (
        lambda m: m.ConvTranspose3d(2, 2, 2, stride=2),
        (1, 2, 2, 3, 2),
        {"output_size": [1, 2, 5, 7, 4]},
    ),
}


@pytest.mark.parametrize("case", sorted(CONVS))
def test_conv_matches_torch(case):
    make, shape = CONVS[case]
    check_module(make, shape)


@pytest.mark.parametrize("case", sorted(TRANSPOSED))
def test_conv_transpose_matches_torch(case):
    make, shape, kwargs = TRANSPOSED[case]
    check_module(make, shape, kwargs)


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda m: m.Conv2d(3, 4, 3, padding=1, groups=1), (2, 3, 6, 5)),
        (lambda m: m.Conv3d(2, 2, 3, padding=1), (1, 2, 4, 4, 4)),
        (lambda m: m.ConvTranspose2d(3, 2, 3, stride=2), (2, 3, 4, 4)),
    ],
)
def test_float32_spot_checks(make, shape):
    check_module(make, shape, dtype="float32", tol=1e-4)


def test_state_dict_keys_shapes_and_defaults():
    conv = nn.Conv3d(4, 6, (1, 2, 3), groups=2, bias=False)
    assert list(conv.state_dict()) == ["weight"] and tuple(conv.weight.shape) == (6, 2, 1, 2, 3)
    t = nn.ConvTranspose1d(4, 6, 3, groups=2)
    assert list(t.state_dict()) == ["weight", "bias"] and tuple(t.weight.shape) == (4, 3, 3)
    assert t.transposed and t.output_padding == (0,) and t.padding_mode == "zeros"
    c = nn.Conv2d(2, 2, 3, padding="same", padding_mode="circular")
    assert c._reversed_padding_repeated_twice == list(
        torch.nn.Conv2d(
            2, 2, 3, padding="same", padding_mode="circular"
        )._reversed_padding_repeated_twice
    )


@pytest.mark.parametrize(
    "fn, tfn, shapes, kwargs",
    [
        (F.conv1d, TF.conv1d, [(2, 4, 7), (2, 2, 3), (2,)], {"stride": 2, "groups": 2}),
        (F.conv2d, TF.conv2d, [(1, 2, 5, 5), (3, 2, 2, 2)], {"padding": "same"}),
        (F.conv3d, TF.conv3d, [(1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (2,)], {"padding": 1}),
        (F.conv_transpose1d, TF.conv_transpose1d, [(1, 2, 4), (2, 3, 3)], {"stride": 3}),
        (
            F.conv_transpose3d,
            TF.conv_transpose3d,
            [(1, 2, 2, 2, 2), (2, 1, 2, 2, 2)],
            {"dilation": 2},
        ),
        (
            F.unfold,
            TF.unfold,
            [(2, 3, 5, 6)],
            {"kernel_size": (2, 3), "dilation": (2, 1), "padding": 1, "stride": (1, 2)},
        ),
        (F.unfold, TF.unfold, [(3, 4, 4)], {"kernel_size": 2}),
        (
            F.fold,
            TF.fold,
            [(2, 12, 15)],
            {"output_size": (4, 5), "kernel_size": 2, "padding": 1, "stride": (1, 2)},
        ),
        (
            F.fold,
            TF.fold,
            [(8, 9)],
            {"output_size": (4, 4), "kernel_size": (2, 2), "dilation": (1, 1)},
        ),
        (F.conv_tbc, torch.conv_tbc, [(5, 2, 3), (3, 3, 4), (4,)], {"pad": 1}),
    ],
)
def test_functionals_match_torch(fn, tfn, shapes, kwargs):
    arrays = [_arr(s, seed=i) for i, s in enumerate(shapes)]
    tx = [torch.tensor(a, requires_grad=True) for a in arrays]
    fx = [flow.tensor(a, requires_grad=True) for a in arrays]
    ty, fy = tfn(*tx, **kwargs), fn(*fx, **kwargs)
    _close(fy, ty)
    g = _arr(tuple(ty.shape), seed=9)
    ty.backward(torch.tensor(g))
    fy.backward(flow.tensor(g))
    for f, t in zip(fx, tx):
        _close(f.grad, t.grad)


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda m: m.Fold((4, 5), 2, padding=1, stride=(1, 2)), (2, 8, 15)),
        (lambda m: m.Unfold((2, 3), dilation=(2, 1), padding=1), (2, 2, 5, 4)),
    ],
)
def test_fold_modules_match_torch(make, shape):
    check_module(make, shape)


@pytest.mark.parametrize(
    "call, pattern",
    [
        (
            lambda: F.conv2d(flow.zeros(4, 4), flow.zeros(1, 1, 3, 3)),
            r"\[conv2d\].*3D.*4D.*\[4, 4\]",
        ),
        (
            lambda: F.conv1d(flow.zeros(2, 5, 7), flow.zeros(4, 3, 3)),
            r"\[conv1d\].*weight of size \[4, 3, 3\].*input \[2, 5, 7\].*3 channels.*5",
        ),
        (
            lambda: F.conv3d(flow.zeros(1, 4, 3, 3, 3), flow.zeros(4, 2, 1, 1, 1), groups=3),
            r"\[conv3d\].*groups=3",
        ),
        (
            lambda: F.conv_transpose2d(flow.zeros(1, 3, 4, 4), flow.zeros(2, 2, 3, 3)),
            r"\[conv_transpose2d\].*\[2, 2, 3, 3\].*\[1, 3, 4, 4\]",
        ),
        (
            lambda: F.conv_transpose1d(flow.zeros(1, 2, 4), flow.zeros(2, 2, 3), output_padding=1),
            r"\[conv_transpose1d\] output padding",
        ),
        (
            lambda: F.conv2d(
                flow.zeros(1, 1, 4, 4), flow.zeros(1, 1, 3, 3), padding="same", stride=2
            ),
            "strided",
        ),
        (lambda: F.fold(flow.zeros(2, 12, 10), (4, 5), 2), r"\[fold\].*sliding blocks"),
        (lambda: F.unfold(flow.zeros(2, 3), 2), r"\[unfold\].*\[2, 3\]"),
    ],
)
def test_errors_name_the_function_and_shapes(call, pattern):
    with pytest.raises((RuntimeError, ValueError, NotImplementedError), match=pattern):
        call()


def test_constructor_errors():
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv1d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="output size"):
        nn.ConvTranspose2d(1, 1, 3, stride=2)(flow.zeros(1, 1, 3, 3), output_size=(9, 9))


@pytest.mark.parametrize("transposed", [False, True])
def test_convolutions_give_the_same_bits_on_any_number_of_threads(transposed):
    # Images run in parallel when there are as many as threads; the weight gradient sums its
    # batch in chunks fixed by the shapes, so no result depends on the thread count.
    x = flow.tensor(_arr((8, 16, 12, 12)).astype(np.float32), requires_grad=True)
    m = nn.ConvTranspose2d(16, 8, 4, 2, 1) if transposed else nn.Conv2d(16, 8, 3, 2, 1)
    runs = []
    try:
        for threads in (1, 2, 3):
            flow.set_num_threads(threads)
            x.grad, m.weight.grad = None, None
            y = m(x)
            (y * y).sum().backward()
            runs.append([t.detach().numpy().copy() for t in (y, x.grad, m.weight.grad)])
    finally:
        flow.set_num_threads(0)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)
