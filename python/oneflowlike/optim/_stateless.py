"""swap_in_optimizer_params_and_state: run an optimizer on other parameters and state."""

import contextlib

import oneflowlike as flow

from .optimizer import ParamState

__all__ = ["swap_in_optimizer_params_and_state"]


def _check(optimizer, swapin_parameters, swapin_optim_state):
    """(state by packed id, [(live group, swap-in group, swap-in params)]), validated."""
    if not optimizer.state:
        raise RuntimeError(
            "swap_in_optimizer_params_and_state requires initialized optimizer state."
        )
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(
            "swap_in_optimizer_params_and_state requires a DCP-style optimizer state_dict."
        )
    state = swapin_optim_state.get("state")
    if not isinstance(state, dict) or any(isinstance(k, flow.Tensor) for k in state):
        raise RuntimeError(
            "swap_in_optimizer_params_and_state requires swapin_optim_state['state'] to be a "
            "dict mapping packed parameter ids to per-param state dicts."
        )
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list) or len(groups) != len(optimizer.param_groups):
        raise RuntimeError(
            "swapin_optim_state has a different number of parameter groups than the live "
            "optimizer."
        )
    flat = list(swapin_parameters.values())
    offset, seen, infos = 0, set(), []
    for idx, (group, swapin) in enumerate(zip(optimizer.param_groups, groups)):
        ids = swapin.get("params") if isinstance(swapin, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise RuntimeError(
                "swap_in_optimizer_params_and_state requires optimizer.state_dict()-style "
                "param_groups[*]['params'] entries keyed by packed parameter ids."
            )
        if len(ids) != len(group["params"]):
            raise RuntimeError(
                f"swapin_optim_state param group {idx} has a different number of params than "
                "the live optimizer param group."
            )
        swapin_only = [k for k in swapin if k not in group]
        live_only = [k for k in group if k not in swapin]
        if swapin_only or live_only:
            raise RuntimeError(
                "swap_in_optimizer_params_and_state requires param group keys to exactly match "
                f"the live optimizer group keys for group {idx}. Keys only in swap-in: "
                f"{swapin_only}. Keys only in live: {live_only}."
            )
        if offset + len(ids) > len(flat):
            raise RuntimeError(
                "swap_in_optimizer_params_and_state requires the explicit parameter state to "
                "match optimizer.param_groups ordering."
            )
        infos.append((group, swapin, flat[offset : offset + len(ids)]))
        offset += len(ids)
        seen.update(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(
            "swap_in_optimizer_params_and_state requires swapin_optim_state['state'] to be keyed "
            f"only by packed parameter ids from param_groups[*]['params']; got extra keys {extra!r}."
        )
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """As torch's: inside the context the optimizer's groups hold `swapin_parameters` (in
    parameter order) and their hyper-parameters and state come from `swapin_optim_state` (an
    optimizer.state_dict()-shaped dict); on exit the live ones return. In-place tensor updates
    reach the given state; host counters (step) are Python numbers here and do not."""
    state, infos = _check(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = ParamState()
        for group, swapin, params in infos:
            group["params"] = params
            group.update((k, v) for k, v in swapin.items() if k != "params")
            for param, pid in zip(params, swapin["params"]):
                swapped[param] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
