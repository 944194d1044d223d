// The row of a binary elementwise op (ops/binary.cpp), for the families that add such ops.
#pragma once
#include <vector>

#include "core/op_def.h"
#include "ops/elementwise.h"

namespace ofl::internal {

// The gradient of a binary op for both inputs, from the saved inputs and output.
using BinaryGrad = std::vector<Tensor> (*)(const BackwardArgs& b);

// The op computing `op` (named by binary.cpp's table, with its SBP rule) with broadcasting and
// PyTorch's type promotion; bound as flow.<name> and Tensor.<name>.
OpDef binary_def(BinaryOp op, uint8_t saves = kSaveNone, BinaryGrad grad = nullptr);

// Gradient `ga` for input 0 and `gb` for input 1, each only where needed, summed over broadcast
// dims and cast back to the input's dtype.
std::vector<Tensor> both(const BackwardArgs& b, const Tensor& ga, const Tensor& gb);

}  // namespace ofl::internal
