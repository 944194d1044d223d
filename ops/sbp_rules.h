// The SBP rules ops declare in their definitions (OpDef::sbp). Each lists an op's valid 1-d
// signatures from logical shapes and the attributes documented here; the executor (global/)
// picks among them by cost. Composite ops (linear, the losses, attention, mean, ...) declare
// none: they run as their parts, each with its own rule.
#pragma once
#include "sbp/signature.h"

namespace ofl::internal::sbp_rules {

// Shape-preserving copies (clone, contiguous, detach): every layout passes through.
extern const SbpRule kIdentity;
// Elementwise with broadcasting: the same split on every input that has the output's axis
// (B where an input broadcasts it). Variants add the partial signatures that are exact:
extern const SbpRule kElementwise;     // splits only (comparisons, pow, non-monotone maps)
extern const SbpRule kLinearUnary;     // + P(sum) -> P(sum)                        (neg, to)
extern const SbpRule kMonotoneUnary;   // + P(max|min) -> P(max|min)       (relu, exp, floor)
extern const SbpRule kAddLike;         // + all P(sum) -> P(sum)                  (add, sub)
extern const SbpRule kMulLike;         // + one input P(sum), the rest B -> P(sum)      (mul)
extern const SbpRule kDivLike;         // + input 0 P(sum), the rest B -> P(sum)        (div)
extern const SbpRule kActivationGrad;  // + input 1 P(sum), the rest B -> P(sum)  (f'(x) * grad)
extern const SbpRule kMaximum;         // + all P(max) -> P(max)
extern const SbpRule kMinimum;         // + all P(min) -> P(min)
// to: typed attribute dtype; P(max|min) pass (casts are monotone), P(sum) into floats.
extern const SbpRule kCast;
// full_like(x): splits map; a partial x gives a B output (the values are not read).
extern const SbpRule kFillLike;
// copy_(self, src): every layout, self and src alike.
extern const SbpRule kCopy;
// fill_ / zero_ (typed attr value; zero_ has none): partials pass only when filling zeros.
extern const SbpRule kFill;
// Reductions: typed attributes keepdim and axes (empty: all) or axis. Splits of kept axes map;
// a split of a reduced axis gives P(sum) (sum), P(max) / P(min) when every shard is non-empty
// (amax / amin), or nothing (kReduceExact: prod, all, any, max / min with indices, argmax).
extern const SbpRule kReduceSum;
extern const SbpRule kReduceMax;
extern const SbpRule kReduceMin;
extern const SbpRule kReduceExact;
// matmul with numpy broadcasting and 1-d operands: batch splits, S(n), S(m), S(k) -> P(sum),
// and P(sum) through either operand.
extern const SbpRule kMatmul;
extern const SbpRule kMatmulSum;
// permute (typed attr dims): a split follows its axis; partials pass.
extern const SbpRule kPermute;
// reshape / view / flatten / squeeze / unsqueeze: a split maps through merged or split
// dimensions when it sits on the leading dimension of its group and the pieces coincide.
extern const SbpRule kReshape;
// expand: splits of kept axes map; new or size-1 axes may be split from B.
extern const SbpRule kExpand;
// slice / slice_backward (typed attr dim): any other axis may be split; partials pass.
extern const SbpRule kSlice;
// select (typed attr dim, which it removes): any other axis may be split; partials pass.
extern const SbpRule kSelect;
// softmax / log_softmax: typed attribute axis; any other axis may be split.
extern const SbpRule kSoftmax;
// softmax_backward / log_softmax_backward (grad, y): + a P(sum) grad -> P(sum).
extern const SbpRule kSoftmaxGrad;
// layer_norm / rms_norm (x, weight[, bias]) -> (y[, mean], rstd): typed attribute
// normalized_shape; x and every output split on a leading axis.
extern const SbpRule kNorm;
// layer_norm_backward / rms_norm_backward (grad, x, weight[, mean], rstd) -> (gx, gweight[,
// gbias]): split rows give P(sum) parameter gradients; a P(sum) grad gives P(sum) everywhere.
extern const SbpRule kNormGrad;
// flash_attention (q, k, v) -> (out, lse), typed attribute causal: batch or heads split
// everywhere; without the causal mask also query rows (q, out, lse S(2), k and v B).
extern const SbpRule kAttention;
// flash_attention_backward (grad, q, k, v, out, lse) -> (dq, dk, dv): as the forward (split
// query rows give P(sum) dk and dv); a P(sum) grad gives P(sum) gradients.
extern const SbpRule kAttentionGrad;
// dropout (x) -> (y, mask): splits map; P(sum) x -> P(sum) y, B mask.
extern const SbpRule kDropout;
// uniform_ / normal_: any split or B (each shard draws its block by logical index).
extern const SbpRule kRandomFill;
// nll_loss (x, target) -> losses and nll_loss_backward (grad, target) -> gx: every axis but the
// classes may be split; P(sum) x (or grad) with B target -> P(sum).
extern const SbpRule kNllLoss;
extern const SbpRule kNllLossGrad;
// cat: attrs {axis}; split on another axis, or all P(sum).
extern const SbpRule kCat;
// gather(x, axis, index): attrs {axis}; x and index split on another axis where they agree.
extern const SbpRule kGather;
// index_select(x, axis, index): attrs {axis}.
extern const SbpRule kIndexSelect;
// embedding(weight, indices): split indices, or the weight's embedding dim, or its vocabulary
// (S(0) weight, B indices -> P(sum): each rank looks up only the rows it holds).
extern const SbpRule kEmbedding;
// scatter_add / index_add (x, index, src): attrs {axis}.
extern const SbpRule kScatter;
extern const SbpRule kScatterAdd;
// sort / argsort / topk (typed attr dim): any other axis may be split, on every output alike.
extern const SbpRule kAlongDim;
// cumsum (typed attr dim): any other axis may be split; P(sum) passes (a prefix sum is linear).
extern const SbpRule kCumsum;
// tril / triu: any axis may be split (each shard shifts the typed attr diagonal by its row and
// column offsets); partials pass (the mask keeps or zeroes elements).
extern const SbpRule kTriangular;
// masked_scatter (x, mask, source): no split (source is read in the whole tensor's row-major
// order); P(sum) through x and source with a B mask (the result is linear in both).
extern const SbpRule kMaskedScatter;
// multinomial (probs 1-d or 2-d): rows may be split (each shard draws its rows' counters).
extern const SbpRule kMultinomial;
// conv2d (x, weight, bias) and its gradients conv2d_input_grad (grad, weight) and
// conv2d_weight_grad (grad, x): batch and channel splits (channels only when typed attribute
// groups is 1), the reduced channel or batch split -> P(sum), and P(sum) through one operand.
extern const SbpRule kConv;
extern const SbpRule kConvInputGrad;
extern const SbpRule kConvWeightGrad;
// max_pool2d / avg_pool2d / max_pool2d_indices: batch and channel splits; max passes P(max),
// avg P(sum), the indices (of which a partial max has no layout) no partial.
extern const SbpRule kMaxPool;
extern const SbpRule kAvgPool;
extern const SbpRule kMaxPoolIndices;
// max_pool2d_backward (grad, indices) / avg_pool2d_backward (grad): batch and channel splits,
// and a P(sum) gradient (indices B) -> P(sum).
extern const SbpRule kPoolBackward;

}  // namespace ofl::internal::sbp_rules
