"""The PyTorch API coverage ratchet (docs/api-coverage.md): the torch names that popular model
files use, recorded in torch_api_usage.json by tools/api_coverage.py, must stay present in
oneflowlike; and the tool's extraction, on an inline snippet. Needs neither torch nor network."""

import json
import os
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import api_coverage  # noqa: E402

USAGE = os.path.join(HERE, "torch_api_usage.json")
REMEASURE = (
    "python3 tools/api_coverage.py /tmp/model_files/*.py --sources tests/python/torch_api_usage.json"
    " --json tests/python/torch_api_usage.json"
)


@pytest.fixture(scope="module")
def saved():
    with open(USAGE) as f:
        return json.load(f)


def test_recorded_figures_match_the_recorded_list(saved):
    assert api_coverage.coverage(saved["apis"]) == saved["coverage"]
    assert all(set(e["files"]) <= set(saved["files"]) for e in saved["apis"])


def test_no_recorded_torch_name_went_missing(saved):
    entries, lost, gained = api_coverage.recheck(saved)
    now = api_coverage.coverage(entries)
    missing = [e["name"] for e in entries if not e["present"]]
    print(f"\ncoverage now: {now['overall']}; missing ({len(missing)}): {', '.join(missing)}")
    if gained:
        print(f"newly present, ratchet up with `{REMEASURE}`: {', '.join(gained)}")
    assert not lost, f"these torch names were present and are missing now: {', '.join(lost)}"
    for key, fig in saved["coverage"].items():
        assert now[key]["present"] >= fig["present"], (key, now[key], fig)


SNIPPET = textwrap.dedent("""
    import math
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.utils.checkpoint
    from torch import nn as tnn, Tensor
    from torch.nn import functional as Fn, CrossEntropyLoss
    from torch.nn.init import trunc_normal_
    from .layers import Mlp

    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.norm = tnn.LayerNorm(dim)
            trunc_normal_(self.norm.weight.data)

        def forward(self, x: Tensor, names: str) -> torch.FloatTensor:
            h = torch.utils.checkpoint.checkpoint(F.relu, x).view(-1).contiguous()
            h = Fn.gelu(h) + math.exp(1.0) + np.sqrt(2.0)
            parts = names.split(",")
            self.norm(h)
            Mlp.view
            return torch.cat([h, h]).sum() + CrossEntropyLoss()(h, h).to(x.device)
    """)


def test_extraction_resolves_every_way_of_importing_torch():
    tensor_attrs = {"view", "contiguous", "sum", "exp", "sqrt", "split", "norm", "to", "data"}
    tensor_attrs |= {"device"}
    uses = api_coverage.extract(SNIPPET, tensor_attrs)
    assert uses == {
        "torch.nn.Module": True,
        "torch.nn.LayerNorm": True,
        "torch.nn.init.trunc_normal_": True,
        "torch.Tensor": False,  # only in `x: Tensor`
        "torch.FloatTensor": False,
        "torch.utils.checkpoint.checkpoint": True,
        "torch.nn.functional.relu": True,
        "torch.nn.functional.gelu": True,
        "torch.cat": True,
        "torch.nn.CrossEntropyLoss": True,
        # Tensor methods: not self.norm, math.exp, np.sqrt, names.split, nor Mlp.view (imported)
        "torch.Tensor.data": True,
        "torch.Tensor.view": True,
        "torch.Tensor.contiguous": True,
        "torch.Tensor.sum": True,
        "torch.Tensor.to": True,
        "torch.Tensor.device": True,
    }


@pytest.mark.parametrize(
    "name, cat",
    [
        ("torch.cat", "torch"),
        ("torch.jit.is_scripting", "torch"),
        ("torch.Tensor.view", "tensor"),
        ("torch.nn.Linear", "nn_module"),
        ("torch.nn.Parameter", "nn_other"),
        ("torch.nn.init.zeros_", "nn_other"),
        ("torch.nn.functional.pad", "functional"),
        ("torch._assert", "private"),
    ],
)
def test_category_without_torch(name, cat):
    assert api_coverage.category(name) == cat


def test_present_maps_torch_names_to_oneflowlike():
    assert api_coverage.flow_name("torch.nn.functional.relu") == "oneflowlike.nn.functional.relu"
    assert api_coverage.present("torch.cat")
    assert api_coverage.present("torch.nn.functional.relu")
    assert api_coverage.present("torch.nn.init.zeros_")
    assert api_coverage.present("torch.Tensor.view")
    assert api_coverage.present("torch.Tensor.shape")  # an instance attribute
    assert not api_coverage.present("torch.no_such_function")
    assert not api_coverage.present("torch.Tensor.no_such_method")
    assert not api_coverage.present("torch.no_such_module.thing")
