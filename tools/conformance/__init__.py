"""PyTorch's own lists and test databases as oneflowlike's oracle (tools/torch_conformance.py).

- lists: which names of torch's public lists oneflowlike has (nn modules, nn.functional,
  optimizers, lr schedulers, OpInfo names);
- ops / modules / optims: the samples of OpInfo, ModuleInfo and OptimizerInfo run through both
  frameworks (inputs through numpy), outputs and float64 gradients compared;
- report: the Markdown tables and the baseline of claimed entries that CI re-runs.
"""
