"""Mixed precision: flow.autocast (PyTorch's torch.autocast), flow.amp.GradScaler and OneFlow's
flow.amp.StaticGradScaler (both also nn.Graph's, through Graph.set_grad_scaler).

Inside ``with flow.autocast("cuda", dtype=flow.bfloat16):`` ops declared low precision
(matmul, conv2d) take their floating inputs on that device in bf16 (or fp16), and numerically
sensitive ones (softmax, log_softmax, layer_norm, rms_norm) take float16/bfloat16 inputs in
float32; the rest run as given, so parameters stay float32 and gradients flow back to them in
float32. ``"cpu"`` autocasts CPU tensors the same way. Run backward outside the context, as in
PyTorch."""

import functools

import oneflowlike as flow
from oneflowlike import _C

__all__ = ["autocast", "GradScaler", "StaticGradScaler"]


class autocast:
    def __init__(self, device_type, dtype=None, enabled=True):
        if device_type not in ("cuda", "cpu"):
            raise ValueError(f"[autocast] device_type is 'cuda' or 'cpu', got {device_type!r}")
        if dtype is None:
            dtype = flow.float16 if device_type == "cuda" else flow.bfloat16
        if dtype not in (flow.float16, flow.bfloat16):
            raise ValueError(f"[autocast] dtype is float16 or bfloat16, got {dtype}")
        self.device_type, self.dtype, self.enabled = device_type, dtype, bool(enabled)
        self._saved = []

    def __enter__(self):
        self._saved.append(_C.get_autocast())
        _C.set_autocast(self.enabled, self.device_type, self.dtype)
        return self

    def __exit__(self, *exc):
        enabled, device, dtype = self._saved.pop()
        _C.set_autocast(enabled, device, dtype)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with autocast(self.device_type, self.dtype, self.enabled):
                return fn(*args, **kwargs)

        return wrapped


class GradScaler:
    """Loss scaling for float16 training: scale(loss).backward(), then step(optimizer) unscales
    the gradients and skips the step when any is inf or NaN, and update() adapts the scale
    (halved after an overflow, doubled after growth_interval clean steps)."""

    _dynamic = True  # checks for overflows, skips their steps and adapts the scale

    def __init__(
        self,
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
    ):
        self._scale, self._enabled = float(init_scale), enabled
        self._growth, self._backoff, self._interval = growth_factor, backoff_factor, growth_interval
        self._clean_steps, self._found_inf = 0, False
        self._unscaled = set()

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def scale(self, loss):
        return loss * self._scale if self._enabled else loss

    def unscale_(self, optimizer):
        if not self._enabled or id(optimizer) in self._unscaled:
            return
        inv = 1.0 / self._scale
        with flow.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv)
                    # inf - inf and NaN: NaN
                    if self._dynamic and bool(((p.grad - p.grad) != 0).any()):
                        self._found_inf = True
        self._unscaled.add(id(optimizer))

    def step(self, optimizer, *args, **kwargs):
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        self.unscale_(optimizer)
        if self._found_inf:
            return None  # skipped: the gradients overflowed
        return optimizer.step(*args, **kwargs)

    def update(self):
        if not self._enabled:
            return
        if self._found_inf:
            self._scale *= self._backoff
            self._clean_steps = 0
        else:
            self._clean_steps += 1
            if self._clean_steps % self._interval == 0:
                self._scale *= self._growth
        self._found_inf = False
        self._unscaled.clear()


class StaticGradScaler(GradScaler):
    """OneFlow's static loss scaling: the loss scaled by scale_factor, the gradients unscaled,
    every step taken (no overflow check) and the scale never changed."""

    _dynamic = False

    def __init__(self, scale_factor):
        if not isinstance(scale_factor, (int, float)) or not scale_factor > 0:
            raise ValueError(f"[StaticGradScaler] scale_factor must be > 0, got {scale_factor!r}")
        super().__init__(init_scale=scale_factor, growth_factor=1.0, backoff_factor=1.0)
