// Neural-network ops: normalisations, softmax family, losses, dropout, attention.
#pragma once
#include <atomic>
#include <optional>

#include "core/random.h"
#include "core/tensor.h"

namespace ofl::internal {

Tensor softmax(const Tensor& x, int64_t axis);
Tensor log_softmax(const Tensor& x, int64_t axis);
// reduction: "mean" (over non-ignored targets), "sum" or "none".
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index = -100,
                const std::string& reduction = "mean");
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     const std::string& reduction = "mean", double label_smoothing = 0.0);
Tensor mse_loss(const Tensor& a, const Tensor& b, const std::string& reduction = "mean");
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps = 1e-5);
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                std::optional<double> eps = std::nullopt);
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);
// softmax(scale q k^T, with key j > query i masked when causal) v in one op for 4-d (batch,
// heads, length, head dim) operands: the fused kernel scaled_dot_product_attention calls where
// it serves the call (cuDNN's flash attention on CUDA; the CPU has one to compare with).
// balance n > 0 (causal): the sequence is stored in context parallelism's load-balanced order
// for n ranks (2n chunks of positions, stored 0, 2n - 1, 1, 2n - 2, ...; F.load_balance puts a
// sequence so), and the mask follows the positions.
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
                       int64_t balance = 0);
// Whether scaled_dot_product_attention may call flash_attention (flow.backends.cuda.
// enable_flash_sdp; on by default, as in PyTorch).
std::atomic<bool>& attention_allow_fused();
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, Generator* gen = nullptr);

}  // namespace ofl::internal
