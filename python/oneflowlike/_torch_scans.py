"""torch's cumulative, order-statistic, counting and scatter-reduce functions (cumprod, cummax,
logcumsumexp, nanmedian, mode, quantile, unique, histc, bincount, scatter_reduce, ...) as
composites of the registered ops; bound as flow.<name> and Tensor.<name>."""

__all__ = []
