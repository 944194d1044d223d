// F.interpolate as a composite: per spatial axis, the interpolation weights (an (in, out) matrix)
// or source indices are built on the host with ATen's index arithmetic (UpSample.h and the CPU
// upsample kernels: scales in opmath, floorf, clamped borders, cubic A = -0.75), then applied as a
// matmul over that axis (nearest modes: an index_select, exact for every dtype and for inf), so
// autograd, meta, CUDA and tracing come from those ops. The weights are a local constant: global
// inputs are not supported yet.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/creation.h"
#include "ops/index_ops.h"
#include "ops/linalg.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

namespace {

enum class Interp { kNearest, kNearestExact, kLinear, kCubic, kArea };

struct ModeInfo {
  const char* name;
  Interp interp;
  int64_t rank;  // the input rank the mode needs; 0: any of 3, 4, 5
};

constexpr ModeInfo kModes[] = {
    {"nearest", Interp::kNearest, 0},  {"nearest-exact", Interp::kNearestExact, 0},
    {"area", Interp::kArea, 0},        {"linear", Interp::kLinear, 3},
    {"bilinear", Interp::kLinear, 4},  {"bicubic", Interp::kCubic, 4},
    {"trilinear", Interp::kLinear, 5},
};

const ModeInfo& mode_info(const std::string& mode) {
  for (const ModeInfo& m : kModes)
    if (mode == m.name) return m;
  fail("interpolate", "mode '", mode,
       "' is not one of nearest, nearest-exact, linear, bilinear, bicubic, trilinear, "
       "area");
}

// ATen's compute_scales_value and area_pixel_compute_scale: input/output positions per output
// position, 1 / scale_factor when one was given.
template <class T>
T scale_value(int64_t in, int64_t out, std::optional<double> scale) {
  return scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / out;
}

template <class T>
T pixel_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / (out - 1) : T(0);
  return scale_value<T>(in, out, scale);
}

// ATen's area_pixel_compute_source_index: where output position o reads in the input.
template <class T>
T source_index(T scale, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return scale * static_cast<T>(o);
  const T src = scale * (static_cast<T>(o) + T(0.5)) - T(0.5);
  return !cubic && src < T(0) ? T(0) : src;
}

// ATen's guard_index_and_lambda: the lower neighbour (at most in - 1) and the weight of the upper.
template <class T>
void index_and_lambda(T src, int64_t in, int64_t& index, T& lambda) {
  index = std::min(static_cast<int64_t>(std::floor(static_cast<float>(src))), in - 1);
  lambda = std::min(std::max(src - static_cast<T>(index), T(0)), T(1));
}

// The input position each output position copies (ATen's HelperInterpNearest / NearestExact).
// ATen's 2-d nearest kernel (nearest_idx) copies when out == in and halves when out == 2 in,
// whatever the scale: `shortcuts` for a 4-d input, as measured against PyTorch.
template <class T>
std::vector<int64_t> nearest_indices(Interp interp, int64_t in, int64_t out,
                                     std::optional<double> scale, bool shortcuts) {
  const T s = pixel_scale<T>(in, out, false, scale);
  std::vector<int64_t> idx(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    int64_t i;
    if (interp == Interp::kNearest && shortcuts && (out == in || out == 2 * in)) {
      i = out == in ? o : o >> 1;
    } else if (interp == Interp::kNearest) {
      i = static_cast<int64_t>(std::floor(static_cast<float>(source_index<T>(s, o, true, false))));
    } else {
      const double src = static_cast<double>(source_index<T>(s, o, false, false)) + 0.5;
      i = static_cast<int64_t>(std::floor(static_cast<float>(src)));
    }
    idx[static_cast<size_t>(o)] = std::min(i, in - 1);
  }
  return idx;
}

// ATen's get_cubic_upsample_coefficients (A = -0.75).
template <class T>
void cubic_coefficients(T t, T c[4]) {
  const T a = T(-0.75);
  auto conv1 = [a](T x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto conv2 = [a](T x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  c[0] = conv2(t + T(1));
  c[1] = conv1(t);
  const T t2 = T(1) - t;
  c[2] = conv1(t2);
  c[3] = conv2(t2 + T(1));
}

// w[i * out + o]: the weight of input position i in output position o.
template <class T>
std::vector<T> weights(Interp interp, int64_t in, int64_t out, bool align_corners,
                       std::optional<double> scale) {
  std::vector<T> w(static_cast<size_t>(in * out), T(0));
  auto at = [&](int64_t i, int64_t o) -> T& { return w[static_cast<size_t>(i * out + o)]; };
  const T s = pixel_scale<T>(in, out, align_corners, scale);
  for (int64_t o = 0; o < out; ++o) {
    if (interp == Interp::kArea) {  // adaptive average pooling's windows
      const int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
      for (int64_t i = start; i < end; ++i) at(i, o) = T(1) / static_cast<T>(end - start);
    } else if (interp == Interp::kLinear) {
      if (in == out) {  // ATen copies
        at(o, o) = T(1);
        continue;
      }
      int64_t i0;
      T lambda;
      index_and_lambda(source_index<T>(s, o, align_corners, false), in, i0, lambda);
      at(i0, o) += T(1) - lambda;
      at(i0 + (i0 < in - 1 ? 1 : 0), o) += lambda;
    } else {  // cubic, reading clamped at the borders
      int64_t i0;
      T t, c[4];
      index_and_lambda(source_index<T>(s, o, align_corners, true), in, i0, t);
      cubic_coefficients(t, c);
      for (int64_t j = 0; j < 4; ++j) at(std::clamp(i0 - 1 + j, int64_t(0), in - 1), o) += c[j];
    }
  }
  return w;
}

// ATen's anti-aliased weights (_compute_indices_min_size_weights_aa, antialias=True): when
// downsampling, the filter (triangle for linear, Keys' cubic with a = -0.5 for cubic) is
// stretched by the scale so every input position contributes, and each output's weights are
// normalized to sum to 1. Upsampling gives the plain filter's weights, normalized likewise.
template <class T>
std::vector<T> antialiased_weights(Interp interp, int64_t in, int64_t out, bool align_corners,
                                   std::optional<double> scale) {
  const bool cubic = interp == Interp::kCubic;
  auto filter = [cubic](T x) -> T {
    x = std::abs(x);
    if (!cubic) return x < T(1) ? T(1) - x : T(0);
    const T a = T(-0.5);
    if (x < T(1)) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < T(2)) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return T(0);
  };
  const T s = pixel_scale<T>(in, out, align_corners, scale);
  const T half = cubic ? T(2) : T(1);  // the filter's support at scale 1
  const T support = s >= T(1) ? half * s : half;
  const T invscale = s >= T(1) ? T(1) / s : T(1);
  std::vector<T> w(static_cast<size_t>(in * out), T(0));
  for (int64_t o = 0; o < out; ++o) {
    const T center = s * (static_cast<T>(o) + T(0.5));
    const int64_t lo = std::max(static_cast<int64_t>(center - support + T(0.5)), int64_t(0));
    const int64_t hi = std::min(static_cast<int64_t>(center + support + T(0.5)), in);
    T total = T(0);
    for (int64_t i = lo; i < hi; ++i)
      total += filter((static_cast<T>(i) - center + T(0.5)) * invscale);
    if (total == T(0)) continue;
    for (int64_t i = lo; i < hi; ++i)
      w[static_cast<size_t>(i * out + o)] =
          filter((static_cast<T>(i) - center + T(0.5)) * invscale) / total;
  }
  return w;
}

// A host-built constant where x lives: on x's device, or a meta tensor for a meta x.
template <class T>
Tensor constant_like(const Tensor& x, const std::vector<T>& values, const Shape& shape, DType dtype,
                     DType want) {
  if (x.device().is_meta()) return Tensor::empty(shape, want, x.device());
  Tensor t = Tensor::empty(shape, dtype, Device{});
  std::copy(values.begin(), values.end(), t.data<T>());
  if (want != dtype) t = converted(t, want);
  return to_device(t, x.device());
}

template <class T>
Tensor resample_axis(const Tensor& x, int64_t axis, Interp interp, int64_t out, bool align_corners,
                     std::optional<double> scale, bool antialias) {
  const int64_t rank = static_cast<int64_t>(meta_of(x).shape.size());
  const int64_t in = meta_of(x).shape[static_cast<size_t>(axis)];
  if (interp == Interp::kNearest || interp == Interp::kNearestExact) {
    if (out > (int64_t(1) << 31))
      fail("interpolate", "resampling axis ", axis, " to ", out, " positions: too large");
    const Tensor idx = constant_like(x, nearest_indices<T>(interp, in, out, scale, rank == 4),
                                     {out}, DType::kInt64, DType::kInt64);
    return index_select(x, axis, idx);
  }
  // The host-built (in, out) weights: refuse, naming the sizes, what would not fit in memory.
  constexpr int64_t kMaxWeights = int64_t(1) << 28;
  if (out > kMaxWeights / std::max<int64_t>(in, 1))
    fail("interpolate", "resampling axis ", axis, " from ", in, " to ", out,
         " positions needs an (", in, ", ", out,
         ") weight matrix, more than 2^28 entries: "
         "too large");
  const DType dtype = std::is_same_v<T, double> ? DType::kFloat64 : DType::kFloat32;
  const Tensor w =
      constant_like(x,
                    antialias ? antialiased_weights<T>(interp, in, out, align_corners, scale)
                              : weights<T>(interp, in, out, align_corners, scale),
                    {in, out}, dtype, meta_of(x).dtype);
  const int64_t last = rank - 1;
  if (axis == last) return matmul(x, w);
  return transpose(matmul(transpose(x, axis, last), w), axis, last);
}

Tensor interpolate(const CallArgs& a) {
  const Tensor& x = a.tensor(0);
  const std::vector<int64_t>& size = a.ints(1);
  const ModeInfo& mode = mode_info(a.str(2));
  const bool align_corners = a.flag(3);
  const TensorMeta m = meta_of(x);
  const int64_t rank = static_cast<int64_t>(m.shape.size());
  if (rank < 3 || rank > 5)
    fail("interpolate", "expects a 3-d, 4-d or 5-d input (N, C, spatial...), got ",
         shape_str(m.shape), " for mode '", mode.name, "'");
  if (mode.rank != 0 && mode.rank != rank)
    fail("interpolate", "mode '", mode.name, "' needs a ", mode.rank, "-d input, got ",
         shape_str(m.shape));
  const int64_t spatial = rank - 2;
  if (static_cast<int64_t>(size.size()) != spatial)
    fail("interpolate", "output size ", shape_str(Shape(size)),
         " does not have one entry per spatial dimension of the input ", shape_str(m.shape));
  for (int64_t d = 0; d < spatial; ++d)
    if (m.shape[static_cast<size_t>(d + 2)] <= 0 || size[static_cast<size_t>(d)] <= 0)
      fail("interpolate", "input ", shape_str(m.shape), " and output size ", shape_str(Shape(size)),
           ": spatial sizes must be greater than 0");
  const bool nearest = mode.interp == Interp::kNearest || mode.interp == Interp::kNearestExact;
  if (!nearest && !is_floating(m.dtype))
    fail<TypeError>("interpolate", "mode '", mode.name, "' expects a floating-point input, got ",
                    m.str());
  if (x.is_global())
    fail("interpolate", "global input ", shape_str(m.shape),
         ": not supported yet (its weights are a local constant); interpolate the local tensor");
  const bool antialias = a.flag(7);
  if (antialias && (rank != 4 || (mode.interp != Interp::kLinear && mode.interp != Interp::kCubic)))
    fail("interpolate",
         "antialias=True is for the bilinear and bicubic modes of a 4-d input, got "
         "mode '",
         mode.name, "' and input ", shape_str(m.shape));
  const bool wide = m.dtype == DType::kFloat64;
  Tensor y = x;
  for (int64_t d = 0; d < spatial; ++d) {
    const std::optional<double> scale = a.optional_number(4 + static_cast<size_t>(d));
    const int64_t out = size[static_cast<size_t>(d)];
    y = wide ? resample_axis<double>(y, d + 2, mode.interp, out, align_corners, scale, antialias)
             : resample_axis<float>(y, d + 2, mode.interp, out, align_corners, scale, antialias);
  }
  return y;
}

}  // namespace

OFL_REGISTER_OPS({
    {.name = "interpolate",
     .num_inputs = 1,
     .api = {{"interpolate(Tensor input, int[] output_size, str mode='nearest', "
              "bool align_corners=False, float? scale_0=None, float? scale_1=None, "
              "float? scale_2=None, bool antialias=False) -> Tensor",
              interpolate, kInternal}},
     .doc = "Resampling of the spatial dimensions (F.interpolate, nn.Upsample): nearest, "
            "nearest-exact, linear, bilinear, bicubic, trilinear, area; antialiased bilinear "
            "and bicubic"},
});

}  // namespace ofl::internal
