"""torch's creation, shape, view, dtype-conversion and indexing functions that are composites of
the registered ops (tril_indices, logspace, as_strided, unfold, index_put, dtype shorthands, ...);
bound as flow.<name> and Tensor.<name>."""

__all__ = []
