"""nn.Graph (OneFlow's API): the Graph in graph.py (its tracing in _tracing.py, its pipeline and
layout planning in _planning.py), its configuration (graph.config) in config.py, a module's
settings inside graphs (GraphModule) in proxy.py; _save.py writes a compiled graph."""

from .config import GraphConfig, pipeline_schedule
from .graph import Graph
from ._tracing import _dim0_shards, _micro_batches  # noqa: F401 (the pipeline tests cut with them)
from .proxy import GraphModule

__all__ = ["Graph", "GraphConfig", "GraphModule", "pipeline_schedule"]
