// CUDA kernels for boolean-mask selection and scattering, in row-major order: CUB's select for
// masked_select; an exclusive scan of the mask for masked_scatter, so each true element knows
// which source element it takes.
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

void masked_select(const Tensor& x_given, const Tensor& mask_given, const Tensor& out) {
  const int64_t n = mask_given.numel();
  if (n == 0 || out.numel() == 0) return;
  const Device device = out.device();
  // Either may come from a 0-d host tensor that follows the other to the GPU.
  const Tensor x = on_device(x_given, device), mask = on_device(mask_given, device);
  const Launch launch(device, "masked_select");
  const cudaStream_t stream = stream_of(device);
  const Tensor selected = scratch(1, DType::kInt64, device);
  by_itemsize(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    auto select = [&](void* temp, size_t& bytes) {
      check(cub::DeviceSelect::Flagged(temp, bytes, static_cast<const U*>(x.raw_data()),
                                       static_cast<const bool*>(mask.raw_data()),
                                       static_cast<U*>(out.raw_data()),
                                       static_cast<int64_t*>(selected.raw_data()), n, stream),
            "masked_select");
    };
    size_t bytes = 0;
    select(nullptr, bytes);
    const Tensor temp = scratch(std::max<int64_t>(int64_t(bytes), 1), DType::kUInt8, device);
    select(temp.raw_data(), bytes);
  });
  launch.done();
}

__global__ void mask_counts(const bool* mask, int64_t* counts, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) counts[i] = mask[i];
}

template <class U>
__global__ void scatter_masked(const bool* mask, const int64_t* before, const U* src, U* out,
                               int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n && mask[i]) out[i] = src[before[i]];
}

void masked_scatter(const Tensor& mask_given, const Tensor& source_given, const Tensor& out) {
  const int64_t n = mask_given.numel();
  if (n == 0) return;
  const Device device = out.device();
  // Either may come from a 0-d host tensor that follows out to the GPU.
  const Tensor mask = on_device(mask_given, device), source = on_device(source_given, device);
  const Launch launch(device, "masked_scatter");
  const cudaStream_t stream = stream_of(device);
  // counts[0, n) holds the mask as integers, counts[n] the total: the exclusive scan of n + 1
  // elements (the last one 0) leaves each element's count of trues before it, and the total.
  const Tensor counts = scratch(n + 1, DType::kInt64, device);
  const Tensor before = scratch(n + 1, DType::kInt64, device);
  auto* c = static_cast<int64_t*>(counts.raw_data());
  check(cudaMemsetAsync(c + n, 0, sizeof(int64_t), stream), "masked_scatter");
  const auto* m = static_cast<const bool*>(mask.raw_data());
  mask_counts<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(m, c, n);
  auto* b = static_cast<int64_t*>(before.raw_data());
  size_t bytes = 0;
  check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, c, b, n + 1, stream), "masked_scatter");
  const Tensor temp = scratch(std::max<int64_t>(int64_t(bytes), 1), DType::kUInt8, device);
  check(cub::DeviceScan::ExclusiveSum(temp.raw_data(), bytes, c, b, n + 1, stream),
        "masked_scatter");
  int64_t count = 0;
  check(cudaMemcpyAsync(&count, b + n, sizeof count, cudaMemcpyDeviceToHost, stream),
        "masked_scatter");
  check(cudaStreamSynchronize(stream), "masked_scatter");
  if (count > source.numel())
    fail("masked_scatter", "the mask of shape ", shape_str(mask.shape()), " selects ", count,
         " elements but the source of shape ", shape_str(source.shape()), " has only ",
         source.numel());
  by_itemsize(out.dtype(), [&](auto tag) {
    using U = decltype(tag);
    scatter_masked<U><<<blocks_for(n, kThreads), kThreads, 0, stream>>>(
        m, b, static_cast<const U*>(source.raw_data()), static_cast<U*>(out.raw_data()), n);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(masked_select_kernel, DeviceType::kCUDA, masked_select);
OFL_REGISTER_KERNEL(masked_scatter_kernel, DeviceType::kCUDA, masked_scatter);

}  // namespace
}  // namespace ofl::internal::cuda
