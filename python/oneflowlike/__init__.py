"""oneflowlike: a distributed deep-learning tensor framework with SBP layouts."""

import numpy as _np

from . import _C
from ._C import (  # noqa: F401
    Tensor,
    Generator,
    device,
    dtype,
    manual_seed,
    default_generator,
    is_grad_enabled,
    promote_types,
    result_type,
    from_numpy,
    # elementwise
    add,
    sub,
    mul,
    div,
    pow,
    neg,
    abs,
    exp,
    log,
    sqrt,
    rsqrt,
    sin,
    cos,
    tanh,
    sigmoid,
    relu,
    gelu,
    silu,
    sign,
    floor,
    ceil,
    round,
    reciprocal,
    square,
    log1p,
    expm1,
    erf,
    clamp,
    maximum,
    minimum,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    logical_and,
    logical_or,
    logical_xor,
    logical_not,
    floor_divide,
    remainder,
    where,
    masked_fill,
    clone,
    detach,
    contiguous,
    # reductions
    sum,
    mean,
    logsumexp,
    # linear algebra and nn
    matmul,
    softmax,
    log_softmax,
    # shapes and joins
    reshape,
    permute,
    transpose,
    flatten,
    squeeze,
    unsqueeze,
    narrow,
    cat,
    stack,
    split,
    chunk,
    index_select,
    gather,
    index_add,
    scatter_add,
)
from ._tensor_api import (  # noqa: F401
    tensor,
    as_tensor,
    zeros,
    ones,
    empty,
    full,
    zeros_like,
    ones_like,
    empty_like,
    full_like,
    rand,
    randn,
    randint,
    rand_like,
    randn_like,
    randint_like,
    arange,
    linspace,
    eye,
    max,
    min,
    amax,
    amin,
    argmax,
    argmin,
    var,
    std,
    prod,
    all,
    any,
    allclose,
    no_grad,
    enable_grad,
    set_grad_enabled,
    numel,
    is_tensor,
)

bool = dtype.bool
uint8 = dtype.uint8
int8 = dtype.int8
int32 = dtype.int32
int64 = dtype.int64
float16 = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float64 = dtype.float64
float = float32
double = float64
half = float16
long = int64
int = int32
concat = cat
bmm = matmul

from . import autograd  # noqa: E402,F401
from . import nn  # noqa: E402,F401
from . import optim  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from .serialization import save, load  # noqa: E402,F401
from ._tensor_api import _install_tensor_methods  # noqa: E402

_install_tensor_methods()
del _np
__version__ = "0.1.0"
