"""Context parallelism across real processes (dist_workers/context_parallel_worker.py): attention
with q, k and v split on the sequence, causal and not, fused and written out, equals one process
in its output and its gradients, eagerly and as an nn.Graph, and keeps the sequence split."""

import pytest

from _launch import expect_clean_ranks

pytestmark = pytest.mark.multiprocess


@pytest.mark.parametrize("nproc", [2, 4])
def test_attention_split_on_the_sequence_equals_one_process(nproc):
    expect_clean_ranks("context_parallel_worker.py", nproc, timeout=300, rdzv_timeout=60)
