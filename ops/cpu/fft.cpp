// CPU FFT: an iterative mixed-radix Stockham Cooley-Tukey transform (radix 4, 2, 3, 5 butterflies
// and a generic one for other small primes) with twiddles precomputed per length, and
// Bluestein's chirp-z algorithm, through a smooth length, where a prime factor is large; so every
// length is O(n log n). Plans are cached per length and type; the lanes of a batch run in
// parallel. The inverse is the forward transform of the conjugate, conjugated.
#include <algorithm>
#include <cmath>
#include <complex>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <vector>

#include "core/parallel.h"
#include "ops/fft.h"

namespace ofl::internal::cpu {
namespace {

// Prime factors above this go through Bluestein (the generic butterfly costs p per point).
constexpr int64_t kLargestDirectPrime = 31;

// exp(-2 pi i num / den), with the angle reduced exactly in integers and evaluated in long
// double, so that twiddles of long transforms stay accurate to the last bit of a double.
std::complex<double> root(int64_t num, int64_t den) {
  num %= den;
  if (num < 0) num += den;
  const long double angle = -2.0L * std::numbers::pi_v<long double> *
                            static_cast<long double>(num) / static_cast<long double>(den);
  return {static_cast<double>(std::cos(angle)), static_cast<double>(std::sin(angle))};
}

// Radices in order: fours first, then twos, threes, fives and the other (small) primes.
std::vector<int64_t> factorize(int64_t n) {
  std::vector<int64_t> radices;
  while (n % 4 == 0) {
    radices.push_back(4);
    n /= 4;
  }
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      radices.push_back(p);
      n /= p;
    }
  if (n > 1) radices.push_back(n);
  return radices;
}

// The smallest 2^a 3^b 5^c at least n (Bluestein's convolution length).
int64_t smooth_at_least(int64_t n) {
  int64_t best = 1;
  while (best < n) best *= 2;
  for (int64_t p5 = 1; p5 < best; p5 *= 5)
    for (int64_t p35 = p5; p35 < best; p35 *= 3) {
      int64_t m = p35;
      while (m < n) m *= 2;
      best = std::min(best, m);
    }
  return best;
}

// a * b without the NaN/infinity recovery of std::complex's operator* (a library call per
// product); IEEE results otherwise.
template <class T>
inline std::complex<T> mul(std::complex<T> a, std::complex<T> b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

template <class T>
class Plan {
 public:
  using C = std::complex<T>;

  explicit Plan(int64_t n) : n_(n) {
    std::vector<int64_t> radices = factorize(n);
    if (n > 1 && radices.back() > kLargestDirectPrime) {
      init_bluestein();
      return;
    }
    int64_t ns = 1;  // the length of the sub-transforms done before a stage
    for (int64_t r : radices) {
      Stage s{r, ns, {}, {}};
      s.twiddles.resize(static_cast<size_t>(ns * (r - 1)));
      for (int64_t k = 0; k < ns; ++k)
        for (int64_t q = 1; q < r; ++q) s.twiddles[k * (r - 1) + q - 1] = C(root(q * k, ns * r));
      if (r > 5)
        for (int64_t q = 0; q < r; ++q) s.roots.push_back(C(root(q, r)));
      stages_.push_back(std::move(s));
      ns *= r;
    }
  }

  // Scratch (in elements) that transform() needs beside its data.
  int64_t work_size() const {
    if (sub_) return m_ + sub_->work_size();
    int64_t largest = 0;
    for (const Stage& s : stages_) largest = std::max(largest, s.radix);
    return n_ + 2 * largest;
  }

  // The forward DFT of data[0, n), in place.
  void transform(C* data, C* work) const {
    if (sub_) return bluestein(data, work);
    C* src = data;
    C* dst = work;
    C* v = work + n_;  // a butterfly's inputs and outputs
    for (const Stage& s : stages_) {
      run_stage(s, src, dst, v);
      std::swap(src, dst);
    }
    if (src != data) std::copy(src, src + n_, data);
  }

 private:
  struct Stage {
    int64_t radix, ns;
    std::vector<C> twiddles;  // [k * (radix - 1) + q - 1] = w_{ns radix}^{q k}
    std::vector<C> roots;     // w_radix^q, for the generic butterfly
  };

  // One Stockham pass: n / radix butterflies, each reading a stride n / radix apart and writing
  // its outputs ns apart into the sub-transforms of length ns * radix.
  void run_stage(const Stage& s, const C* src, C* dst, C* v) const {
    switch (s.radix) {  // a fixed radix unrolls its loads, butterfly and stores
      case 2:
        return radix_stage<2>(s, src, dst, v);
      case 3:
        return radix_stage<3>(s, src, dst, v);
      case 4:
        return radix_stage<4>(s, src, dst, v);
      case 5:
        return radix_stage<5>(s, src, dst, v);
      default:
        return radix_stage<0>(s, src, dst, v);
    }
  }

  template <int R>
  void radix_stage(const Stage& s, const C* src, C* dst, C* v) const {
    const int64_t r = R ? R : s.radix, ns = s.ns, m = n_ / r;
    for (int64_t b = 0; b < m / ns; ++b) {
      const C* in = src + b * ns;
      C* out = dst + b * ns * r;
      for (int64_t k = 0; k < ns; ++k) {
        const C* tw = s.twiddles.data() + k * (r - 1);
        // a fixed radix keeps its values in registers (a local array), the generic one in v
        C fixed[R ? R : 1];
        C* u = R ? fixed : v;
        u[0] = in[k];
        for (int64_t q = 1; q < r; ++q) u[q] = mul(in[k + q * m], tw[q - 1]);
        butterfly<R>(s, u, v + r);
        for (int64_t q = 0; q < r; ++q) out[k + q * ns] = u[q];
      }
    }
  }

  // v[0, r) <- its DFT (tmp: r more elements for the generic radix); R: the radix when fixed.
  template <int R>
  static void butterfly(const Stage& s, C* v, C* tmp) {
    switch (R ? R : s.radix) {
      case 2: {
        const C a = v[0], b = v[1];
        v[0] = a + b;
        v[1] = a - b;
        return;
      }
      case 3: {
        const T h = static_cast<T>(0.86602540378443864676);  // sqrt(3) / 2
        const C t1 = v[1] + v[2], t2 = v[0] - t1 * T(0.5), d = v[1] - v[2];
        const C t3(d.imag() * h, -d.real() * h);  // -i h d
        v[0] += t1;
        v[1] = t2 + t3;
        v[2] = t2 - t3;
        return;
      }
      case 4: {
        const C a0 = v[0] + v[2], a1 = v[0] - v[2], a2 = v[1] + v[3], d = v[1] - v[3];
        const C a3(d.imag(), -d.real());  // -i d
        v[0] = a0 + a2;
        v[2] = a0 - a2;
        v[1] = a1 + a3;
        v[3] = a1 - a3;
        return;
      }
      case 5: {
        const T c1 = static_cast<T>(0.30901699437494742410),
                c2 = static_cast<T>(-0.80901699437494742410);
        const T s1 = static_cast<T>(0.95105651629515357212),
                s2 = static_cast<T>(0.58778525229247312917);
        const C t1 = v[1] + v[4], t2 = v[2] + v[3], t3 = v[1] - v[4], t4 = v[2] - v[3];
        const C a1 = v[0] + c1 * t1 + c2 * t2, a2 = v[0] + c2 * t1 + c1 * t2;
        const C b1 = s1 * t3 + s2 * t4, b2 = s2 * t3 - s1 * t4;
        const C ib1(-b1.imag(), b1.real()), ib2(-b2.imag(), b2.real());  // i b
        v[0] += t1 + t2;
        v[1] = a1 - ib1;
        v[4] = a1 + ib1;
        v[2] = a2 - ib2;
        v[3] = a2 + ib2;
        return;
      }
      default: {
        const int64_t r = s.radix;
        for (int64_t q = 0; q < r; ++q) {
          C acc = v[0];
          for (int64_t j = 1; j < r; ++j) acc += mul(v[j], s.roots[(q * j) % r]);
          tmp[q] = acc;
        }
        std::copy(tmp, tmp + r, v);
      }
    }
  }

  // X_k = conj(b_k) sum_j (x_j conj(b_j)) b_{k-j} with b_j = exp(i pi j^2 / n): a circular
  // convolution of length m >= 2n - 1, done with FFTs of length m.
  void init_bluestein() {
    m_ = smooth_at_least(2 * n_ - 1);
    sub_ = std::make_unique<Plan<T>>(m_);
    chirp_.resize(static_cast<size_t>(n_));
    for (int64_t j = 0; j < n_; ++j) {
      // j^2 mod 2n keeps the angle small (j^2 overflows nothing below 3e9).
      const int64_t jj = static_cast<int64_t>((static_cast<unsigned __int128>(j) * j) %
                                              static_cast<unsigned __int128>(2 * n_));
      chirp_[j] = C(root(jj, 2 * n_));  // exp(-i pi j^2 / n) = conj(b_j)
    }
    filter_.assign(static_cast<size_t>(m_), C(0));
    const T inv_m = T(1) / static_cast<T>(m_);
    for (int64_t j = 0; j < n_; ++j) {
      filter_[j] = std::conj(chirp_[j]) * inv_m;  // b_j / m: the inverse FFT's 1/m, folded in
      if (j > 0) filter_[m_ - j] = filter_[j];
    }
    std::vector<C> work(static_cast<size_t>(sub_->work_size()));
    sub_->transform(filter_.data(), work.data());
  }

  void bluestein(C* data, C* work) const {
    C* a = work;
    C* sub_work = work + m_;
    for (int64_t j = 0; j < n_; ++j) a[j] = mul(data[j], chirp_[j]);
    std::fill(a + n_, a + m_, C(0));
    sub_->transform(a, sub_work);
    // The inverse FFT as conj(FFT(conj)): conj(A B) then the forward transform.
    for (int64_t j = 0; j < m_; ++j) a[j] = std::conj(mul(a[j], filter_[j]));
    sub_->transform(a, sub_work);
    for (int64_t k = 0; k < n_; ++k) data[k] = mul(std::conj(a[k]), chirp_[k]);
  }

  int64_t n_;
  std::vector<Stage> stages_;
  int64_t m_ = 0;  // Bluestein: the convolution length, its plan, the chirp and filter
  std::unique_ptr<Plan<T>> sub_;
  std::vector<C> chirp_, filter_;
};

template <class T>
std::shared_ptr<const Plan<T>> plan_for(int64_t n) {
  static std::mutex mutex;
  static std::map<int64_t, std::shared_ptr<const Plan<T>>> plans;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(n);
  if (it != plans.end()) return it->second;
  if (plans.size() >= 256) plans.clear();  // bounded: shapes of a long-running program vary
  auto plan = std::make_shared<const Plan<T>>(n);
  plans.emplace(n, plan);
  return plan;
}

template <class T>
void fft_lanes(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool forward, double scale,
               const Tensor& out) {
  using C = std::complex<T>;
  const auto plan = plan_for<T>(n);
  const C* in = static_cast<const C*>(x.raw_data());
  C* dst = static_cast<C*>(out.raw_data());
  const T s = static_cast<T>(scale);
  const int64_t lanes = outer * inner;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / (8 * n));
  parallel_for(lanes, grain, [&](int64_t begin, int64_t end) {
    std::vector<C> lane(static_cast<size_t>(n)), work(static_cast<size_t>(plan->work_size()));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / inner, i = t % inner;
      const C* src = in + o * n * inner + i;
      for (int64_t j = 0; j < n; ++j)
        lane[j] = forward ? src[j * inner] : std::conj(src[j * inner]);
      plan->transform(lane.data(), work.data());
      C* o_lane = dst + o * n * inner + i;
      for (int64_t j = 0; j < n; ++j)
        o_lane[j * inner] = (forward ? lane[j] : std::conj(lane[j])) * s;
    }
  });
}

void fft(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool forward, double scale,
         const Tensor& out) {
  if (x.dtype() == DType::kComplex128)
    fft_lanes<double>(x, outer, n, inner, forward, scale, out);
  else
    fft_lanes<float>(x, outer, n, inner, forward, scale, out);
}

}  // namespace

OFL_REGISTER_KERNEL(fft_kernel, DeviceType::kCPU, fft);

}  // namespace ofl::internal::cpu
