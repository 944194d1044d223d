// The CUDA backend's allocator and fill kernel. Registered only in CUDA builds (CMake picks
// this folder); a CPU-only build has no kCUDA slots, so CUDA use fails with a clear error.
#include <cuda_runtime.h>

#include "core/dispatch.h"
#include "core/storage.h"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) fail(what, cudaGetErrorString(err));
}

class CudaAllocator : public Allocator {
 public:
  void* allocate(size_t nbytes, int device_index) override {
    check(cudaSetDevice(device_index), "cuda allocate");
    void* p = nullptr;
    if (nbytes) check(cudaMalloc(&p, nbytes), "cuda allocate");
    return p;
  }
  void deallocate(void* p, size_t, int device_index) override {
    if (p) cudaFree(p);  // errors at teardown are ignored: the context may be gone
  }
};

template <class T>
__global__ void fill_contiguous(T* p, int64_t n, T v) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}

void fill(const Tensor& dst, double value) {
  if (!dst.is_contiguous()) fail("fill_", "CUDA fill needs a contiguous tensor for now");
  const int64_t n = dst.numel();
  if (n == 0) return;
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  dispatch_all(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = static_cast<T>(static_cast<opmath_t<T>>(value));
    fill_contiguous<T><<<blocks, threads>>>(dst.data<T>(), n, v);
  });
  check(cudaGetLastError(), "fill_");
}

const bool registered = [] {
  static CudaAllocator allocator;
  register_allocator(DeviceType::kCUDA, &allocator);
  fill_kernel().set(DeviceType::kCUDA, fill);
  return true;
}();

}  // namespace
}  // namespace ofl::internal::cuda
