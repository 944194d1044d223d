// CUDA kernel of `_fused_elementwise` (ops/fused.h): one thread per output element holds every
// register of the program, runs its steps with the scalar math the unary, binary and where kernels
// use (ops/elementwise_math.h; 16-bit floats in float, rounded after each step as each part's
// output was) and writes the outputs: one kernel, one pass over memory, for the whole chain.
#include <cstring>

#include "ops/cuda/common.cuh"
#include "ops/fused.h"

namespace ofl::internal::cuda {
namespace {

constexpr int kOperands = kMaxFusedOperands;

struct Params {
  int inputs = 0, steps = 0, outputs = 0;
  FusedStep step[kMaxFusedRegisters];
  int32_t out_reg[kOperands] = {};
  const void* in[kMaxFusedRegisters] = {};  // null: the element is in `value` (a host scalar)
  uint64_t value[kMaxFusedRegisters] = {};  // a host scalar's bytes, passed by value
  DType in_dtype[kMaxFusedRegisters] = {};
  int operand[kMaxFusedRegisters] = {};  // the walk's operand of input k; -1: one element
  void* out[kOperands] = {};
};

// Input k's element at `offset`, converted to the program's T (as the part's kernel converted it)
// and computed in M.
template <class T, class M>
__device__ M load(const void* p, DType dtype, int64_t offset) {
  switch (dtype) {
    case DType::kBool:
      return convert<M>(convert<T>(static_cast<const bool*>(p)[offset]));
    case DType::kUInt8:
      return convert<M>(convert<T>(static_cast<const uint8_t*>(p)[offset]));
    case DType::kInt8:
      return convert<M>(convert<T>(static_cast<const int8_t*>(p)[offset]));
    case DType::kInt32:
      return convert<M>(convert<T>(static_cast<const int32_t*>(p)[offset]));
    case DType::kInt64:
      return convert<M>(convert<T>(static_cast<const int64_t*>(p)[offset]));
    case DType::kFloat16:
      return convert<M>(convert<T>(static_cast<const __half*>(p)[offset]));
    case DType::kBFloat16:
      return convert<M>(convert<T>(static_cast<const __nv_bfloat16*>(p)[offset]));
    case DType::kFloat32:
      return convert<M>(convert<T>(static_cast<const float*>(p)[offset]));
    default:
      return convert<M>(convert<T>(static_cast<const double*>(p)[offset]));
  }
}

// visit_unary's choice of function object, per element.
template <class M>
__device__ M unary_value(UnaryOp op, M x, M a, M b) {
  using U = UnaryOp;
  if (op == U::kPowScalar && a == M(2)) return ew::Unary<U::kSquare, M>{}(x);
  if (op == U::kPowScalar && a == M(0.5)) return ew::Unary<U::kSqrt, M>{}(x);
  if (ew::cold_unary(op)) return M(ew::cold_unary_value(op, double(x), double(a)));
  switch (op) {
#define OFL_FUSED_UNARY(name) \
  case U::name:               \
    return ew::Unary<U::name, M>{a, b}(x);
    OFL_FUSED_UNARY(kNeg)
    OFL_FUSED_UNARY(kAbs)
    OFL_FUSED_UNARY(kRelu)
    OFL_FUSED_UNARY(kSign)
    OFL_FUSED_UNARY(kSquare)
    OFL_FUSED_UNARY(kClamp)
    OFL_FUSED_UNARY(kPowScalar)
    OFL_FUSED_UNARY(kFloor)
    OFL_FUSED_UNARY(kCeil)
    OFL_FUSED_UNARY(kRound)
    OFL_FUSED_UNARY(kTrunc)
    OFL_FUSED_UNARY(kExp)
    OFL_FUSED_UNARY(kLog)
    OFL_FUSED_UNARY(kSqrt)
    OFL_FUSED_UNARY(kRsqrt)
    OFL_FUSED_UNARY(kSin)
    OFL_FUSED_UNARY(kCos)
    OFL_FUSED_UNARY(kTanh)
    OFL_FUSED_UNARY(kSigmoid)
    OFL_FUSED_UNARY(kGelu)
    OFL_FUSED_UNARY(kGeluTanh)
    OFL_FUSED_UNARY(kSilu)
    OFL_FUSED_UNARY(kReciprocal)
    OFL_FUSED_UNARY(kLog1p)
    OFL_FUSED_UNARY(kExpm1)
    OFL_FUSED_UNARY(kErf)
#undef OFL_FUSED_UNARY
    default:
      return M(NAN);
  }
}

// visit_binary's function object for the arithmetic ops of floats, per element.
template <class M>
__device__ M binary_value(BinaryOp op, M x, M y) {
  using B = BinaryOp;
  if (ew::cold_binary(op)) return M(ew::cold_binary_value(op, double(x), double(y)));
  switch (op) {
#define OFL_FUSED_BINARY(name) \
  case B::name:                \
    return M(ew::Binary<B::name, M>{}(x, y));
    OFL_FUSED_BINARY(kAdd)
    OFL_FUSED_BINARY(kSub)
    OFL_FUSED_BINARY(kMul)
    OFL_FUSED_BINARY(kDiv)
    OFL_FUSED_BINARY(kPow)
    OFL_FUSED_BINARY(kMaximum)
    OFL_FUSED_BINARY(kMinimum)
    OFL_FUSED_BINARY(kFloorDiv)
    OFL_FUSED_BINARY(kRemainder)
    OFL_FUSED_BINARY(kLogAddExp)
    OFL_FUSED_BINARY(kHypot)
    OFL_FUSED_BINARY(kNextafter)
    OFL_FUSED_BINARY(kFmod)
    OFL_FUSED_BINARY(kFmax)
    OFL_FUSED_BINARY(kFmin)
    OFL_FUSED_BINARY(kGeluGrad)
    OFL_FUSED_BINARY(kGeluTanhGrad)
    OFL_FUSED_BINARY(kSiluGrad)
    OFL_FUSED_BINARY(kSigmoidGradFromOutput)
    OFL_FUSED_BINARY(kTanhGradFromOutput)
#undef OFL_FUSED_BINARY
    default:
      return M(NAN);
  }
}

template <class T>
__global__ void fused_kernel(Params p, Strided<kOperands> walk, int64_t n) {
  using M = device_math_t<T>;
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t at[kOperands];
  walk.offsets(i, at);
  M r[kMaxFusedRegisters];
  for (int k = 0; k < p.inputs; ++k) {
    const uint64_t bits = p.value[k];
    r[k] = load<T, M>(p.in[k] ? p.in[k] : &bits, p.in_dtype[k],
                      p.operand[k] < 0 ? 0 : at[p.operand[k]]);
  }
  for (int s = 0; s < p.steps; ++s) {
    const FusedStep& st = p.step[s];
    M v;
    if (st.op.family == ElementwiseStep::kUnary)
      v = unary_value<M>(UnaryOp(st.op.code), r[st.a], M(st.op.a), M(st.op.b));
    else if (st.op.family == ElementwiseStep::kBinary)
      v = binary_value<M>(BinaryOp(st.op.code), r[st.a], r[st.b]);
    else
      v = r[st.c] != M(0) ? r[st.a] : r[st.b];
    r[p.inputs + s] = convert<M>(convert<T>(v));
  }
  for (int j = 0; j < p.outputs; ++j)
    static_cast<T*>(p.out[j])[at[j]] = convert<T>(r[p.out_reg[j]]);
}

void fused_elementwise(const FusedProgram& program, const std::vector<Tensor>& in,
                       const std::vector<Tensor>& out) {
  const Shape& shape = out[0].shape();  // (a shard's on global tensors)
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  const Device device = out[0].device();
  const Launch launch(device, "_fused_elementwise");
  Params p;
  p.inputs = int(in.size());
  p.steps = int(program.steps.size());
  p.outputs = int(out.size());
  Shape strides[kOperands];
  for (int k = 0; k < kOperands; ++k) strides[k] = Shape(shape.size(), 0);
  for (int j = 0; j < p.outputs; ++j) {
    p.out[j] = out[j].raw_data();
    p.out_reg[j] = program.outputs[size_t(j)];
    strides[j] = out[j].strides();
  }
  int operands = p.outputs;
  for (int k = 0; k < p.inputs; ++k) {
    // A 0-d host tensor (a Python number, a constant) travels by value, as the unary and binary
    // kernels take it: no copy to the device, which a captured step could not hold either.
    const Tensor& t = in[size_t(k)];
    if (t.device().type == DeviceType::kCPU) {
      OFL_CHECK(t.numel() == 1, "_fused_elementwise: a host input of shape ", shape_str(t.shape()));
      std::memcpy(&p.value[k], t.raw_data(), itemsize(t.dtype()));
    } else {
      p.in[k] = t.raw_data();
    }
    p.in_dtype[k] = t.dtype();
    p.operand[k] = walked(t.shape()) ? operands++ : -1;
    if (p.operand[k] >= 0) strides[p.operand[k]] = broadcast_strides(t, shape);
  }
  for (int s = 0; s < p.steps; ++s) {
    p.step[s] = program.steps[size_t(s)];
    if (program.steps[size_t(s)].op.family == ElementwiseStep::kUnary &&
        program.dtype != DType::kFloat64) {
      // visit_unary saturates the scalars into the computing type's range
      p.step[s].op.a = ew::saturate<float>(p.step[s].op.a);
      p.step[s].op.b = ew::saturate<float>(p.step[s].op.b);
    }
  }
  const Strided<kOperands> walk = strided<kOperands>(shape, strides, "_fused_elementwise");
  with_device_floating(program.dtype, "_fused_elementwise", [&](auto zero) {
    using T = decltype(zero);
    fused_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(device)>>>(p, walk, n);
  });
  launch.done();
}

}  // namespace

OFL_REGISTER_KERNEL(fused_elementwise_kernel, DeviceType::kCUDA, fused_elementwise);

}  // namespace ofl::internal::cuda
