// CUDA sample_tokens: the rows go to the host and the CPU kernel samples them (B x V values a
// decoding step, small beside the step's forward), so a request's tokens are the same whichever
// device computed its logits.
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

Tensor on_host(const Tensor& t) {
  Tensor h = Tensor::empty(t.shape(), t.dtype());
  copy_kernel().get(DeviceType::kCUDA)(t, h);
  return h;
}

void sample_tokens(const Tensor& logits, const Tensor& seeds, const Tensor& steps,
                   const Tensor& temperature, const Tensor& top_k, const Tensor& top_p,
                   const Tensor& out) {
  const Tensor tokens = Tensor::empty(out.shape(), DType::kInt64);
  sample_tokens_kernel().get(DeviceType::kCPU)(on_host(logits), on_host(seeds), on_host(steps),
                                               on_host(temperature), on_host(top_k), on_host(top_p),
                                               tokens);
  copy_kernel().get(DeviceType::kCUDA)(tokens, out);
}

OFL_REGISTER_KERNEL(sample_tokens_kernel, DeviceType::kCUDA, sample_tokens);

}  // namespace
}  // namespace ofl::internal::cuda
