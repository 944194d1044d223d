"""DistributedDataParallel: data parallelism over local tensors, with PyTorch's and OneFlow's
interface. Every rank holds the whole model and its own part of the batch; the parameters
start equal (rank 0's, broadcast at construction) and stay equal because every rank applies
the average of all ranks' gradients.

The gradients are averaged in buckets while backward still runs: a hook on each parameter marks
it ready once its .grad is accumulated; a bucket whose parameters are all ready is flattened
and all-reduced on a communicator of DDP's own, in the background (dist.all_reduce with
async_op=True), in bucket order on every rank. When backward ends (autograd.queue_callback),
the buckets still waiting go out, every reduction is waited for and the averages are copied
back into .grad. The global-tensor way to the same training is a model with broadcast
parameters and an S(0) batch (docs/global.md); DDP is for model code that stays local.
"""

import contextlib
import warnings
import weakref

import oneflowlike as flow
import oneflowlike.distributed as dist

from ..module import Module

# PyTorch's defaults: a small first bucket so the first reduction starts early in backward.
_FIRST_BUCKET_BYTES = 1 << 20
_BUCKET_CAP_MB = 25


class _Bucket:
    def __init__(self, params):
        self.params = params  # indices into DDP's parameter list
        self.ready = set()
        self.flat = None
        self.work = None


def _coalesced(tensors):
    """Groups tensors by dtype (one flat buffer per group)."""
    groups = {}
    for t in tensors:
        groups.setdefault(t.dtype, []).append(t)
    return list(groups.values())


class DistributedDataParallel(Module):
    """Wraps module for data-parallel training over the ranks of the job (or process_group).

    As PyTorch's: broadcast_buffers (rank 0's buffers before each forward), bucket_cap_mb,
    find_unused_parameters (parameters without a gradient this step are reduced as zeros, silently),
    no_sync(), and the wrapped model as .module (state_dict keys start with "module.").
    OneFlow's spellings too: bucket_size (parameters per bucket) and use_bucket=False (one
    reduction per parameter). device_ids, output_device, dim, check_reduction,
    gradient_as_bucket_view and static_graph are accepted and change nothing here.
    """

    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim=0,
        broadcast_buffers=True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters=False,
        check_reduction=False,
        gradient_as_bucket_view=False,
        static_graph=False,
        init_sync=True,
        *,
        bucket_size=None,
        use_bucket=True,
    ):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(
                f"[DistributedDataParallel] wraps an nn.Module, got {type(module).__name__}"
            )
        global_params = [n for n, p in module.named_parameters() if p.is_global]
        if global_params:
            raise TypeError(
                "[DistributedDataParallel] wraps a module of local tensors, but "
                f"{global_params[0]} is global: a global model is data parallel through its "
                "SBPs already (broadcast parameters, an S(0) batch), without DDP"
            )
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        world = dist.world() if process_group is None else process_group
        self._world_size = world.size()
        # Reductions run in the background on a communicator no other caller uses.
        self._group = world.new_group(world.ranks()) if self._world_size > 1 else None
        seen = set()
        self._params = [
            p
            for p in module.parameters()
            if p.requires_grad and id(p) not in seen and not seen.add(id(p))
        ]
        self._buckets = self._make_buckets(bucket_cap_mb, bucket_size, use_bucket)
        self._bucket_of = {i: b for b in self._buckets for i in b.params}
        self._next_launch = 0
        self._in_backward = False
        self._warned_unused = False
        # The last synchronised backward: buckets reduced, and how many went out while it ran
        # (the rest at its end), to see the overlap.
        self.last_sync = {"buckets": len(self._buckets), "launched_during_backward": 0}
        self._hooks = []
        if self._group is None:
            return
        self._check_same_model()
        if init_sync:
            self._broadcast(list(module.parameters()) + list(module.buffers()))
        me = weakref.ref(self)  # a hook must not keep the wrapper (and its module) alive
        for i, p in enumerate(self._params):
            self._hooks.append(p.register_post_accumulate_grad_hook(_Ready(me, i)))

    def __getattr__(self, name):
        """What the wrapper lacks, the wrapped module's: OneFlow's DistributedDataParallel hooks
        the module and returns it, so its programs read the model's own attributes through it
        (`ddp_model.lr`, `ddp_model.config`)."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            module = self.__dict__.get("_modules", {}).get("module")
            if module is None or not hasattr(module, name):
                raise AttributeError(
                    f"'{type(self).__name__}' object (nor the module it wraps) has no attribute "
                    f"'{name}'"
                ) from None
            return getattr(module, name)

    def _check_same_model(self):
        """Every rank wraps the same model: the count and sizes of its parameters agree (as
        PyTorch's DDP checks), else the broadcasts and buckets would not line up."""
        shapes = [tuple(p.shape) for p in self._params]
        # The buckets too: their reductions skip the per-call check, so they must line up.
        buckets = [sum(self._params[i].numel() for i in b.params) for b in self._buckets]
        fingerprint = sum((k + 1) * n for k, n in enumerate(buckets)) % (1 << 61)
        mine = flow.tensor(
            [len(shapes), sum(p.numel() for p in self._params), len(buckets), fingerprint],
            dtype=flow.int64,
        )
        every = dist.all_gather(mine, group=self._group).numpy().reshape(-1, 4)
        if (every != every[0]).any():
            seen = ", ".join(
                f"rank {r}: {n} parameters of {total} elements in {nb} bucket{'' if nb == 1 else 's'}"
                for r, (n, total, nb, _) in enumerate(every)
            )
            raise ValueError(
                f"[DistributedDataParallel] the ranks wrap different models ({seen}); this rank's "
                f"parameter shapes: {shapes[:4]}{' ...' if len(shapes) > 4 else ''}"
            )

    def _make_buckets(self, bucket_cap_mb, bucket_size, use_bucket):
        """Parameters in reverse order (the order backward makes their gradients), cut where a
        bucket would pass its cap or change dtype."""
        cap = (bucket_cap_mb if bucket_cap_mb is not None else _BUCKET_CAP_MB) * (1 << 20)
        buckets, current, nbytes, limit = [], [], 0, min(_FIRST_BUCKET_BYTES, cap)
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            size = p.numel() * p.element_size()
            full = (
                not use_bucket
                or (bucket_size is not None and len(current) >= bucket_size)
                or (bucket_size is None and current and nbytes + size > limit)
                or (current and self._params[current[0]].dtype != p.dtype)
            )
            if current and full:
                buckets.append(_Bucket(current))
                current, nbytes, limit = [], 0, cap
            current.append(i)
            nbytes += size
        if current:
            buckets.append(_Bucket(current))
        return buckets

    def _broadcast(self, tensors):
        """Rank 0's values into every rank's tensors, one broadcast per dtype."""
        with flow.no_grad():
            for group in _coalesced(tensors):
                flat = flow.cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, 0, group=self._group)
                offset = 0
                for t in group:
                    t.copy_(flat[offset : offset + t.numel()].reshape(t.shape))
                    offset += t.numel()

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside only accumulate .grad locally; the first backward after it
        averages what was accumulated."""
        before = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before

    def forward(self, *args, **kwargs):
        traced = [a for a in (*args, *kwargs.values()) if flow.is_tensor(a) and a.is_traced]
        if traced:
            raise TypeError(
                "[DistributedDataParallel] runs eagerly; in an nn.Graph, make the parameters "
                "global and broadcast and the batch S(0): the graph reduces the gradients itself"
            )
        if self._in_backward:  # the last backward failed before its end: drop its reductions
            self._abandon()
        if self._group is not None and self.broadcast_buffers and self.training:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers)
        return self.module(*args, **kwargs)

    # Backward: the hooks, the launches in bucket order, the wait at the end.

    def _ready(self, i):
        if not self.require_backward_grad_sync:
            return
        if not self._in_backward:
            self._in_backward = True
            flow.autograd.queue_callback(self._finish)
        bucket = self._bucket_of[i]
        bucket.ready.add(i)
        while self._next_launch < len(self._buckets):
            b = self._buckets[self._next_launch]
            if len(b.ready) < len(b.params):
                break
            self._launch(b)
            self._next_launch += 1

    def _launch(self, bucket):
        with flow.no_grad():
            grads = []
            for i in bucket.params:
                p = self._params[i]
                g = p.grad if p.grad is not None else flow.zeros_like(p)
                grads.append(g.reshape(-1))
            bucket.flat = flow.cat(grads).mul_(1.0 / self._world_size)
        # Planned: every rank launches the same buckets in the same order (_check_same_model), so
        # the reduction skips the per-call check that the ranks agree.
        bucket.work = self._group.all_reduce_async(bucket.flat, op="sum", planned=True)

    def _clear(self):
        for b in self._buckets:
            b.ready.clear()
            b.flat = b.work = None
        self._next_launch = 0
        self._in_backward = False

    def _abandon(self):
        """After a backward that raised: waits for what it launched (errors ignored: the
        backward already raised one) and starts clean."""
        for b in self._buckets:
            if b.work is not None:
                with contextlib.suppress(Exception):
                    b.work.wait()
        self._clear()

    def _finish(self):
        unused = []
        self.last_sync["launched_during_backward"] = self._next_launch
        try:
            for b in self._buckets[self._next_launch :]:
                unused += [self._params[i] for i in b.params if i not in b.ready]
                self._launch(b)
            self._next_launch = len(self._buckets)
            for b in self._buckets:
                b.work.wait()
            with flow.no_grad():
                for b in self._buckets:
                    offset = 0
                    for i in b.params:
                        p = self._params[i]
                        avg = b.flat[offset : offset + p.numel()].reshape(p.shape)
                        if p.grad is None:
                            p.grad = avg.clone()
                        else:
                            p.grad.copy_(avg)
                        offset += p.numel()
        finally:
            self._clear()
        if unused and not self.find_unused_parameters and not self._warned_unused:
            self._warned_unused = True
            names = {id(p): n for n, p in self.module.named_parameters()}
            listed = ", ".join(names.get(id(p), "?") for p in unused[:5])
            warnings.warn(
                f"[DistributedDataParallel] {len(unused)} parameter(s) got no gradient in this "
                f"backward ({listed}); they were averaged as zeros. Pass "
                "find_unused_parameters=True if that is expected",
                stacklevel=2,
            )


class _Ready:
    """A parameter's post-accumulate hook: tells the DDP wrapper (if still alive) it is ready."""

    def __init__(self, ddp_ref, index):
        self.ddp_ref, self.index = ddp_ref, index

    def __call__(self, _param):
        ddp = self.ddp_ref()
        if ddp is not None:
            ddp._ready(self.index)
