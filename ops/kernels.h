// Kernel signatures and tables, one per kernel family. Op definitions (ops/*.cpp) call
// through these; backends (ops/cpu, ops/cuda) register into them. Kernels receive outputs
// already allocated and inputs already in the dtype the kernel computes in.
#pragma once
#include <array>
#include <atomic>

#include "core/kernel_table.h"
#include "core/primitives.h"
#include "core/tensor.h"
#include "ops/elementwise.h"

namespace ofl::internal {

enum class ReduceOp { kSum, kProd, kMax, kMin, kAll, kAny };

using UnaryKernel = void(UnaryOp op, const Tensor& in, const Tensor& out, double a, double b);
using BinaryKernel = void(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
using WhereKernel = void(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
// Reduces a contiguous input viewed as [outer, reduce, inner] into out [outer, inner].
using ReduceKernel = void(ReduceOp op, const Tensor& in, int64_t outer, int64_t reduce,
                          int64_t inner, const Tensor& out);
// Index of the max (or min) over the middle axis of [outer, reduce, inner] (int64 out).
using ArgReduceKernel = void(bool is_max, const Tensor& in, int64_t outer, int64_t reduce,
                             int64_t inner, const Tensor& values, const Tensor& indices);
// out[i] = a[i] @ b[i] over equal batch dims (batch..., n, k) @ (batch..., k, m); operands may
// have any strides (0 for broadcast batch dims); out is contiguous.
using MatmulKernel = void(const Tensor& a, const Tensor& b, const Tensor& out);
// Softmax over the last axis of a contiguous [rows, cols] view.
using SoftmaxKernel = void(const Tensor& x, const Tensor& out, bool log);
using SoftmaxBackwardKernel = void(const Tensor& grad, const Tensor& out, const Tensor& gx,
                                   bool log);
// Normalisation over the last `cols` elements of each row; mean/rstd are per-row float stats
// (mean is undefined for rms: the rows are not centred).
using NormKernel = void(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                        bool rms, const Tensor& out, const Tensor& mean, const Tensor& rstd);
using NormBackwardKernel = void(const Tensor& grad, const Tensor& x, const Tensor& weight,
                                const Tensor& mean, const Tensor& rstd, bool rms, const Tensor& gx,
                                const Tensor& gweight, const Tensor& gbias);
// Where a random fill's tensor sits in a larger logical tensor (a global tensor's shard): its
// element at index i draws counter offset + the row-major index of start + i in `logical`.
// Empty: the tensor is the whole logical tensor.
struct RandomBlock {
  Shape logical;
  std::vector<int64_t> start;
};
// Philox fills: kind 0 uniform [a, b), 1 normal (mean a, std b), 2 integers in [a, b).
using RandomKernel = void(const Tensor& out, int kind, double a, double b, uint64_t seed,
                          uint64_t offset, const RandomBlock& block);
// Raises op's IndexError naming the first index of `index` (int64, contiguous) outside
// [0, size) of dimension `axis`: the bounds check of the index ops, run where the data is.
using IndexCheckKernel = void(const char* op, const Tensor& index, int64_t size, int64_t axis);
// x (or its gradient) viewed as [outer, classes, inner], holding classes [first, first + classes)
// of `total`: a shard of a class-split tensor (vocabulary-parallel cross-entropy), or first 0
// and total == classes.
struct ClassView {
  int64_t outer, classes, inner, first, total;
};
// Negative log-likelihood at int64 targets [outer, inner]: out = -x[n, target - first, i], 0
// where target == ignore_index or outside the view's classes; a target outside [0, total) that
// is not ignore_index raises.
using NllLossKernel = void(const Tensor& x, const Tensor& target, const ClassView& v,
                           int64_t ignore_index, const Tensor& out);
// Its adjoint: gx[n, target - first, i] = -grad[n, i], zeros elsewhere.
using NllLossBackwardKernel = void(const Tensor& grad, const Tensor& target, const ClassView& v,
                                   int64_t ignore_index, const Tensor& gx);
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
// out[.., index[i], ..] = src[i] along axis (a later index wins where two coincide).
using ScatterKernel = void(const Tensor& src, int64_t axis, const Tensor& index, const Tensor& out);
// Sorts each lane of a contiguous x viewed as [outer, n, inner] (NaN greatest, ties in index
// order) and writes the first k of each into values and int64 indices [outer, k, inner];
// values may be undefined (argsort).
using SortKernel = void(const Tensor& x, int64_t outer, int64_t n, int64_t inner, int64_t k,
                        bool descending, const Tensor& values, const Tensor& indices);
// Inclusive prefix sums along the middle axis of a contiguous [outer, n, inner] x (already in
// out's dtype), from the end when reverse.
using CumsumKernel = void(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool reverse,
                          const Tensor& out);
// Keeps x[.., i, j] where j - i <= diagonal (lower) or >= diagonal (upper), zeros elsewhere;
// x and out contiguous (..., rows, cols).
using TriangularKernel = void(const Tensor& x, bool upper, int64_t diagonal, const Tensor& out);
// num_samples categories per row of contiguous probs [rows, n] into int64 out [rows, num_samples];
// row r draws from Philox counters offset + r * stride + j (stride: num_samples with
// replacement, n without). Raises on rows that are no distribution.
using MultinomialKernel = void(const Tensor& probs, int64_t num_samples, bool replacement,
                               uint64_t seed, uint64_t offset, const Tensor& out);
// One token id per row of logits (B, V) into out (B,) int64: the largest logit where
// temperature[r] <= 0, else drawn from softmax(logits / temperature) cut to the top_k[r] largest
// (0: all) and then to the fewest of those whose probability reaches top_p[r], with the uniform
// draw of Philox counter steps[r] under key seeds[r]. Per-row inputs are contiguous (B,): seeds,
// steps and top_k int64, temperature and top_p float64. Same inputs, same tokens.
using SampleTokensKernel = void(const Tensor& logits, const Tensor& seeds, const Tensor& steps,
                                const Tensor& temperature, const Tensor& top_k, const Tensor& top_p,
                                const Tensor& out);
// x's elements where mask is true (both contiguous, one shape), in row-major order, into out.
using MaskedSelectKernel = void(const Tensor& x, const Tensor& mask, const Tensor& out);
// Writes source's leading elements, in row-major order, where mask (contiguous, out's shape) is
// true into out (contiguous); raises when source has fewer elements than mask has trues.
using MaskedScatterKernel = void(const Tensor& mask, const Tensor& source, const Tensor& out);

// The SVD of each matrix of a contiguous a (batch, m, n), float32 or float64, with k = min(m, n):
// u (batch, m, m or k), s (batch, k) descending and vh (batch, n or k, n), contiguous; a = u
// diag(s) vh. Raises naming linalg_svd when a matrix's iteration does not converge.
using SvdKernel = void(const Tensor& a, bool full_matrices, const Tensor& u, const Tensor& s,
                       const Tensor& vh);

// Fused attention per (batch, head) of q (B, H, L, D), k (B, H, S, D), v (B, H, S, Dv), each
// with unit stride on its last axis: out (B, H, L, Dv) = softmax(scale q k^T, with key j > query
// i masked when causal) v, and lse (B, H, L) each row's log-sum-exp of the scaled scores (float32;
// float64 for float64 inputs); outputs contiguous.
using AttentionKernel = void(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                             bool causal, const Tensor& out, const Tensor& lse);
// Its gradients from grad (of out, unit stride on its last axis) and the forward's out and lse.
using AttentionBackwardKernel = void(const Tensor& grad, const Tensor& q, const Tensor& k,
                                     const Tensor& v, const Tensor& out, const Tensor& lse,
                                     double scale, bool causal, const Tensor& dq, const Tensor& dk,
                                     const Tensor& dv);

// Adam's updates, in place on contiguous tensors of one shape and floating dtype, computing in
// float (double for float64): the moment x = decay x + (1 - decay) g (g * g when square), and the
// step param = param * decay - step_size * m / (sqrt(v) / bias2_sqrt + eps).
using AdamMomentKernel = void(const Tensor& x, const Tensor& g, double decay, bool square);
using AdamStepKernel = void(const Tensor& param, const Tensor& m, const Tensor& v, double decay,
                            double step_size, double bias2_sqrt, double eps);

// A 2-d sliding window over NCHW planes: kernel, stride, padding and dilation per (H, W).
struct Window2d {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  int64_t out_h(int64_t h) const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t out_w(int64_t w) const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
};
// Convolution on contiguous 4-d operands: x (N, C, H, W), w (Co, C/groups, kh, kw), y (N, Co,
// Ho, Wo); bias (Co) may be undefined. The input and weight gradients are adjoint maps.
using Conv2dKernel = void(const Tensor& x, const Tensor& w, const Tensor& bias, const Window2d& win,
                          int64_t groups, const Tensor& y);
using Conv2dInputGradKernel = void(const Tensor& gy, const Tensor& w, const Window2d& win,
                                   int64_t groups, const Tensor& gx);
using Conv2dWeightGradKernel = void(const Tensor& gy, const Tensor& x, const Window2d& win,
                                    int64_t groups, const Tensor& gw);
// Pooling over contiguous (N, C, H, W); indices hold the argmax as h * W + w in its plane.
using MaxPool2dKernel = void(const Tensor& x, const Window2d& win, const Tensor& out,
                             const Tensor& indices);
using MaxPool2dBackwardKernel = void(const Tensor& grad, const Tensor& indices, const Tensor& gx);
using AvgPool2dKernel = void(const Tensor& x, const Window2d& win, bool count_include_pad,
                             const Tensor& out);
using AvgPool2dBackwardKernel = void(const Tensor& grad, const Window2d& win,
                                     bool count_include_pad, const Tensor& gx);

OFL_DECLARE_KERNEL(unary_kernel, UnaryKernel)
OFL_DECLARE_KERNEL(binary_kernel, BinaryKernel)
OFL_DECLARE_KERNEL(where_kernel, WhereKernel)
OFL_DECLARE_KERNEL(reduce_kernel, ReduceKernel)
OFL_DECLARE_KERNEL(arg_reduce_kernel, ArgReduceKernel)
OFL_DECLARE_KERNEL(matmul_kernel, MatmulKernel)
// Whether float32 matmuls may run in TF32 on GPUs that have it (flow.backends.cuda.matmul.
// allow_tf32, off by default as in PyTorch): faster, with 10 mantissa bits in the products.
std::atomic<bool>& matmul_allow_tf32();
OFL_DECLARE_KERNEL(softmax_kernel, SoftmaxKernel)
OFL_DECLARE_KERNEL(softmax_backward_kernel, SoftmaxBackwardKernel)
OFL_DECLARE_KERNEL(norm_kernel, NormKernel)
OFL_DECLARE_KERNEL(norm_backward_kernel, NormBackwardKernel)
OFL_DECLARE_KERNEL(svd_kernel, SvdKernel)
OFL_DECLARE_KERNEL(attention_kernel, AttentionKernel)
OFL_DECLARE_KERNEL(attention_backward_kernel, AttentionBackwardKernel)
OFL_DECLARE_KERNEL(adam_moment_kernel, AdamMomentKernel)
OFL_DECLARE_KERNEL(adam_step_kernel, AdamStepKernel)
OFL_DECLARE_KERNEL(random_kernel, RandomKernel)
OFL_DECLARE_KERNEL(index_check_kernel, IndexCheckKernel)
OFL_DECLARE_KERNEL(nll_loss_kernel, NllLossKernel)
OFL_DECLARE_KERNEL(nll_loss_backward_kernel, NllLossBackwardKernel)
OFL_DECLARE_KERNEL(index_select_kernel, IndexSelectKernel)
OFL_DECLARE_KERNEL(index_add_kernel, IndexAddKernel)
OFL_DECLARE_KERNEL(gather_kernel, GatherKernel)
OFL_DECLARE_KERNEL(scatter_add_kernel, ScatterAddKernel)
OFL_DECLARE_KERNEL(scatter_kernel, ScatterKernel)
OFL_DECLARE_KERNEL(sort_kernel, SortKernel)
OFL_DECLARE_KERNEL(cumsum_kernel, CumsumKernel)
OFL_DECLARE_KERNEL(triangular_kernel, TriangularKernel)
OFL_DECLARE_KERNEL(multinomial_kernel, MultinomialKernel)
OFL_DECLARE_KERNEL(sample_tokens_kernel, SampleTokensKernel)
OFL_DECLARE_KERNEL(masked_select_kernel, MaskedSelectKernel)
OFL_DECLARE_KERNEL(masked_scatter_kernel, MaskedScatterKernel)
OFL_DECLARE_KERNEL(conv2d_kernel, Conv2dKernel)
OFL_DECLARE_KERNEL(conv2d_input_grad_kernel, Conv2dInputGradKernel)
OFL_DECLARE_KERNEL(conv2d_weight_grad_kernel, Conv2dWeightGradKernel)
// Whether float32 convolutions may run in TF32 (flow.backends.cudnn.allow_tf32, on by default as
// in PyTorch).
std::atomic<bool>& conv_allow_tf32();
OFL_DECLARE_KERNEL(max_pool2d_kernel, MaxPool2dKernel)
OFL_DECLARE_KERNEL(max_pool2d_backward_kernel, MaxPool2dBackwardKernel)
OFL_DECLARE_KERNEL(avg_pool2d_kernel, AvgPool2dKernel)
OFL_DECLARE_KERNEL(avg_pool2d_backward_kernel, AvgPool2dBackwardKernel)

}  // namespace ofl::internal
