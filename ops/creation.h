// Creation ops. Random ones draw from a counter-based Philox generator indexed by element.
#pragma once
#include <optional>

#include "core/op_def.h"
#include "core/random.h"
#include "core/tensor.h"
#include "ops/kernels.h"

namespace ofl::internal {

Tensor zeros(const Shape& shape, DType dtype = DType::kFloat32, Device device = {});
Tensor ones(const Shape& shape, DType dtype = DType::kFloat32, Device device = {});
Tensor full(const Shape& shape, double value, DType dtype = DType::kFloat32, Device device = {});
// The tensor on `device`: itself when already there; to meta, a meta tensor of the same shape
// and layout; out of meta or to a device that is not there, a clear error. Differentiable: the
// gradient comes back to t's device.
Tensor to_device(const Tensor& t, Device device);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value, std::optional<DType> dtype = std::nullopt);
// A 0-d tensor holding `value`.
Tensor scalar_tensor(double value, DType dtype, Device device = {});
Tensor arange(double start, double end, double step, DType dtype, Device device = {});
Tensor linspace(double start, double end, int64_t steps, DType dtype = DType::kFloat32,
                Device device = {});
Tensor eye(int64_t n, int64_t m, DType dtype = DType::kFloat32, Device device = {});
// Uniform in [low, high).
Tensor rand(const Shape& shape, DType dtype = DType::kFloat32, Generator* gen = nullptr,
            Device device = {});
Tensor randn(const Shape& shape, DType dtype = DType::kFloat32, Generator* gen = nullptr,
             Device device = {});
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = DType::kInt64,
               Generator* gen = nullptr, Device device = {});
// A random op's shard draws its block of the logical tensor: as the op's shard_attrs,
// with_block adds the attributes block_logical and block_start (input 0's logical shape and
// where its shard starts), which block_of reads back (without them: the whole tensor).
Attrs with_block(const Attrs& attrs, const ShardArgs& shard);
RandomBlock block_of(const Attrs& attrs);

// In-place fills used by nn.init.
void uniform_(const Tensor& t, double low, double high, Generator* gen = nullptr);
void normal_(const Tensor& t, double mean, double std, Generator* gen = nullptr);

}  // namespace ofl::internal
