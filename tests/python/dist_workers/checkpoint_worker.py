"""Distributed checkpoints of the example GPT with AdamW: train, save the model and optimizer,
train on (the reference continuation); or load under another layout and world size and train
the same steps. Rank 0 prints one JSON line: the losses after the checkpoint, the files this
rank read when loading.

    launch --nproc_per_node 4 checkpoint_worker.py save DIR zero
    launch --nproc_per_node 2 checkpoint_worker.py load DIR tp
    python checkpoint_worker.py load DIR single

Or a small state, not trained (`small`), saved or loaded in the same layout; every rank prints a
JSON line, with the ValueError its load raised:

    launch --nproc_per_node 2 checkpoint_worker.py small-save DIR
    launch --nproc_per_node 2 checkpoint_worker.py small-load DIR"""

import json
import sys
from pathlib import Path

import oneflowlike as flow

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples" / "char_gpt"))
sys.path.insert(0, str(ROOT / "examples" / "parallel"))
from data import CharDataset  # noqa: E402
from gpt_layouts import DATA, megatron  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402

S, B = flow.sbp.split, flow.sbp.broadcast
STEPS = 3  # before and after the checkpoint


def laid_out(layout):
    flow.manual_seed(0)
    ds = CharDataset.from_file(DATA, 16, seed=0)
    model = GPT(GPTConfig(ds.vocab_size, 16, 2, 4, 32))
    place = None
    if layout != "single":
        place = flow.placement("cpu", ranks=list(range(flow.distributed.get_world_size())))
        model.to_global(place, {"zero": lambda n, p: S(0), "tp": megatron, "dp": B}[layout])
    opt = flow.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    return ds, model, opt, place


def train(ds, model, opt, place, steps):
    losses = []
    for _ in range(steps):
        x, y = ds.get_batch("train", 8)  # the same batches on every rank, in every run
        if place is not None:
            x, y = (t.to_global(place, B).to_global(sbp=S(0)) for t in (x, y))
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.numpy()))
    return losses


def small(phase, path):
    place = flow.placement("cpu", ranks=list(range(flow.distributed.get_world_size())))
    flow.manual_seed(0)  # the same values on every rank
    full = {"w": flow.randn(6, 4), "b": flow.randn(4), "h": flow.randn(4, 6).to(flow.bfloat16)}
    sbp = {"w": S(0), "b": B, "h": S(1)}
    state = {k: v.to_global(place, B).to_global(sbp=sbp[k]) for k, v in full.items()}
    state["step"] = flow.tensor(7)
    report = {"rank": flow.distributed.get_rank()}
    if phase == "small-save":
        flow.save(state, path)
    else:
        try:
            back = flow.load(path, like=state)
        except Exception as ex:  # loading is collective: a peer's failure fails the others
            report["error"] = f"{type(ex).__name__}: {ex}"
        else:
            report["error"] = None
            report["equal"] = (
                all(
                    (
                        back[k].to_local().float().numpy() == state[k].to_local().float().numpy()
                    ).all()
                    for k in full
                )
                and int(back["step"].item()) == 7
            )
    print(json.dumps(report), flush=True)


def main():
    if sys.argv[1].startswith("small-"):
        return small(*sys.argv[1:3])
    phase, path, layout = sys.argv[1:4]
    ds, model, opt, place = laid_out(layout)
    rank = flow.distributed.get_rank() if place is not None else 0
    report = {}
    if phase == "save":
        train(ds, model, opt, place, STEPS)
        flow.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": STEPS}, path)
        # Back in the same layout: each rank reads its own shards (and rank 0's step counts).
        state = {"model": model.state_dict(), "optim": opt.state_dict()}
        again = flow.load(path, like=state)
        read = flow._checkpoint.last_bytes_read
        own = read.pop(f"shard-{rank:05d}-of-00004")
        report["reads_own_shards"] = own > 1000 and sum(read.values()) < own // 100
        same = all(
            (again["model"][k].to_local().numpy() == v.to_local().numpy()).all()
            for k, v in model.state_dict().items()
        )
        report["reloads_equal"] = bool(same)
    else:
        for _ in range(STEPS):  # the data stream where the saved run left it
            ds.get_batch("train", 8)
        saved = flow.load(path, like={"model": model.state_dict()})
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optim"])
        report["step"] = saved["step"]
        report["param_sbp"] = {
            n: str(p.sbp) if p.is_global else "local" for n, p in model.named_parameters()
        }
        report["state_sbp"] = sorted(
            {
                str(v.sbp) if v.is_global else "local"
                for s in opt.state.values()
                for v in s.values()
                if isinstance(v, flow.Tensor) and v.dim() > 0
            }
        )
    report["losses"] = train(ds, model, opt, place, STEPS)
    if rank == 0:
        print(json.dumps(report), flush=True)
    elif phase == "save":  # every rank's own checks
        assert report["reads_own_shards"] and report["reloads_equal"], report


if __name__ == "__main__":
    main()
