// The FFT on CUDA through cuFFT's C2C/Z2Z transforms, plans cached per (device, length, batch
// layout, dtype) for each thread, their work areas from our caching allocator on the current
// stream. A [outer, n, inner] batch with inner > 1 runs as `outer` strided batches of `inner`
// lanes (cuFFT's layouts have one batch stride); the scale is one more elementwise pass.
#include <cufft.h>

#include <map>
#include <tuple>

#include "ops/cuda/common.cuh"
#include "ops/fft.h"

namespace ofl::internal::cuda {
namespace {

void check_fft(cufftResult status, const char* what) {
  if (status != CUFFT_SUCCESS) fail("_fft_c2c", what, " failed: cuFFT status ", int(status));
}

struct PlanEntry {
  cufftHandle handle;
  size_t work_bytes;
};

// (device, n, batch, stride, dist, double) -> a plan that allocates no work area of its own.
using PlanKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, bool>;

PlanEntry plan_for(Device device, int64_t n, int64_t batch, int64_t stride, int64_t dist,
                   bool is_double) {
  thread_local std::map<PlanKey, PlanEntry> plans;
  const PlanKey key{device.index, n, batch, stride, dist, is_double};
  auto it = plans.find(key);
  if (it != plans.end()) return it->second;
  if (plans.size() >= 64) {  // bounded: each plan holds device memory for its twiddles
    for (auto& [k, entry] : plans) cufftDestroy(entry.handle);
    plans.clear();
  }
  PlanEntry entry{};
  check_fft(cufftCreate(&entry.handle), "cufftCreate");
  check_fft(cufftSetAutoAllocation(entry.handle, 0), "cufftSetAutoAllocation");
  long long len = n, embed = n;
  check_fft(cufftMakePlanMany64(entry.handle, 1, &len, &embed, stride, dist, &embed, stride, dist,
                                is_double ? CUFFT_Z2Z : CUFFT_C2C, batch, &entry.work_bytes),
            "cufftMakePlanMany64");
  plans.emplace(key, entry);
  return entry;
}

template <class T>
__global__ void scale_values(T* data, int64_t count, T scale) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e < count) data[e] *= scale;
}

void fft(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool forward, double scale,
         const Tensor& out) {
  const Device device = x.device();
  const cudaStream_t stream = stream_of(device);
  const bool is_double = x.dtype() == DType::kComplex128;
  const int64_t batch = inner == 1 ? outer : inner;
  const int64_t stride = inner == 1 ? 1 : inner, dist = inner == 1 ? n : 1;
  const int64_t rounds = inner == 1 ? 1 : outer;
  const PlanEntry plan = plan_for(device, n, batch, stride, dist, is_double);
  check_fft(cufftSetStream(plan.handle, stream), "cufftSetStream");
  const Tensor work =
      scratch(std::max<int64_t>(static_cast<int64_t>(plan.work_bytes), 1), DType::kUInt8, device);
  check_fft(cufftSetWorkArea(plan.handle, work.raw_data()), "cufftSetWorkArea");
  const int direction = forward ? CUFFT_FORWARD : CUFFT_INVERSE;
  const size_t item = itemsize(x.dtype());
  auto* in = static_cast<char*>(const_cast<void*>(x.raw_data()));
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < rounds; ++o) {
    const size_t offset = static_cast<size_t>(o * n * inner) * item;
    if (is_double)
      check_fft(cufftExecZ2Z(plan.handle, reinterpret_cast<cufftDoubleComplex*>(in + offset),
                             reinterpret_cast<cufftDoubleComplex*>(dst + offset), direction),
                "cufftExecZ2Z");
    else
      check_fft(cufftExecC2C(plan.handle, reinterpret_cast<cufftComplex*>(in + offset),
                             reinterpret_cast<cufftComplex*>(dst + offset), direction),
                "cufftExecC2C");
  }
  if (scale != 1.0) {
    const int64_t count = 2 * out.numel();
    if (is_double)
      scale_values<<<blocks_for(count, kThreads), kThreads, 0, stream>>>(
          static_cast<double*>(out.raw_data()), count, scale);
    else
      scale_values<<<blocks_for(count, kThreads), kThreads, 0, stream>>>(
          static_cast<float*>(out.raw_data()), count, static_cast<float>(scale));
  }
  launched("_fft_c2c");
}

}  // namespace

OFL_REGISTER_KERNEL(fft_kernel, DeviceType::kCUDA, fft);

}  // namespace ofl::internal::cuda
