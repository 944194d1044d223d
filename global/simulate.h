// One process playing every rank of a 1-d placement, for the SBP conformance checker
// (tests/python/test_sbp_conformance.py): the first global op inside a call either reports the
// signatures it declares, or runs on inputs already laid out as the checker chose, with no
// communication (the simulated world raises on any collective).
#pragma once
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "sbp/signature.h"

namespace ofl::internal {

// `piece` as rank `rank`'s shard of a logical tensor of `shape` laid out by `sbp` over ranks
// 0..n-1 of a simulated world.
Tensor simulated_global(const Tensor& piece, const Shape& shape, const Sbp& sbp, int rank, int n);

// The op name and 1-d signatures (its rule's and all-B) of the first global op `call` runs.
struct Declared {
  std::string op;
  std::vector<SbpSignature> signatures;
};
Declared declared_signatures(const std::function<void()>& call);

// The local outputs of the first global op `call` runs, computed on its inputs' pieces as they
// are (their layouts are the signature's inputs) with every output assumed laid out as `out`
// (ops such as reshape need it for their local shapes); the rest of `call` is skipped.
std::vector<Tensor> run_first_op_as_laid_out(const std::function<void()>& call, const Sbp& out);

}  // namespace ofl::internal
