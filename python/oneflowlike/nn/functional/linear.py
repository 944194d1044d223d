"""torch.nn.functional's linear and bilinear maps."""

import oneflowlike as flow

__all__ = ["bilinear", "linear"]


def linear(input, weight, bias=None):
    if weight.dim() == 1:  # a 1-d weight: one output feature, dropped (PyTorch's matmul rule)
        y = flow.matmul(input, weight)
        return y if bias is None else y + bias
    return flow._C.linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]."""
    if weight.dim() != 3:
        raise RuntimeError(
            f"[bilinear] weight must be 3-D (out, in1, in2), got {tuple(weight.shape)}"
        )
    out, in1, in2 = tuple(weight.shape)
    s1, s2 = tuple(input1.shape), tuple(input2.shape)
    if s1[:-1] != s2[:-1] or s1[-1:] != (in1,) or s2[-1:] != (in2,):
        raise RuntimeError(
            f"[bilinear] input1 {s1} and input2 {s2} must share their leading dims and end in "
            f"{in1} and {in2} features (weight {tuple(weight.shape)})"
        )
    if bias is not None and tuple(bias.shape) != (out,):
        raise RuntimeError(f"[bilinear] bias {tuple(bias.shape)} must have {out} elements")
    y = flow.einsum("...i,oij,...j->...o", input1, weight, input2)
    return y if bias is None else y + bias
