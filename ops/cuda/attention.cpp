// Fused attention on CUDA: cuDNN's flash-attention graphs (cudnn_frontend's sdpa and
// sdpa_backward) for float16 and bfloat16, built once per shape, layout and mask and cached. The
// statistics cuDNN saves for backward are each query row's log-sum-exp, as the CPU kernel's.
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#include <cuda_runtime.h>
#include <cudnn_frontend.h>

#include <map>
#include <memory>
#include <tuple>

#include "ops/cuda/cudnn.h"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

namespace fe = cudnn_frontend;
using GraphPtr = std::shared_ptr<fe::graph::Graph>;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

void check_fe(fe::error_t status, const char* op) {
  if (status.is_bad()) fail(op, "cuDNN fused attention: ", status.get_message());
}

void check_cuda(cudaError_t err, const char* op) {
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();
  fail(op, "CUDA error: ", cudaGetErrorString(err));
}

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kGrad, kDq, kDk, kDv };

fe::DataType_t io_dtype(DType t, const char* op) {
  if (t == DType::kFloat16) return fe::DataType_t::HALF;
  if (t == DType::kBFloat16) return fe::DataType_t::BFLOAT16;
  fail<TypeError>(op, "cuDNN's fused attention takes float16 or bfloat16, got ", dtype_name(t),
                  " (scaled_dot_product_attention runs other dtypes as its parts)");
}

// t as cuDNN takes it: 16-byte aligned, rows of the last axis at multiples of 16 bytes.
Tensor aligned(const Tensor& t) {
  bool ok = reinterpret_cast<uintptr_t>(t.raw_data()) % 16 == 0 && t.strides().back() == 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) ok = ok && t.strides()[d] % 8 == 0;
  return ok ? t : contiguous_local(t);
}

TensorPtr operand(fe::graph::Graph& g, const char* name, Uid uid, const Tensor& t) {
  return g.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(t.shape()).set_stride(
          t.strides()));
}

// The log-sum-exp (B, H, L) contiguous, as cuDNN's float32 (B, H, L, 1) statistics.
TensorPtr stats(TensorPtr t, const Tensor& q) {
  const int64_t b = q.shape()[0], h = q.shape()[1], l = q.shape()[2];
  t->set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({b, h, l, 1})
      .set_stride({h * l, l, 1, 1});
  return t;
}

GraphPtr new_graph(DType dtype, const char* op) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(io_dtype(dtype, op))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

GraphPtr forward_graph(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                       double scale, bool causal, cudnnHandle_t h) {
  const char* op = "flash_attention";
  GraphPtr g = new_graph(q.dtype(), op);
  auto options = fe::graph::SDPA_attributes()
                     .set_name("flash_attention")
                     .set_generate_stats(true)
                     .set_attn_scale(static_cast<float>(scale))
                     .set_causal_mask(causal);
  auto [o, lse] =
      g->sdpa(operand(*g, "q", kQ, q), operand(*g, "k", kK, k), operand(*g, "v", kV, v), options);
  o->set_output(true).set_uid(kO).set_dim(out.shape()).set_stride(out.strides());
  stats(lse, q)->set_output(true);
  check_fe(g->build(h, {fe::HeurMode_t::A}), op);
  return g;
}

GraphPtr backward_graph(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                        double scale, bool causal, cudnnHandle_t h) {
  const char* op = "flash_attention_backward";
  GraphPtr g = new_graph(q.dtype(), op);
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("flash_attention_backward")
                     .set_attn_scale(static_cast<float>(scale))
                     .set_causal_mask(causal);
  TensorPtr lse = stats(g->tensor(fe::graph::Tensor_attributes().set_name("lse")), q);
  auto [gq, gk, gv] =
      g->sdpa_backward(operand(*g, "q", kQ, q), operand(*g, "k", kK, k), operand(*g, "v", kV, v),
                       operand(*g, "out", kO, out), operand(*g, "grad", kGrad, grad), lse, options);
  gq->set_output(true).set_uid(kDq).set_dim(dq.shape()).set_stride(dq.strides());
  gk->set_output(true).set_uid(kDk).set_dim(dk.shape()).set_stride(dk.strides());
  gv->set_output(true).set_uid(kDv).set_dim(dv.shape()).set_stride(dv.strides());
  check_fe(g->build(h, {fe::HeurMode_t::A}), op);
  return g;
}

// What a graph was built for: the operands' shapes and strides, dtype, mask, scale, device.
struct Key {
  std::vector<int64_t> layout;
  DType dtype;
  bool causal, backward;
  double scale;
  int device;
  bool operator<(const Key& o) const {
    return std::tie(layout, dtype, causal, backward, scale, device) <
           std::tie(o.layout, o.dtype, o.causal, o.backward, o.scale, o.device);
  }
};

Key key_of(std::initializer_list<const Tensor*> operands, double scale, bool causal,
           bool backward) {
  Key key{{}, (*operands.begin())->dtype(), causal, backward, scale, 0};
  for (const Tensor* t : operands) {
    key.layout.insert(key.layout.end(), t->shape().begin(), t->shape().end());
    key.layout.insert(key.layout.end(), t->strides().begin(), t->strides().end());
    key.device = t->device().index;
  }
  return key;
}

// Graphs are built once (cuDNN's plan search takes milliseconds) and then only executed. Per
// thread: cuDNN's execution plans are not safe to share across threads (PyTorch keeps its cuDNN
// attention graphs thread-local for this), and so each runs on the thread's handle it was built
// with (the cache, made after that handle, goes before it when the thread ends).
template <class Build>
GraphPtr cached(const Key& key, Build build) {
  thread_local std::map<Key, GraphPtr> graphs;
  GraphPtr& g = graphs[key];
  if (!g) g = build();
  return g;
}

void execute(const fe::graph::Graph& g, cudnnHandle_t h, std::unordered_map<int64_t, void*> pack,
             Device device, const char* op) {
  int64_t bytes = 0;
  check_fe(g.get_workspace_size(bytes), op);
  // From the caching allocator on this stream: reused by later work on the stream only.
  Tensor workspace = Tensor::empty({std::max<int64_t>(bytes, 1)}, DType::kUInt8, device);
  check_fe(g.execute(h, pack, workspace.raw_data()), op);
}

void attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, double scale,
               bool causal, const Tensor& out, const Tensor& lse) {
  const char* op = "flash_attention";
  if (out.numel() == 0) return;
  check_cuda(cudaSetDevice(out.device().index), op);
  if (k_in.shape()[2] == 0) {  // no keys: nothing to attend to (the CPU kernel's zeros)
    fill_into(out, 0.0);
    return fill_into(lse, -INFINITY);
  }
  const Tensor q = aligned(q_in), k = aligned(k_in), v = aligned(v_in);
  const cudnnHandle_t h = cudnn_handle(out.device(), op);
  GraphPtr g = cached(key_of({&q, &k, &v, &out}, scale, causal, false),
                      [&] { return forward_graph(q, k, v, out, scale, causal, h); });
  execute(*g, h,
          {{kQ, q.raw_data()},
           {kK, k.raw_data()},
           {kV, v.raw_data()},
           {kO, out.raw_data()},
           {kStats, lse.raw_data()}},
          out.device(), op);
}

void attention_backward(const Tensor& grad_in, const Tensor& q_in, const Tensor& k_in,
                        const Tensor& v_in, const Tensor& out_in, const Tensor& lse, double scale,
                        bool causal, const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  const char* op = "flash_attention_backward";
  check_cuda(cudaSetDevice(dq.device().index), op);
  if (q_in.numel() == 0 || k_in.shape()[2] == 0) {  // no pairs: zero gradients
    for (const Tensor* t : {&dq, &dk, &dv})
      if (t->numel()) fill_into(*t, 0.0);
    return;
  }
  if (q_in.shape()[2] == 1 && k_in.shape()[2] == 1) {
    // cuDNN's backward refuses s_q = s_kv = 1 (GRAPH_NOT_SUPPORTED). One key: p = 1 and out = v,
    // so ds = p (g.v - g.out) = 0: dq = dk = 0 and dv = g, as the CPU kernel computes.
    fill_into(dq, 0.0);
    fill_into(dk, 0.0);
    return copy_into(dv, grad_in);
  }
  Tensor grad = aligned(grad_in), out = aligned(out_in);
  if (cudnnGetVersion() < 90501 && grad.strides() != out.strides()) {
    // cuDNN before 9.5.1 reads dO with O's strides (PyTorch's MHA.cpp copies alike).
    grad = contiguous_local(grad);
    out = contiguous_local(out);
  }
  const Tensor q = aligned(q_in), k = aligned(k_in), v = aligned(v_in);
  const cudnnHandle_t h = cudnn_handle(dq.device(), op);
  GraphPtr g = cached(key_of({&grad, &q, &k, &v, &out, &dq, &dk, &dv}, scale, causal, true), [&] {
    return backward_graph(grad, q, k, v, out, dq, dk, dv, scale, causal, h);
  });
  execute(*g, h,
          {{kQ, q.raw_data()},
           {kK, k.raw_data()},
           {kV, v.raw_data()},
           {kO, out.raw_data()},
           {kGrad, grad.raw_data()},
           {kStats, lse.raw_data()},
           {kDq, dq.raw_data()},
           {kDk, dk.raw_data()},
           {kDv, dv.raw_data()}},
          dq.device(), op);
}

}  // namespace

OFL_REGISTER_KERNEL(attention_kernel, DeviceType::kCUDA, attention);
OFL_REGISTER_KERNEL(attention_backward_kernel, DeviceType::kCUDA, attention_backward);

}  // namespace ofl::internal::cuda
