// Kernel signatures and tables, one per kernel family. Op definitions (ops/*.cpp) call
// through these; backends (ops/cpu, ops/cuda) register into them. Kernels receive outputs
// already allocated and inputs already in the dtype the kernel computes in.
#pragma once
#include <array>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/elementwise.h"

namespace ofl {

enum class ReduceOp { kSum, kProd, kMax, kMin, kAll, kAny };

using UnaryKernel = void(UnaryOp op, const Tensor& in, const Tensor& out, double a, double b);
using BinaryKernel = void(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
// Copies src into dst, broadcasting src to dst's shape and converting dtype.
using CopyKernel = void(const Tensor& src, const Tensor& dst);
using FillKernel = void(const Tensor& dst, double value);
using WhereKernel = void(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
// Reduces a contiguous input viewed as [outer, reduce, inner] into out [outer, inner].
using ReduceKernel = void(ReduceOp op, const Tensor& in, int64_t outer, int64_t reduce,
                          int64_t inner, const Tensor& out);
// Index of the max (or min) over the middle axis of [outer, reduce, inner] (int64 out).
using ArgReduceKernel = void(bool is_max, const Tensor& in, int64_t outer, int64_t reduce,
                             int64_t inner, const Tensor& values, const Tensor& indices);
// out[b] = op(a[b]) @ op(b[b]) for 3-d operands (batch, rows, cols); any strides.
using MatmulKernel = void(const Tensor& a, const Tensor& b, const Tensor& out);
// Softmax over the last axis of a contiguous [rows, cols] view.
using SoftmaxKernel = void(const Tensor& x, const Tensor& out, bool log);
using SoftmaxBackwardKernel = void(const Tensor& grad, const Tensor& out, const Tensor& gx,
                                   bool log);
// Normalisation over the last `cols` elements of each row; mean/rstd are per-row float stats.
using NormKernel = void(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                        bool rms, const Tensor& out, const Tensor& mean, const Tensor& rstd);
using NormBackwardKernel = void(const Tensor& grad, const Tensor& x, const Tensor& weight,
                                const Tensor& mean, const Tensor& rstd, bool rms,
                                const Tensor& gx, const Tensor& gweight, const Tensor& gbias);
// Philox fills: kind 0 uniform [a, b), 1 normal (mean a, std b), 2 integers in [a, b).
using RandomKernel = void(const Tensor& out, int kind, double a, double b, uint64_t seed,
                          uint64_t offset);
// out[.., i, ..] = x[.., index[i], ..] along axis of x viewed as [outer, n, inner].
using IndexSelectKernel = void(const Tensor& x, const Tensor& index, int64_t outer, int64_t n,
                               int64_t inner, const Tensor& out);
// out[.., index[i], ..] += src[.., i, ..] (out viewed as [outer, n, inner]).
using IndexAddKernel = void(const Tensor& src, const Tensor& index, int64_t outer, int64_t n,
                            int64_t inner, const Tensor& out);
// gather / scatter_add along `axis` with same-rank contiguous index.
using GatherKernel = void(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& out);
using ScatterAddKernel = void(const Tensor& src, int64_t axis, const Tensor& index,
                              const Tensor& out);

OFL_DECLARE_KERNEL(unary_kernel, UnaryKernel)
OFL_DECLARE_KERNEL(binary_kernel, BinaryKernel)
OFL_DECLARE_KERNEL(copy_kernel, CopyKernel)
OFL_DECLARE_KERNEL(fill_kernel, FillKernel)
OFL_DECLARE_KERNEL(where_kernel, WhereKernel)
OFL_DECLARE_KERNEL(reduce_kernel, ReduceKernel)
OFL_DECLARE_KERNEL(arg_reduce_kernel, ArgReduceKernel)
OFL_DECLARE_KERNEL(matmul_kernel, MatmulKernel)
OFL_DECLARE_KERNEL(softmax_kernel, SoftmaxKernel)
OFL_DECLARE_KERNEL(softmax_backward_kernel, SoftmaxBackwardKernel)
OFL_DECLARE_KERNEL(norm_kernel, NormKernel)
OFL_DECLARE_KERNEL(norm_backward_kernel, NormBackwardKernel)
OFL_DECLARE_KERNEL(random_kernel, RandomKernel)
OFL_DECLARE_KERNEL(index_select_kernel, IndexSelectKernel)
OFL_DECLARE_KERNEL(index_add_kernel, IndexAddKernel)
OFL_DECLARE_KERNEL(gather_kernel, GatherKernel)
OFL_DECLARE_KERNEL(scatter_add_kernel, ScatterAddKernel)

}  // namespace ofl
