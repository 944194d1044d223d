"""Public PyTorch programs we did not write (tests/python/public_programs/, see its README), run
unmodified on PyTorch and on oneflowlike: each file's own `import torch...` lines are executed
once as written and once with `torch` read as `oneflowlike`. From the same weights (float64),
the forward pass, the program's loss, every parameter's gradient and a few steps of the
program's own optimizer (and scheduler) must agree."""

import ast
import importlib
import math
import pathlib
import types

import numpy as np
import pytest

import oneflowlike as flow

torch = pytest.importorskip("torch")
torch.set_num_threads(1)  # two test workers share two cores: torch's spinning threads would fight

HERE = pathlib.Path(__file__).parent / "public_programs"


def _import(name, framework):
    if framework == "flow" and (name == "torch" or name.startswith("torch.")):
        name = "oneflowlike" + name[len("torch") :]
    return importlib.import_module(name)


def load_program(file, names, framework, **globals_):
    """The named top-level classes and functions of `file`, executed under its own imports
    (torch's read as oneflowlike's for framework "flow"); imports of other packages that are
    not installed (torchvision) are skipped, as nothing named uses them."""
    tree = ast.parse((HERE / file).read_text())
    ns = {"__name__": f"public_programs.{file[:-3]}", **globals_}
    for node in tree.body:
        try:
            if isinstance(node, ast.Import):
                for a in node.names:
                    module = _import(a.name, framework)
                    if a.asname:
                        ns[a.asname] = module
                    else:  # `import torch.nn` binds `torch`
                        ns[a.name.split(".")[0]] = _import(a.name.split(".")[0], framework)
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                module = _import(node.module, framework)
                for a in node.names:
                    value = getattr(module, a.name, None)
                    if value is None:
                        value = _import(f"{node.module}.{a.name}", framework)
                    ns[a.asname or a.name] = value
        except ImportError:
            continue
    body = [n for n in tree.body if _defines(n) in names]
    assert {_defines(n) for n in body} == set(names), f"{file} lacks {set(names)}"
    exec(compile(ast.Module(body=body, type_ignores=[]), str(HERE / file), "exec"), ns)
    return ns


def _defines(node):
    """The name a top-level class, function or single-name assignment (a config table) binds."""
    if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return getattr(node.targets[0], "id", None)
    return None


def _to_flow(value):
    if isinstance(value, np.ndarray):
        return flow.tensor(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_to_flow(v) for v in value)
    if isinstance(value, types.SimpleNamespace):  # a batch object (SNLI's torchtext batch)
        return types.SimpleNamespace(**{k: _to_flow(v) for k, v in vars(value).items()})
    return value


def _to_torch(value):
    if isinstance(value, np.ndarray):
        return torch.tensor(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_to_torch(v) for v in value)
    if isinstance(value, types.SimpleNamespace):
        return types.SimpleNamespace(**{k: _to_torch(v) for k, v in vars(value).items()})
    return value


def _numpy(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out] if out is not None else []


def _close(ours, theirs, what, rtol=1e-7, atol=1e-9):
    a, b = _numpy(ours), _numpy(theirs)
    assert a.shape == b.shape, f"{what}: shape {a.shape} against PyTorch's {b.shape}"
    scale = max(np.abs(b).max(initial=0.0), 1e-30)
    err = np.abs(a - b).max(initial=0.0)
    assert err <= rtol * scale + atol, f"{what}: off by {err:.3g} (PyTorch's largest {scale:.3g})"


class Program:
    """One program: which names to load, how to build its model and its data, its loss and its
    optimizer (as the program writes them). `clip`: the max norm of the program's
    clip_grad_norm_ before each step; `prepare(ns)`: adjusts the loaded namespace."""

    def __init__(self, file, names, build, data, loss, optimizer, steps=2, globals_=None, **kw):
        self.file, self.names, self.build, self.data = file, names, build, data
        self.loss, self.optimizer, self.steps = loss, optimizer, steps
        self.globals = globals_ or {}
        self.clip, self.prepare, self.id = kw.get("clip"), kw.get("prepare"), kw.get("id")

    def __repr__(self):
        return self.id or self.file[:-3]


def _nll(ns, out, target):
    return ns["torch"].nn.functional.nll_loss(out, target)


def _gan_loss(ns, out, target):
    return ns["torch"].nn.BCELoss()(out, target)


def _vae_loss(ns, out, x):
    recon, mu, logvar = out
    return ns["loss_function"](recon, x, mu, logvar)


def _mse(ns, out, target):
    return ns["torch"].nn.MSELoss()(out, target)


def _translator_loss(ns, out, tgt):
    return ns["torch"].nn.CrossEntropyLoss(ignore_index=1)(
        out.reshape(-1, out.shape[-1]), tgt.reshape(-1)
    )


def _cross_entropy(ns, out, target):
    return ns["torch"].nn.CrossEntropyLoss()(out, target)


def _lm_loss(ns, out, target):
    log_probs, hidden = out
    return ns["torch"].nn.NLLLoss()(log_probs, target)


def _adadelta_step_lr(ns, model):
    opt = ns["torch"].optim.Adadelta(model.parameters(), lr=1.0)
    return opt, ns["StepLR"](opt, step_size=1, gamma=0.7)


def _adam(lr, **kw):
    return lambda ns, model: (ns["torch"].optim.Adam(model.parameters(), lr=lr, **kw), None)


def _resnet_sgd(ns, model):
    opt = ns["torch"].optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    return opt, ns["torch"].optim.lr_scheduler.CosineAnnealingLR(opt, T_max=200)


def _sgd(lr):
    return lambda ns, model: (ns["torch"].optim.SGD(model.parameters(), lr=lr), None)


def _lbfgs(ns, model):
    return ns["torch"].optim.LBFGS(model.parameters(), lr=0.8), None


def _rng():
    return np.random.default_rng(0)


def _gan_data():
    r = _rng()
    return (r.standard_normal((2, 8, 1, 1)),), np.ones(2)


def _translator_data():
    r = _rng()
    src = r.integers(2, 12, (5, 2))
    tgt = r.integers(2, 12, (4, 2))
    tgt_mask = np.triu(np.full((4, 4), -np.inf), 1)
    src_mask = np.zeros((5, 5))
    src_pad = np.zeros((2, 5), dtype=bool)
    src_pad[1, 4] = True
    tgt_pad = np.zeros((2, 4), dtype=bool)
    return (src, tgt, src_mask, tgt_mask, src_pad, tgt_pad, src_pad), r.integers(2, 12, (4, 2))


class _SameDraws:
    """The program's `torch` module, except that `randn_like` draws from numpy: the VAE's
    reparameterization noise is then the same on both sides."""

    def __init__(self, module):
        self._module, self._rng = module, np.random.default_rng(1)

    def __getattr__(self, name):
        return getattr(self._module, name)

    def randn_like(self, t):
        draw = self._rng.standard_normal(tuple(t.shape))
        return self._module.tensor(draw, dtype=t.dtype)


def _same_draws(ns):
    ns["torch"] = _SameDraws(ns["torch"])


def _vae_data():
    return (_rng().uniform(size=(3, 1, 28, 28)),), _rng().uniform(size=(3, 1, 28, 28))


def _gpt_data(vocab=16, block=6):
    r = _rng()
    targets = r.integers(0, vocab, (2, block))
    targets[1, -1] = -1  # the programs' cross_entropy ignores -1
    return (r.integers(0, vocab, (2, block)), targets), None


def _program_loss(ns, out, target):
    logits, loss = out
    return loss


def _nanogpt_adamw(ns, model):
    # train.py's settings: weight_decay=1e-1, betas=(0.9, 0.95); groups by parameter rank
    return model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cpu"), None


def _mingpt_adamw(ns, model):
    # trainer.py's defaults; groups by module type (Linear weights decay, LayerNorm/Embedding not)
    config = types.SimpleNamespace(learning_rate=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    return model.configure_optimizers(config), None


def _mingpt_config():
    return types.SimpleNamespace(
        model_type=None,
        n_layer=2,
        n_head=2,
        n_embd=8,
        vocab_size=16,
        block_size=8,
        embd_pdrop=0.0,
        resid_pdrop=0.0,
        attn_pdrop=0.0,
    )


def _graph_data():
    r = _rng()
    adj = (r.uniform(size=(6, 6)) < 0.4).astype(np.float64)
    adj = np.maximum(adj, adj.T) + np.eye(6)
    mask = np.array([True, True, False, True, True, False])
    return (r.standard_normal((6, 5)), adj), (r.integers(0, 3, (6,)), mask)


def _masked_nll(ns, out, target):
    labels, mask = target
    return ns["torch"].nn.NLLLoss()(out[mask], labels[mask])


def _snli_config():
    return types.SimpleNamespace(
        n_embed=20,
        d_embed=6,
        d_proj=5,
        projection=True,
        d_hidden=4,
        n_layers=2,
        n_cells=4,
        birnn=True,
        dp_ratio=0.0,
        fix_emb=False,
        d_out=3,
    )


def _snli_data():
    r = _rng()
    batch = types.SimpleNamespace(
        premise=r.integers(0, 20, (5, 3)), hypothesis=r.integers(0, 20, (4, 3))
    )
    return (batch,), np.array([0, 2, 1])


def _makemore(cls, *args):
    def build(ns):
        config = ns["ModelConfig"](block_size=6, vocab_size=16, n_layer=1, n_embd=8, n_embd2=8)
        return ns[cls](config, *args)

    return build


def _makemore_adamw(ns, model):
    # makemore.py's optimizer with its default learning rate and weight decay
    opt = ns["torch"].optim.AdamW(
        model.parameters(), lr=5e-4, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8
    )
    return opt, None


# makemore's MLP (torch.roll) and BoW (a float32 torch.zeros beside float64 activations) are left out
_MAKEMORE = ["ModelConfig", "RNNCell", "GRUCell", "RNN", "Bigram"]


PROGRAMS = [
    Program(
        "mnist_main.py",
        ["Net"],
        lambda ns: ns["Net"](),
        lambda: ((_rng().standard_normal((2, 1, 28, 28)),), np.array([3, 7])),
        _nll,
        _adadelta_step_lr,
    ),
    Program(
        "mnist_rnn_main.py",
        ["Net"],
        lambda ns: ns["Net"](),
        lambda: ((_rng().standard_normal((3, 1, 28, 28)),), np.array([3, 7, 1])),
        _nll,
        _adadelta_step_lr,
    ),
    Program(
        "time_sequence_prediction_train.py",
        ["Sequence"],
        lambda ns: ns["Sequence"](),
        lambda: ((np.sin(np.arange(2 * 12).reshape(2, 12) / 3.0), 2), np.zeros((2, 14))),
        _mse,
        _lbfgs,
    ),
    Program(
        "word_language_model.py",
        ["RNNModel"],
        lambda ns: ns["RNNModel"]("LSTM", 20, 8, 8, 2, dropout=0.0, tie_weights=True),
        lambda: ((_rng().integers(0, 20, (5, 2)), None), _rng().integers(0, 20, (10,))),
        _lm_loss,
        _sgd(20.0),
    ),
    Program(
        "word_language_model.py",
        ["RNNModel"],
        lambda ns: ns["RNNModel"]("GRU", 20, 8, 8, 2, dropout=0.0),
        lambda: ((_rng().integers(0, 20, (5, 2)), None), _rng().integers(0, 20, (10,))),
        _lm_loss,
        _sgd(20.0),
    ),
    Program(
        "word_language_model.py",
        ["PositionalEncoding", "TransformerModel"],
        lambda ns: ns["TransformerModel"](20, 8, 2, 16, 2, dropout=0.0),
        lambda: ((_rng().integers(0, 20, (5, 2)),), _rng().integers(0, 20, (10,))),
        lambda ns, out, target: ns["torch"].nn.functional.nll_loss(out.view(-1, 20), target),
        _adam(1e-3),
    ),
    Program(
        "super_resolution_model.py",
        ["Net"],
        lambda ns: ns["Net"](upscale_factor=2),
        lambda: ((_rng().standard_normal((2, 1, 6, 6)),), _rng().standard_normal((2, 1, 12, 12))),
        _mse,
        _adam(0.01),
    ),
    Program(
        "fast_neural_style_transformer_net.py",
        ["TransformerNet", "ConvLayer", "ResidualBlock", "UpsampleConvLayer"],
        lambda ns: ns["TransformerNet"](),
        lambda: ((_rng().standard_normal((1, 3, 12, 12)),), _rng().standard_normal((1, 3, 12, 12))),
        _mse,
        _adam(1e-3),
        steps=1,
    ),
    Program(
        "dcgan_main.py",
        ["Generator", "Discriminator", "weights_init"],
        lambda ns: ns["torch"].nn.Sequential(ns["Generator"](1), ns["Discriminator"](1)),
        _gan_data,
        _gan_loss,
        _adam(0.0002, betas=(0.5, 0.999)),
        globals_={"nz": 8, "ngf": 4, "ndf": 4, "nc": 3},
    ),
    Program(
        "language_translation_model.py",
        ["PositionalEncoding", "Translator"],
        lambda ns: ns["Translator"](2, 2, 8, 2, 12, 12, 16, 0.0),
        _translator_data,
        _translator_loss,
        _adam(1e-4, betas=(0.9, 0.98), eps=1e-9),
    ),
    Program(
        "pytorch_cifar_resnet.py",
        ["BasicBlock", "ResNet", "ResNet18"],
        lambda ns: ns["ResNet18"](),
        lambda: ((_rng().standard_normal((2, 3, 32, 32)),), np.array([3, 7])),
        _cross_entropy,
        _resnet_sgd,
        steps=1,
    ),
    Program(
        "vae_main.py",
        ["VAE", "loss_function"],
        lambda ns: ns["VAE"](),
        _vae_data,
        _vae_loss,
        _adam(1e-3),
        prepare=_same_draws,
    ),
    Program(
        "nanogpt_model.py",
        ["LayerNorm", "CausalSelfAttention", "MLP", "Block", "GPTConfig", "GPT"],
        lambda ns: ns["GPT"](
            ns["GPTConfig"](block_size=8, vocab_size=16, n_layer=2, n_head=2, n_embd=8)
        ),
        _gpt_data,
        _program_loss,
        _nanogpt_adamw,
        clip=0.1,  # train.py clips at 1.0; these tiny models' norms are near 1: make it act
    ),
    Program(
        "nanogpt_model.py",
        ["LayerNorm", "CausalSelfAttention", "MLP", "Block", "GPTConfig", "GPT"],
        lambda ns: ns["GPT"](
            ns["GPTConfig"](block_size=8, vocab_size=16, n_layer=1, n_head=2, n_embd=8, bias=False)
        ),
        _gpt_data,
        _program_loss,
        _nanogpt_adamw,
        id="nanogpt_model_no_bias",
    ),
    Program(
        "mingpt_model.py",
        ["NewGELU", "CausalSelfAttention", "Block", "GPT"],
        lambda ns: ns["GPT"](_mingpt_config()),
        _gpt_data,
        _program_loss,
        _mingpt_adamw,
        clip=0.1,  # trainer.py's grad_norm_clip is 1.0
    ),
    Program(
        "gat_main.py",
        ["GraphAttentionLayer", "GAT"],
        lambda ns: ns["GAT"](5, 8, 2, 3, concat=False, dropout=0.0),
        _graph_data,
        _masked_nll,
        _adam(0.005, weight_decay=5e-4),
    ),
    Program(
        "gat_main.py",
        ["GraphAttentionLayer", "GAT"],
        lambda ns: ns["GAT"](5, 8, 2, 3, concat=True, dropout=0.0),
        _graph_data,
        _masked_nll,
        _adam(0.005, weight_decay=5e-4),
        id="gat_main_concat",
    ),
    Program(
        "snli_model.py",
        ["Bottle", "Linear", "Encoder", "SNLIClassifier"],
        lambda ns: ns["SNLIClassifier"](_snli_config()),
        _snli_data,
        _cross_entropy,
        _adam(1e-3),
    ),
    Program(
        "pytorch_cifar_shufflenetv2.py",
        ["ShuffleBlock", "SplitBlock", "BasicBlock", "DownBlock", "ShuffleNetV2", "configs"],
        lambda ns: ns["ShuffleNetV2"](net_size=0.5),
        lambda: ((_rng().standard_normal((2, 3, 32, 32)),), np.array([3, 7])),
        _cross_entropy,
        _resnet_sgd,
        steps=1,
    ),
    *[
        Program(
            "makemore.py",
            _MAKEMORE,
            _makemore(cls, *args),
            _gpt_data,
            _program_loss,
            _makemore_adamw,
            id=f"makemore_{name}",
        )
        for name, cls, args in [
            ("rnn", "RNN", ("rnn",)),
            ("gru", "RNN", ("gru",)),
            ("bigram", "Bigram", ()),
        ]
    ],
]


def _model(program, framework, state=None):
    ns = load_program(program.file, program.names, framework, **program.globals)
    if program.prepare is not None:
        program.prepare(ns)
    if framework == "torch":
        torch.manual_seed(0)
    model = program.build(ns).double()
    for m in model.modules():  # dropout's draws differ between the two: off on both sides
        if "Dropout" in type(m).__name__:
            m.p = 0.0
        if isinstance(getattr(m, "dropout", None), float):  # MultiheadAttention's own
            m.dropout = 0.0
    if state is not None:
        ours = model.state_dict()
        assert sorted(ours) == sorted(state), "state_dict keys differ from PyTorch's"
        model.load_state_dict(
            {k: flow.tensor(v.detach().numpy()).to(ours[k].dtype) for k, v in state.items()}
        )
    return ns, model


def _run_step(program, ns, model, inputs, target, convert):
    out = model(*convert(inputs))
    return out, program.loss(ns, out, convert(target))


@pytest.mark.parametrize("program", PROGRAMS, ids=repr)
def test_public_program_matches_pytorch(program):
    tns, tmodel = _model(program, "torch")
    fns, fmodel = _model(program, "flow", tmodel.state_dict())
    inputs, target = program.data()
    tparams, fparams = list(tmodel.parameters()), list(fmodel.parameters())
    tnames = [n for n, _ in tmodel.named_parameters()]
    topt, tsched = program.optimizer(tns, tmodel)
    fopt, fsched = program.optimizer(fns, fmodel)
    for step in range(program.steps):
        # Both sides in float64: the inputs' floats as doubles, integer labels as int64.
        tout, tloss = _run_step(program, tns, tmodel, inputs, target, _to_torch)
        fout, floss = _run_step(program, fns, fmodel, inputs, target, _to_flow)
        for i, (a, b) in enumerate(zip(_flat(fout), _flat(tout))):
            _close(a, b, f"step {step}: output {i}")
        _close(floss, tloss, f"step {step}: loss")
        topt.zero_grad()
        fopt.zero_grad()

        def closure(opt, model_, loss_fn, convert):
            def run():
                opt.zero_grad()
                _, loss = _run_step(program, loss_fn, model_, inputs, target, convert)
                loss.backward()
                return loss

            return run

        if isinstance(topt, torch.optim.LBFGS):
            topt.step(closure(topt, tmodel, tns, _to_torch))
            fopt.step(closure(fopt, fmodel, fns, _to_flow))
        else:
            tloss.backward()
            floss.backward()
            for name, a, b in zip(tnames, fparams, tparams):
                assert (a.grad is None) == (b.grad is None), f"step {step}: {name}'s grad"
                if b.grad is not None:
                    _close(a.grad, b.grad, f"step {step}: {name}'s gradient", rtol=1e-6)
            if program.clip is not None:
                tnorm = tns["torch"].nn.utils.clip_grad_norm_(tmodel.parameters(), program.clip)
                fnorm = fns["torch"].nn.utils.clip_grad_norm_(fmodel.parameters(), program.clip)
                _close(fnorm, tnorm, f"step {step}: clip_grad_norm_'s total norm")
            topt.step()
            fopt.step()
        if tsched is not None:
            tsched.step()
            fsched.step()
        for name, a, b in zip(tnames, fparams, tparams):
            _close(a, b, f"after step {step}: {name}", rtol=1e-6)


def test_clip_grad_norm_keeps_float64():
    # the total norm (and the clip coefficient) had been summed in float32 for float64 gradients
    g = np.random.default_rng(0).standard_normal((3, 7)) / 3.0
    ps = [flow.tensor(g, requires_grad=True), torch.tensor(g, requires_grad=True)]
    for p in ps:
        p.grad = p.detach() * 1.0
    ours = flow.nn.utils.clip_grad_norm_([ps[0]], 0.1)
    theirs = torch.nn.utils.clip_grad_norm_([ps[1]], 0.1)
    assert ours.dtype == flow.float64
    _close(ours, theirs, "total norm", rtol=1e-15)
    _close(ps[0].grad, ps[1].grad, "clipped gradient", rtol=1e-15)
    inf = flow.nn.utils.clip_grad_norm_([ps[0]], 0.1, norm_type="inf")
    _close(inf, torch.nn.utils.clip_grad_norm_([ps[1]], 0.1, norm_type="inf"), "inf-norm", 1e-15)
