// CPU kernel of `_fused_elementwise` (ops/fused.h): the program runs over runs of the operands'
// innermost dimension in chunks of kChunk elements, one step at a time over a whole chunk, so
// that each step is a vectorised loop (the same function objects as the unary and binary
// kernels, over whole vectors as theirs: equal results) whose dispatch is paid once a chunk, and
// the intermediates stay in the first-level cache (registers of 2 KiB). A step whose register is
// an output writes it in place of its buffer.
#include <algorithm>

#include "ops/cpu/loops.h"
#include "ops/cpu/vector_math.h"
#include "ops/elementwise_math.h"
#include "ops/fused.h"

namespace ofl::internal::cpu {
namespace {

// 512 elements: of 256, 512 and 1024 the fastest on three chains at three sizes
// (docs/performance.md, "Graph mode"); at 256 the steps' dispatch costs too much.
constexpr int64_t kChunk = 2 * kStage;
// Each register's buffer begins one cache line after the previous one's would modulo 4 KiB: where
// they all began alike, a step's loads and stores (and the operands', page-aligned when large)
// fell in one set of the first-level cache (an add then a multiply over 4 MiB operands: 687 us
// before the stagger, 446 us after).
template <class M>
constexpr int64_t kRegisterStride = kChunk + 64 / int64_t(sizeof(M));

// m elements at byte stride `stride` from p, of dtype `from`, into buf as M after rounding to T
// (the conversion the part's kernel made), zeros after them up to whole vectors (as the unary and
// binary kernels compute a run's tail: ops/cpu/loops.h). Returns buf, or p itself where it holds
// whole vectors of Ms in a row (`as_m`: `from` is T and T is M).
template <class T, class M>
const M* load(const char* p, int64_t stride, DType from, bool as_m, int64_t m, M* buf) {
  const int64_t mp = padded<M>(m);
  if (as_m && stride == int64_t(sizeof(T)) && m == mp) return reinterpret_cast<const M*>(p);
  dispatch_all(from, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (stride == 0) {
      std::fill_n(buf, m, M(T(opmath_t<S>(*reinterpret_cast<const S*>(p)))));
      return;
    }
    for (int64_t i = 0; i < m; ++i)
      buf[i] = M(T(opmath_t<S>(*reinterpret_cast<const S*>(p + i * stride))));
  });
  std::fill(buf + m, buf + mp, M(0));
  return buf;
}

template <class T, class M>
void run_step(const FusedStep& s, const M* const* reg, M* d, int64_t m) {
  const M* a = reg[s.a];
  switch (s.op.family) {
    case ElementwiseStep::kUnary:
      ew::visit_unary<M>(UnaryOp(s.op.code), s.op.a, s.op.b, [&](auto f) {
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) d[i] = f(a[i]);
      });
      break;
    case ElementwiseStep::kBinary: {
      const M* b = reg[s.b];
      auto map = [&](auto f) {
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) d[i] = M(f(a[i], b[i]));
      };
      ew::visit_binary<M>(BinaryOp(s.op.code), map, map);
      break;
    }
    case ElementwiseStep::kWhere: {
      const M *b = reg[s.b], *c = reg[s.c];
#pragma omp simd
      for (int64_t i = 0; i < m; ++i) d[i] = c[i] != M(0) ? a[i] : b[i];
      break;
    }
  }
  if constexpr (!std::is_same_v<T, M>)  // a 16-bit part's output was rounded
    for (int64_t i = 0; i < m; ++i) d[i] = M(T(d[i]));
}

// Asks for the operands' next chunk (m elements from `at`) while this one computes: the steps run
// one after another over a chunk, and in the compute-bound ones no load reaches memory, so that
// without this each chunk would begin by waiting for memory (a fused add and GELU over 16 MiB
// operands ran at 0.73x to 0.80x the two eager kernels, each of which streams).
template <int kOperands>
void prefetch_next(const std::array<char*, kOperands>& ptr,
                   const std::array<int64_t, kOperands>& stride, int outputs, int64_t at,
                   int64_t m) {
  if (m <= 0) return;
  for (int k = 0; k < kOperands; ++k) {
    if (stride[k] <= 0 || stride[k] > 16) continue;  // broadcast, strided, or unused
    const char* p = ptr[k] + at * stride[k];
    for (int64_t line = 0; line < m * stride[k]; line += 64)
      __builtin_prefetch(p + line, k < outputs);
  }
}

// kOperands: the loop's operands, the fewest of 4, 8 and 12 that hold them (its plan costs as
// many).
template <class T, int kOperands>
void run_typed(const FusedProgram& p, const std::vector<Tensor>& in,
               const std::vector<Tensor>& out) {
  using M = opmath_t<T>;
  static const Tensor unused = Tensor::empty({}, DType::kFloat32);
  const int no = int(out.size()), ni = int(in.size());
  // The loop walks the outputs and the inputs of more than one element (operand no + i for
  // input i); one-element inputs are read once.
  std::array<const Tensor*, kOperands> operands;
  operands.fill(&unused);
  for (int j = 0; j < no; ++j) operands[j] = &out[j];
  std::array<int, kMaxFusedRegisters> operand_of{};  // -1: a one-element input
  std::array<M, kMaxFusedRegisters> scalar{};
  std::array<DType, kMaxFusedRegisters> dtypes{};
  std::array<bool, kMaxFusedRegisters> as_m{};
  int walked_inputs = 0;
  for (int i = 0; i < ni; ++i) {
    dtypes[i] = in[i].dtype();
    as_m[i] = dtypes[i] == p.dtype && std::is_same_v<T, M>;
    if (walked(in[i].shape())) {
      operand_of[i] = no + walked_inputs++;
      operands[operand_of[i]] = &in[i];
    } else {
      operand_of[i] = -1;
      dispatch_all(dtypes[i], [&](auto tag) {
        using S = typename decltype(tag)::type;
        scalar[i] = M(T(opmath_t<S>(*static_cast<const S*>(in[i].raw_data()))));
      });
    }
  }
  // The output each step's register is, if any: a step computing in the outputs' dtype writes
  // a contiguous one in place of its buffer (no copy after, and fewer lines of cache in use).
  std::array<int, kMaxFusedRegisters> output_of;
  output_of.fill(-1);
  for (int j = no - 1; j >= 0; --j) output_of[p.outputs[j]] = j;
  const auto plan = make_loop<kOperands>(out[0].shape(), operands);
  run_loop<kOperands>(plan, [&](const std::array<char*, kOperands>& ptr,
                                const std::array<int64_t, kOperands>& stride, int64_t n) {
    alignas(64) M buf[kMaxFusedRegisters][kRegisterStride<M>];
    const M* reg[kMaxFusedRegisters];
    for (int64_t at = 0; at < n; at += kChunk) {
      const int64_t m = std::min(kChunk, n - at), mp = padded<M>(m);
      prefetch_next<kOperands>(ptr, stride, no, at + kChunk, std::min(kChunk, n - at - kChunk));
      for (int i = 0; i < ni; ++i) {
        const int k = operand_of[i];
        if (k < 0) {
          std::fill_n(buf[i], mp, scalar[i]);
          reg[i] = buf[i];
        } else {
          reg[i] = load<T, M>(ptr[k] + at * stride[k], stride[k], dtypes[i], as_m[i], m, buf[i]);
        }
      }
      std::array<bool, kMaxFusedOperands> written{};
      for (size_t k = 0; k < p.steps.size(); ++k) {
        M* d = buf[ni + k];
        const int j = output_of[ni + k];
        if (std::is_same_v<T, M> && j >= 0 && stride[j] == int64_t(sizeof(T)) && m == mp) {
          d = reinterpret_cast<M*>(ptr[j] + at * stride[j]);
          written[j] = true;
        }
        run_step<T, M>(p.steps[k], reg, d, mp);
        reg[ni + k] = d;
      }
      for (int j = 0; j < no; ++j) {
        if (written[j]) continue;
        const M* r = reg[p.outputs[j]];
        if (stride[j] == int64_t(sizeof(T))) {
          T* o = reinterpret_cast<T*>(ptr[j] + at * stride[j]);
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) o[i] = T(r[i]);
        } else {
          for (int64_t i = 0; i < m; ++i)
            *reinterpret_cast<T*>(ptr[j] + (at + i) * stride[j]) = T(r[i]);
        }
      }
    }
  });
}

void fused_elementwise(const FusedProgram& p, const std::vector<Tensor>& in,
                       const std::vector<Tensor>& out) {
  size_t operands = out.size();
  for (const Tensor& t : in) operands += walked(t.shape());
  dispatch_floating(p.dtype, "_fused_elementwise", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (operands <= 4) return run_typed<T, 4>(p, in, out);
    if (operands <= 8) return run_typed<T, 8>(p, in, out);
    static_assert(kMaxFusedOperands == 12);
    run_typed<T, 12>(p, in, out);
  });
}

}  // namespace

OFL_REGISTER_KERNEL(fused_elementwise_kernel, DeviceType::kCPU, fused_elementwise);

}  // namespace ofl::internal::cpu
