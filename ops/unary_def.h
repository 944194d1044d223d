// The row of a unary elementwise op (ops/unary.cpp), for the families that add such ops.
#pragma once
#include <vector>

#include "core/op_def.h"
#include "ops/elementwise.h"

namespace ofl::internal {

// A backward rule of x (input), y (output) and the output's gradient g.
using UnaryGrad = Tensor (*)(const Tensor& g, const Tensor& x, const Tensor& y, const Attrs& attrs);

// Rounding-like ops: defined almost everywhere with derivative zero (PyTorch's convention).
Tensor zero_grad(const Tensor& g, const Tensor&, const Tensor&, const Attrs&);

// The op `name` computing `op` with its dtype rule (integers promote to float32 except for the
// integer-preserving ops), its SBP rule, what it saves and its backward (none: not
// differentiable); bound as flow.<name> and Tensor.<name>.
OpDef unary_def(const char* name, UnaryOp op, const SbpRule& sbp, uint8_t saves, UnaryGrad grad,
                std::vector<AttrDef> attrs = {});

}  // namespace ofl::internal
