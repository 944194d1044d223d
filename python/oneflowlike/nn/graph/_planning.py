"""nn.Graph's pipeline and layout planning (a mixin of Graph): the stages its modules were put in
(set_stage), and flow.auto_parallel's plans (enable_auto_parallel) laid out on its modules, for a
pipeline priced on meta copies of them."""

import copy

import oneflowlike as flow
from oneflowlike import _C, auto_parallel

from .config import GraphConfig


def _flat(ranks):
    """The ranks of a placement's (nested) list."""
    return [r for x in ranks for r in (_flat(x) if isinstance(x, list) else [x])]


class Planning:
    def _stages(self):
        """The pipeline stages' placements by stage id (GraphModule.set_stage), [] for none.
        Raises naming the modules when one runs in two stages (inside a module of another stage,
        or sharing a parameter with one) or one stage id has two placements."""
        staged = {}  # module -> (name, stage id, placement)
        for attr, top in self.__dict__.items():
            if not isinstance(top, flow.nn.Module):
                continue
            for name, m in top.named_modules():
                stage = m.__dict__.get("_pipeline_stage")
                if stage is not None and m not in staged:
                    staged[m] = (f"{attr}.{name}" if name else attr, stage[0], stage[1])
        if not staged:
            return []
        owner = {}  # parameter id -> (module name, stage id)
        for m, (name, sid, _) in staged.items():
            for inner_name, inner in m.named_modules():
                if inner is not m and inner in staged and staged[inner][1] != sid:
                    raise ValueError(
                        f"[graph] {staged[inner][0]} is in stage {staged[inner][1]} but inside "
                        f"{name}, which is in stage {sid}: a module runs in one stage"
                    )
            for p in m.parameters():
                first = owner.setdefault(id(p), (name, sid))
                if first[1] != sid:
                    raise ValueError(
                        f"[graph] {name} (stage {sid}) and {first[0]} (stage {first[1]}) share "
                        "a parameter: a module runs in one stage"
                    )
        by_id = {}
        for name, sid, placement in staged.values():
            first = by_id.setdefault(sid, (name, placement))
            if first[1] != placement:
                raise ValueError(
                    f"[graph] stage {sid} is on {first[1]} for {first[0]} but on {placement} for "
                    f"{name}"
                )
        missing = [s for s in range(max(by_id) + 1) if s not in by_id]
        if missing:
            raise ValueError(
                f"[graph] stage ids go from 0 without gaps: no module is in stage {missing[0]} "
                f"(stages: {sorted(by_id)})"
            )
        return [by_id[s][1] for s in range(len(by_id))]

    def _plan_pipeline(self, args):
        """Plans the pipeline for these inputs (flow.auto_parallel.plan_pipeline on meta copies
        of the graph's modules) and lays the modules out as it says, in place."""
        layers = self._repeated_layers()
        lists = [
            (attr, top, name, child)
            for attr, top in self.__dict__.items()
            if isinstance(top, flow.nn.Module)
            for name, child in top.named_children()
            if any(c in layers for c in child.children())
        ]
        if len(lists) != 1:
            raise ValueError(
                "[graph] a planned pipeline needs one list of repeated layers (a ModuleList "
                f"directly in a module of the graph, its children of one structure); found "
                f"{len(lists)}"
            )
        attr, top, list_name, container = lists[0]
        children = [m for _, m in top.named_children()]
        cut = children.index(container)
        places = {str(a.placement) for a in args if a.is_global}
        if len(places) != 1:
            raise ValueError(
                f"[graph] a planned pipeline takes global inputs on one placement, got {places}"
            )
        placement = next(a.placement for a in args if a.is_global)
        ranks = sorted(_flat(placement.ranks))
        if ranks != list(range(len(ranks))):
            raise ValueError(
                f"[graph] a planned pipeline runs on ranks 0..n-1, got inputs on {placement}"
            )
        shapes = [(tuple(a.shape), a.dtype) for a in args]
        batch = shapes[0][0][0]
        micro = [m for m in (1, 2, 4, 8) if batch % m == 0 and batch // m >= len(ranks)] or [1]
        cluster = _C.get_cluster_spec()
        plan = auto_parallel.plan_pipeline(
            lambda p, m: self._meta_step(attr, list_name, p, shapes, m),
            len(container),
            len(ranks),
            cluster=cluster,
            memory_budget=self.config.auto_parallel_memory_budget,
            micro_batches=micro,
            device_type=placement.type,  # the stages on the inputs' kind of device
            chunks=self.config.auto_parallel_chunks,
        )
        plan.apply(top, container, children[:cut], children[cut + 1 :], cluster)
        self.config.gradient_accumulation_steps = plan.micro_batches
        if plan.chunks > 1:
            self.config.set_pipeline_schedule("interleaved_1f1b")
        return plan

    def _meta_step(self, attr, list_name, placement, shapes, micro_batches):
        """This graph on meta copies of its modules on `placement`, the list of repeated layers
        `attr`.`list_name` cut to its first two, with fresh optimizers of the same kinds and
        settings; and meta inputs of one of `micro_batches` micro-batches, split on dimension
        0. What plan_pipeline prices a stage with."""
        modules = {n: m for n, m in self.__dict__.items() if isinstance(m, flow.nn.Module)}
        memo = {}
        for m in modules.values():
            for t in list(m.parameters()) + [b for b in m.buffers() if b is not None]:
                meta = flow.empty(*t.shape, dtype=t.dtype, device="meta")
                is_param = isinstance(t, flow.nn.Parameter)
                memo[id(t)] = flow.nn.Parameter(meta, t.requires_grad) if is_param else meta
        proxy = copy.copy(self)
        proxy.__dict__ = dict(self.__dict__)
        axes = len(placement.hierarchy)
        clones = {}
        for name, m in modules.items():
            clone = copy.deepcopy(m, memo)
            if name == attr:
                kept = getattr(clone, list_name)
                kept._modules = type(kept._modules)(list(kept._modules.items())[:2])
            B = flow.sbp.broadcast
            clones[name] = clone.to_global(placement, tuple([B] * axes) if axes > 1 else B)
            proxy.__dict__[name] = clones[name]
        by_name = {
            (n, pn): p for n, c in clones.items() for pn, p in c.named_parameters()
        }  # fmt: skip
        names = {id(p): (n, pn) for n, m in modules.items() for pn, p in m.named_parameters()}
        proxy._optimizers = []
        for opt, _ in self._optimizers:
            params = [
                by_name[names[id(p)]]
                for g in opt.param_groups
                for p in g["params"]
                if names.get(id(p)) in by_name
            ]
            proxy._optimizers.append((type(opt)(params, **opt.defaults), None))
        proxy.config = GraphConfig()
        proxy._compiled, proxy._plan, proxy._last, proxy._timeline = {}, None, None, None
        inputs = [
            flow.zeros(shape[0] // micro_batches, *shape[1:], dtype=dtype, device="meta",
                       placement=placement, sbp=[flow.sbp.split(0)] * axes)
            for shape, dtype in shapes
        ]  # fmt: skip
        return proxy, inputs

    def _plan_layouts(self, args):
        """Plans the step for these inputs and lays the parameters and optimizer states out as
        the plan says, in place (graph.plan afterwards)."""
        plan = auto_parallel.plan(self, args, memory_budget=self.config.auto_parallel_memory_budget)
        for module in self.__dict__.values():
            if isinstance(module, flow.nn.Module):
                plan.apply(module)
        for opt, _ in self._optimizers:
            plan.apply_states(opt)
        return plan
