// A fused elementwise program: the op `_fused_elementwise` that the fusion pass
// (graph/passes/fuse_elementwise.cpp) makes of a chain of elementwise ops, its program as data
// and its kernel table. Registers 0 to inputs - 1 hold the inputs, converted to the program's
// dtype as each part's kernel converts them; step i writes register inputs + i from earlier
// registers, computing as its op does (ops/elementwise_math.h) and rounding to the dtype as that
// op's output was rounded; the outputs are registers. Every register has the program's shape
// (inputs broadcast to it).
#pragma once
#include <array>
#include <initializer_list>
#include <vector>

#include "core/kernel_table.h"
#include "core/op_def.h"
#include "core/tensor.h"

namespace ofl::internal {

// Limits that keep a kernel's operands and registers on its stack: the CPU walks every operand in
// one loop (core/loop.h), a CUDA thread holds every register. Inputs of one element (the
// constants of scalings and clamps) are read once, outside the walk.
inline constexpr int kMaxFusedOperands = 12;  // outputs and inputs of more than one element
inline constexpr int kMaxFusedRegisters = 32;
inline bool walked(const Shape& input) {
  return numel_of(input) != 1;
}

// Up to N elements held inline: a program parses at every call without touching the heap.
template <class T, size_t N>
class InlineVector {
 public:
  InlineVector() = default;
  InlineVector(std::initializer_list<T> items) {
    for (const T& x : items) push_back(x);
  }
  void push_back(const T& x) {
    OFL_CHECK(n_ < N, "InlineVector: more than ", N, " elements");
    items_[n_++] = x;
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const T& operator[](size_t i) const { return items_[i]; }
  T& operator[](size_t i) { return items_[i]; }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + n_; }

 private:
  std::array<T, N> items_;  // (uninitialised past n_: T is trivial)
  size_t n_ = 0;
};

struct FusedStep {
  ElementwiseStep op;
  int32_t a, b, c;  // registers: unary a; binary a, b; where c ? a : b (unused ones 0)
};

struct FusedProgram {
  int32_t inputs = 0;
  InlineVector<FusedStep, kMaxFusedRegisters> steps;
  InlineVector<int32_t, kMaxFusedOperands> outputs;  // registers
  Shape shape;  // the logical shape: written to the attributes, not read back (a kernel takes
                // its outputs', a shard's on global tensors)
  DType dtype = DType::kFloat32;

  int32_t registers() const { return inputs + int32_t(steps.size()); }
  // The op's attributes, and back (checked: registers in range, each read after it is written).
  Attrs attrs() const;
  static FusedProgram from(const Attrs& attrs, const char* op);
};

// Runs `program` over inputs broadcast to the outputs' shape into contiguous outputs of its dtype.
using FusedElementwiseKernel = void(const FusedProgram& program, const std::vector<Tensor>& in,
                                    const std::vector<Tensor>& out);
OFL_DECLARE_KERNEL(fused_elementwise_kernel, FusedElementwiseKernel)

}  // namespace ofl::internal
