// Attention: scaled_dot_product_attention as a composition of ops, and flash_attention, the
// fused op it calls where a fused kernel serves the call (cuDNN's flash attention for 16-bit
// floats on CUDA): softmax(scale q k^T, causal mask) v in one kernel that saves each row's
// log-sum-exp for its fused backward instead of the probabilities.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>

#include "core/autograd/grad_mode.h"
#include "core/comm/work_queue.h"
#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/linalg.h"
#include "ops/nn.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

std::atomic<bool>& attention_allow_fused() {
  static std::atomic<bool> allow{true};
  return allow;
}

namespace {

using elementwise_grad::k;

// The causal mask (true above the diagonal) where `scores` lives, without data on the meta
// device. Built on scores' device (a host mask would not combine with device scores) by kernels
// only: no host copy, no sync. For global scores, as ops on scores' layout (each shard masks its
// own block: triu's rule shifts the diagonal by the shard's offsets).
Tensor future_positions(int64_t rows, int64_t cols, const Tensor& scores) {
  if (scores.is_global()) return triu(full_like(scores, 1.0, DType::kBool), 1);
  if (scores.device().is_meta()) return Tensor::empty({rows, cols}, DType::kBool, scores.device());
  return triu(ones({rows, cols}, DType::kBool, scores.device()), 1);
}

// softmax(scale q k^T) as ops, masked: causally, or by `mask` where it is defined (bool: true
// where attending is allowed; floating: added to the scores).
Tensor attention_probs(const Tensor& q, const Tensor& key, double scale, bool causal,
                       const Tensor& mask = Tensor()) {
  Tensor scores = matmul(mul(q, wrap_scalar(scale, DType::kFloat64)), transpose(key, -2, -1));
  const Tensor neg_inf = wrap_scalar(-INFINITY, DType::kFloat64);
  if (causal) {
    const Shape qs = meta_of(q).shape, ks = meta_of(key).shape;
    const int64_t rows = qs[qs.size() - 2], cols = ks[ks.size() - 2];
    scores = masked_fill(scores, future_positions(rows, cols, scores), neg_inf);
  } else if (mask.defined()) {
    scores = mask.dtype() == DType::kBool ? masked_fill(scores, logical_not(mask), neg_inf)
                                          : add(scores, mask);
  }
  return softmax(scores, -1);
}

DType lse_dtype(DType t) {
  return t == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
}

void check_qkv(const char* op, const TensorMeta& q, const TensorMeta& k, const TensorMeta& v) {
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4)
    fail(op, "q, k and v must be 4-d (batch, heads, length, head dim), got ", q.str(), ", ",
         k.str(), ", ", v.str());
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0] || k.shape[1] != q.shape[1] ||
      v.shape[1] != q.shape[1] || k.shape[3] != q.shape[3] || v.shape[2] != k.shape[2])
    fail(op, "q ", shape_str(q.shape), ", k ", shape_str(k.shape), ", v ", shape_str(v.shape),
         ": batch and heads must agree, q and k share the head dim, k and v the length");
  if (!is_floating(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    fail<TypeError>(op, "q, k and v must share one floating dtype, got ", dtype_name(q.dtype), ", ",
                    dtype_name(k.dtype), ", ", dtype_name(v.dtype));
}

// (q, k, v) -> (out (B, H, L, Dv), lse (B, H, L)).
std::vector<TensorMeta> infer_attention(const InferArgs& a) {
  const TensorMeta &q = a.in[0], &v = a.in[2];
  check_qkv(a.op, q, a.in[1], v);
  const Device device = common_device(a);
  const Shape& s = q.shape;
  return {{{s[0], s[1], s[2], v.shape[3]}, q.dtype, device},
          {{s[0], s[1], s[2]}, lse_dtype(q.dtype), device}};
}

// (grad, q, k, v, out, lse) -> (dq, dk, dv).
std::vector<TensorMeta> infer_attention_backward(const InferArgs& a) {
  const TensorMeta &g = a.in[0], &q = a.in[1], &k = a.in[2], &v = a.in[3];
  const TensorMeta &out = a.in[4], &lse = a.in[5];
  check_qkv(a.op, q, k, v);
  const Shape& s = q.shape;
  const Shape out_shape{s[0], s[1], s[2], v.shape[3]}, lse_shape{s[0], s[1], s[2]};
  if (g.shape != out_shape || out.shape != out_shape || g.dtype != q.dtype || out.dtype != q.dtype)
    fail(a.op, "grad ", g.str(), " and out ", out.str(), " must be ", shape_str(out_shape), " ",
         dtype_name(q.dtype));
  if (lse.shape != lse_shape || lse.dtype != lse_dtype(q.dtype))
    fail(a.op, "lse ", lse.str(), " must be ", shape_str(lse_shape), " ",
         dtype_name(lse_dtype(q.dtype)));
  const Device device = common_device(a);
  return {{q.shape, q.dtype, device}, {k.shape, q.dtype, device}, {v.shape, q.dtype, device}};
}

// What the kernels take: a unit stride along the last axis (cuDNN's layouts), other axes as
// they are (the heads of a transposed projection stay in place).
Tensor unit_last(const Tensor& t) {
  return t.shape().back() > 1 && t.strides().back() != 1 ? contiguous_local(t) : t;
}

// Which keys a shard's query rows see. Under context parallelism q is split on the sequence and
// its rows begin at the attribute "offset" among the keys (attention_shard); the keys come whole
// (gathered) or as blocks passed around the ranks holding them (ring attention:
// ComputeArgs::streamed). A causal row sees the keys up to its own position: a block before the
// rows whole, the block holding them as a causal part, none after. The kernel runs on each part
// and the parts merge by their log-sum-exps (ring attention's running max and sum); the backward
// runs on each part with the merged output and log-sum-exp, which give each part its exact share.
int64_t query_offset(const Attrs& attrs) {
  return attrs.get<bool>("causal") && attrs.has("offset") ? attrs.get<int64_t>("offset") : 0;
}

// How the stored sequence lies in positions: in order, or (balance n > 0) in the load-balanced
// order of context parallelism over n ranks: 2n chunks of positions, stored as chunks 0, 2n - 1,
// 1, 2n - 2, ..., so that split in n, rank r holds positions' chunks r and 2n - 1 - r and every
// rank's causal rows see as many keys (the zigzag of Megatron-LM's context parallelism).
struct Order {
  int64_t balance = 0, length = 0;  // length: the whole sequence's
};

Order order_of(const Attrs& attrs, int64_t length) {
  return {attrs.has("balance") ? attrs.get<int64_t>("balance") : 0, length};
}

// A run of stored indices that are consecutive positions too.
struct Run {
  int64_t stored, position, length;
};

// The runs of the stored indices [a, a + len).
std::vector<Run> runs_of(const Order& o, int64_t a, int64_t len) {
  if (o.balance <= 0) return {{a, a, len}};
  const int64_t chunk = o.length / (2 * o.balance);
  std::vector<Run> out;
  for (int64_t i = a; i < a + len;) {
    const int64_t j = i / chunk, end = std::min(a + len, (j + 1) * chunk);
    const int64_t at = j % 2 == 0 ? j / 2 : 2 * o.balance - 1 - j / 2;
    out.push_back({i, at * chunk + i - j * chunk, end - i});
    i = end;
  }
  return out;
}

// Rows [row0, row0 + rows) of the shard against keys [key0, key0 + keys) of a block.
struct Part {
  int64_t row0, rows, key0, keys;
  bool causal;
};

// The parts of a block of `len` keys stored from `start` for `rows` query rows stored from q0.
// Causal, each run of the rows against each run of the keys: keys before the rows whole, the
// keys beside them as a causal part (row i of it sees its keys 0..i), none after.
std::vector<Part> parts_of(bool causal, const Order& order, int64_t q0, int64_t rows, int64_t start,
                           int64_t len) {
  if (rows == 0 || len == 0) return {};  // an empty shard or block (more ranks than keys)
  if (!causal) return {{0, rows, 0, len, false}};
  std::vector<Part> parts;
  for (const Run& qr : runs_of(order, q0, rows))
    for (const Run& kr : runs_of(order, start, len)) {
      const int64_t o = qr.position - kr.position;  // where the rows begin among the run's keys
      const int64_t whole = std::clamp<int64_t>(o, 0, kr.length), skip = std::max<int64_t>(0, -o);
      const int64_t r0 = qr.stored - q0, k0 = kr.stored - start;
      if (whole > 0) parts.push_back({r0, qr.length, k0, whole, false});
      if (skip < qr.length && whole < kr.length)
        parts.push_back({r0 + skip, qr.length - skip, k0 + whole,
                         std::min(qr.length - skip, kr.length - whole), true});
    }
  return parts;
}

// Whether one part, every row against every key given, is the whole call.
bool one_part(const std::vector<Part>& parts, int64_t rows, int64_t keys) {
  return parts.size() == 1 && parts[0].row0 == 0 && parts[0].rows == rows && parts[0].key0 == 0 &&
         parts[0].keys == keys;
}

// The whole sequence's length: the keys given, or every ring member's block.
int64_t keys_in_all(const StreamedBlocks* ring, const Tensor& k) {
  if (!ring) return k.shape()[2];
  int64_t n = 0;
  for (int64_t len : ring->lengths) n += len;
  return n;
}

// The peers of input i where it streams (a block of the keys or values arrived), else null.
const StreamedBlocks* streamed_input(const ComputeArgs& c, size_t i) {
  return c.streamed && (*c.streamed)[i].group ? &(*c.streamed)[i] : nullptr;
}

Shape with_length(Shape s, int64_t length) {
  s[2] = length;
  return s;
}

// Calls fn(start, k, v) for each block of the keys and values: the ones given, or, where they
// stream, every member's block in turn, passed around the ring (to the next member, from the
// one before) while fn computes on the block at hand (on CPU; on a GPU after it).
constexpr int kRingTag = 0x5249;
void for_each_block(const StreamedBlocks* ring, const Tensor& k, const Tensor& v,
                    const std::function<void(int64_t, const Tensor&, const Tensor&)>& fn) {
  if (!ring) return fn(0, k, v);
  const std::shared_ptr<comm::Communicator>& group = ring->group;
  const int n = group->size(), me = group->rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
  Tensor kb = contiguous_local(k), vb = contiguous_local(v);
  for (int step = 0; step < n; ++step) {
    const int held = (me - step + n) % n;  // whose block this is
    if (step + 1 == n) return fn(ring->starts[size_t(held)], kb, vb);
    const int64_t len = ring->lengths[size_t((held + n - 1) % n)];
    Tensor kn = Tensor::empty(with_length(kb.shape(), len), kb.dtype(), kb.device()),
           vn = Tensor::empty(with_length(vb.shape(), len), vb.dtype(), vb.device());
    auto pass = [group, kb, vb, kn, vn, next, prev]() mutable {
      comm::send_recv(*group, kb, next, kn, prev, kRingTag);
      comm::send_recv(*group, vb, next, vn, prev, kRingTag + 1);
    };
    if (kb.device().type == DeviceType::kCPU) {
      std::shared_future<void> passed = comm::submit(group, pass);
      fn(ring->starts[size_t(held)], kb, vb);
      passed.get();
    } else {
      fn(ring->starts[size_t(held)], kb, vb);
      pass();
    }
    kb = kn;
    vb = vn;
  }
}

// The running softmax-weighted sum `acc` over the key parts so far, with their log-sum-exp
// `acc_lse`, takes in one more part's.
void merge_part(const Tensor& acc, const Tensor& acc_lse, const Tensor& part,
                const Tensor& part_lse) {
  const Tensor top = maximum(acc_lse, part_lse);
  const Tensor w0 = exp(sub(acc_lse, top)), w1 = exp(sub(part_lse, top)), total = add(w0, w1);
  copy_into(acc, add(mul(acc, unsqueeze(div(w0, total), -1)),
                     mul(to_dtype(part, acc.dtype()), unsqueeze(div(w1, total), -1))));
  copy_into(acc_lse, add(top, log(total)));
}

// What a row's log-sum-exp starts at before any key: far below any real one, yet finite, so
// that merging (exp of a difference) gives no NaN.
constexpr double kNoKeyYet = -1e30;

void attend(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
            const Tensor& out, const Tensor& lse) {
  attention_kernel().get(out.device().type)(unit_last(q), unit_last(k), unit_last(v), scale, causal,
                                            out, lse);
}

void compute_attention(const ComputeArgs& c) {
  require_output_shapes(op_def("flash_attention"), c);
  const double scale = c.attrs.get<double>("scale");
  const bool causal = c.attrs.get<bool>("causal");
  const Tensor &q = c.in[0], &k = c.in[1], &v = c.in[2], &out = c.out[0], &lse = c.out[1];
  const int64_t rows = q.shape()[2], q0 = query_offset(c.attrs);
  const StreamedBlocks* ring = streamed_input(c, 1);
  const Order order = order_of(c.attrs, keys_in_all(ring, k));
  if (!ring) {
    const std::vector<Part> parts = parts_of(causal, order, q0, rows, 0, k.shape()[2]);
    if (one_part(parts, rows, k.shape()[2]))
      return attend(q, k, v, scale, parts[0].causal, out, lse);
  }
  const Device dev = out.device();
  const Tensor acc = zeros(out.shape(), lse.dtype(), dev),
               acc_lse = full(lse.shape(), kNoKeyYet, lse.dtype(), dev);
  for_each_block(ring, k, v, [&](int64_t start, const Tensor& kb, const Tensor& vb) {
    for (const Part& p : parts_of(causal, order, q0, rows, start, kb.shape()[2])) {
      const int64_t m = p.rows;
      const Tensor po = Tensor::empty(with_length(out.shape(), m), out.dtype(), dev),
                   pl = Tensor::empty(with_length(lse.shape(), m), lse.dtype(), dev);
      attend(narrow(q, 2, p.row0, m), narrow(kb, 2, p.key0, p.keys), narrow(vb, 2, p.key0, p.keys),
             scale, p.causal, po, pl);
      merge_part(narrow(acc, 2, p.row0, m), narrow(acc_lse, 2, p.row0, m), po, pl);
    }
  });
  copy_into(out, acc);
  copy_into(lse, acc_lse);
}

void compute_attention_backward(const ComputeArgs& c) {
  require_output_shapes(op_def("flash_attention_backward"), c);
  const double scale = c.attrs.get<double>("scale");
  const bool causal = c.attrs.get<bool>("causal");
  const Tensor g = unit_last(c.in[0]), q = unit_last(c.in[1]), out = unit_last(c.in[4]),
               lse = contiguous_local(c.in[5]);
  const Tensor &k = c.in[2], &v = c.in[3], &dq = c.out[0], &dk = c.out[1], &dv = c.out[2];
  const auto backward = [&](const Tensor& g, const Tensor& q, const Tensor& keys,
                            const Tensor& values, const Tensor& out, const Tensor& lse, bool mask,
                            const Tensor& dq, const Tensor& dk, const Tensor& dv) {
    attention_backward_kernel().get(dq.device().type)(g, q, unit_last(keys), unit_last(values), out,
                                                      lse, scale, mask, dq, dk, dv);
  };
  const int64_t rows = q.shape()[2], q0 = query_offset(c.attrs);
  const StreamedBlocks* ring = streamed_input(c, 2);
  const Order order = order_of(c.attrs, keys_in_all(ring, k));
  if (!ring) {
    const std::vector<Part> parts = parts_of(causal, order, q0, rows, 0, k.shape()[2]);
    if (one_part(parts, rows, k.shape()[2]))
      return backward(g, q, k, v, out, lse, parts[0].causal, dq, dk, dv);
  }
  // dk and dv span every key (their signature's P(sum) or B); each part adds its share.
  for (const Tensor* t : {&dq, &dk, &dv}) fill_into(*t, 0.0);
  const Device dev = dq.device();
  for_each_block(ring, k, v, [&](int64_t start, const Tensor& kb, const Tensor& vb) {
    for (const Part& p : parts_of(causal, order, q0, rows, start, kb.shape()[2])) {
      const int64_t m = p.rows;
      const auto rows_of = [&](const Tensor& t) { return narrow(t, 2, p.row0, m); };
      const Tensor dq_p = Tensor::empty(with_length(dq.shape(), m), dq.dtype(), dev),
                   dk_p = Tensor::empty(with_length(kb.shape(), p.keys), dk.dtype(), dev),
                   dv_p = Tensor::empty(with_length(vb.shape(), p.keys), dv.dtype(), dev);
      backward(rows_of(g), rows_of(q), narrow(kb, 2, p.key0, p.keys), narrow(vb, 2, p.key0, p.keys),
               rows_of(out), contiguous_local(rows_of(lse)), p.causal, dq_p, dk_p, dv_p);
      const Tensor dq_rows = rows_of(dq), dk_keys = narrow(dk, 2, start + p.key0, p.keys),
                   dv_keys = narrow(dv, 2, start + p.key0, p.keys);
      copy_into(dq_rows, add(dq_rows, dq_p));
      copy_into(dk_keys, add(dk_keys, dk_p));
      copy_into(dv_keys, add(dv_keys, dv_p));
    }
  });
}

// The shard's query offset against its keys' (k is whole where q is split on the sequence).
Attrs attention_shard(const Attrs& attrs, const ShardArgs& s, size_t q) {
  Attrs out = attrs;
  const std::vector<int64_t>&qo = s.in_offsets[q], &ko = s.in_offsets[q + 1];
  out.set("offset", int64_t(qo.size() == 4 && ko.size() == 4 ? qo[2] - ko[2] : 0));
  return out;
}

// The gradients as ops, for backward with create_graph (double backward):
//   p = softmax(s);  dv = p^T g;  ds = p (g v^T - rowsum(g v^T p));  dq = scale ds k;
//   dk = scale ds^T q.
std::vector<Tensor> attention_grad_in_ops(const BackwardArgs& b) {
  const Tensor &q = b.in[0], &key = b.in[1], &v = b.in[2];
  const Tensor g = to_dtype(b.grads[0], b.in_meta[0].dtype);
  const double scale = b.attrs.get<double>("scale");
  const Tensor p = attention_probs(q, key, scale, b.attrs.get<bool>("causal"));
  const Tensor dp = matmul(g, transpose(v, -2, -1));
  const Tensor ds = mul(mul(p, sub(dp, sum(mul(dp, p), {-1}, true))), k(scale));
  return {b.needs[0] ? matmul(ds, key) : Tensor(),
          b.needs[1] ? matmul(transpose(ds, -2, -1), q) : Tensor(),
          b.needs[2] ? matmul(transpose(p, -2, -1), g) : Tensor()};
}

std::vector<Tensor> attention_backward(const BackwardArgs& b) {
  if (autograd::grad_enabled()) {
    if (const int64_t n = order_of(b.attrs, 0).balance)
      fail("flash_attention",
           "a double backward (create_graph) in the load-balanced order (balance=", n,
           ") is not implemented");
    return attention_grad_in_ops(b);
  }
  static const OpDef& def = op_def("flash_attention_backward");
  std::vector<Tensor> g = dispatch(
      def,
      {to_dtype(b.grads[0], b.in_meta[0].dtype), b.in[0], b.in[1], b.in[2], b.out[0], b.out[1]},
      b.attrs);
  for (size_t i = 0; i < 3; ++i)
    if (!b.needs[i]) g[i] = Tensor();
  return g;
}

// Products of L x S per (batch, head): forward q k^T over the head dim D and p v over Dv;
// backward recomputes q k^T, then g v^T and p^T g over Dv, ds k and ds^T q over D.
double attention_flops(const std::vector<Shape>& in, size_t q, double over_d, double over_dv) {
  const Shape &qs = in[q], &ks = in[q + 1], &vs = in[q + 2];
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) return 0;
  const double pairs = double(qs[0]) * double(qs[1]) * double(qs[2]) * double(ks[2]);
  return 2 * pairs * (over_d * double(qs[3]) + over_dv * double(vs[3]));
}

// Priced as its q k^T GEMMs, one a batch and head (the fused kernel's tiles are query rows by
// key columns, its K the head width).
GemmShape attention_gemm(const std::vector<Shape>& in, size_t q) {
  const Shape &qs = in[q], &ks = in[q + 1];
  if (qs.size() != 4 || ks.size() != 4) return {};
  return {double(qs[0]) * double(qs[1]), double(qs[2]), double(ks[2]), double(qs[3])};
}

OpCost attention_cost(const std::vector<Shape>& in, const Shape& out, DType dtype) {
  OpCost c = elementwise_cost(in, out, dtype);
  c.flops = attention_flops(in, 0, 1, 1);
  c.gemm = attention_gemm(in, 0);
  return c;
}

OpCost attention_backward_cost(const std::vector<Shape>& in, const Shape& out, DType dtype) {
  OpCost c = elementwise_cost(in, out, dtype);
  c.flops = attention_flops(in, 1, 3, 2);
  c.gemm = attention_gemm(in, 1);
  return c;
}

// sum of clamp(j, 0, cap) over j in [lo, hi].
double clamped_sum(int64_t lo, int64_t hi, int64_t cap) {
  double total = 0;
  const int64_t a = std::max<int64_t>(lo, 1), b = std::min(hi, cap);
  if (a <= b) total += (double(a) + double(b)) * double(b - a + 1) / 2;
  const int64_t c = std::max(lo, cap + 1);
  if (c <= hi) total += double(cap) * double(hi - c + 1);
  return total;
}

// The share of the (rows x keys) pairs a causal shard computes: row i, at offset o among its
// keys, sees the first o + i + 1 of them (the kernels skip masked tiles). Rows late in the
// sequence see more: the query-row split's last shard does the most.
double attention_work(const Attrs& attrs, const ShardArgs& s, size_t q) {
  if (!attrs.has("causal") || !attrs.get<bool>("causal") || s.local_out.empty() ||
      s.in_shapes.size() < q + 2)
    return 1;
  const int64_t rows = s.local_out[0].size() == 4 ? s.local_out[0][2] : 0;
  const int64_t keys = s.in_shapes[q + 1].size() == 4 ? s.in_shapes[q + 1][2] : 0;
  if (rows <= 0 || keys <= 0) return 1;
  const std::vector<int64_t>&qo = s.in_offsets[q], &ko = s.in_offsets[q + 1];
  const int64_t o = qo.size() == 4 && ko.size() == 4 ? qo[2] - ko[2] : 0;
  double pairs = 0;  // a row at position p sees keys 0..p
  for (const Run& r : runs_of(order_of(attrs, keys), o, rows))
    pairs += clamped_sum(r.position + 1, r.position + r.length, keys);
  return pairs / (double(rows) * double(keys));
}

// "balance": the sequence's order (Order; 0 in order). Beside these, a context-parallel shard's
// attributes carry "offset", where its query rows begin among its keys: set per shard by
// attention_shard (a call's own attributes never hold it).
const std::vector<AttrDef> kAttentionAttrs{
    {"scale", AttrType::kFloat}, {"causal", AttrType::kBool}, {"balance", AttrType::kInt}};

// flash_attention (q, k, v) -> (out, lse): batch or heads split everywhere, and query rows (q,
// out, lse S(2), k and v B), causal mask included: context parallelism, each shard's rows against
// the keys at its offset (attention_shard). Keys and values that arrive split on the sequence are
// streamed, not gathered (ring attention, OpDef::streamed_inputs). The planner weighs that
// against the heads split (an all-to-all each way where the neighbours keep the sequence split,
// DeepSpeed-Ulysses) and the batch split by what their conversions cost.
Sigs attention_sbp(const SbpQuery& q) {
  const Sbp rows = Sbp::split(2);
  return {uniform(q, Sbp::split(0)), uniform(q, Sbp::split(1)), {{rows, kB, kB}, {rows, rows}}};
}

// flash_attention_backward (grad, q, k, v, out, lse) -> (dq, dk, dv): as the forward (split
// query rows give P(sum) dk and dv); linear in grad (the row sums g.out too), so a P(sum) grad
// gives P(sum) gradients.
Sigs attention_grad_sbp(const SbpQuery& q) {
  const Sbp rows = Sbp::split(2);
  return {uniform(q, Sbp::split(0)),
          uniform(q, Sbp::split(1)),
          one_input(q, 0, kPSum, kPSum),
          {{rows, rows, kB, kB, rows, rows}, {rows, kPSum, kPSum}}};
}

const SbpRule kAttention{"attention", attention_sbp};
const SbpRule kAttentionGrad{"attention_grad", attention_grad_sbp};

OFL_REGISTER_OPS({
    {.name = "flash_attention",
     .num_inputs = 3,
     .cost = attention_cost,
     .sbp = &kAttention,
     .attrs = kAttentionAttrs,
     .infer = infer_attention,
     .compute = compute_attention,
     .backward = attention_backward,
     .saves = kSaveInputs | kSaveOutputs,
     .autocast = Autocast::kLowPrecision,
     .shard_attrs = [](const Attrs& a, const ShardArgs& s) { return attention_shard(a, s, 0); },
     .streamed_inputs = 0b110,  // k and v: ring attention
     .streamed_dim = 2,
     .shard_work = [](const Attrs& a, const ShardArgs& s) { return attention_work(a, s, 0); },
     .api = {{"flash_attention(Tensor query, Tensor key, Tensor value, float scale, bool "
              "is_causal=False, int balance=0) -> Tensor",
              call_front<flash_attention>(), kInternal}}},
    {.name = "flash_attention_backward",
     .num_inputs = 6,
     .differentiable = false,
     .cost = attention_backward_cost,
     .sbp = &kAttentionGrad,
     .attrs = kAttentionAttrs,
     .infer = infer_attention_backward,
     .compute = compute_attention_backward,
     .shard_attrs = [](const Attrs& a, const ShardArgs& s) { return attention_shard(a, s, 1); },
     .streamed_inputs = 0b1100,
     .streamed_dim = 2,
     .shard_work = [](const Attrs& a, const ShardArgs& s) { return attention_work(a, s, 1); }},
    {.name = "scaled_dot_product_attention",
     .num_inputs = 4,
     .cost = matmul_cost,
     .api = {{"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? "
              "attn_mask=None, float dropout_p=0.0, bool is_causal=False, float? scale=None) -> "
              "Tensor",
              [](const CallArgs& a) {
                return scaled_dot_product_attention(a.tensor(0), a.tensor(1), a.tensor(2),
                                                    a.optional_tensor(3), a.number(4), a.flag(5),
                                                    a.optional_number(6));
              },
              kInternal}}},
});

// Whether flash_attention serves this call: no mask tensor or dropout, 4-d operands of one
// floating dtype (as given, or as autocast makes them) whose batch and heads agree, and a kernel
// for it: on the CPU float32 and float64 (the blocked kernel on the BLAS), on CUDA 16-bit floats
// with a head dim cuDNN's fused kernels take (a multiple of 8 up to 128, the same for v). On the
// meta device as on CUDA: a 16-bit step traced there is planned for GPUs, where cuDNN serves it,
// and is priced so (flow.backends.cuda.enable_flash_sdp(False) prices the attention as its parts
// and runs them, on either device).
bool fused_serves(const Tensor& q, const Tensor& key, const Tensor& v, bool masked,
                  double dropout_p) {
  if (!attention_allow_fused() || masked || dropout_p > 0) return false;
  if (q.dim() != 4 || key.dim() != 4 || v.dim() != 4) return false;
  const DeviceType on = q.device().type;
  if (on != DeviceType::kCPU && on != DeviceType::kCUDA && on != DeviceType::kMeta) return false;
  const AutocastState& cast = autocast_state();
  DType dt = q.dtype();
  if (cast.enabled && (cast.device == on || on == DeviceType::kMeta) && is_floating(dt))
    dt = cast.dtype;
  else if (key.dtype() != dt || v.dtype() != dt)
    return false;
  // (Batch and heads broadcast by the composite's matmuls are not the fused kernels'.)
  const Shape qs = meta_of(q).shape, ks = meta_of(key).shape, vs = meta_of(v).shape;
  for (int d = 0; d < 2; ++d)
    if (ks[d] != qs[d] || vs[d] != qs[d]) return false;
  if (on == DeviceType::kCPU) return dt == DType::kFloat32 || dt == DType::kFloat64;
  const int64_t d = qs[3];
  return (dt == DType::kFloat16 || dt == DType::kBFloat16) && d > 0 && d % 8 == 0 && d <= 128 &&
         vs[3] == d;
}

}  // namespace

Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
                       int64_t balance) {
  static const OpDef& def = op_def("flash_attention");
  const Shape qs = meta_of(q).shape, ks = meta_of(k).shape;
  if (balance != 0 && (balance < 0 || !causal || qs.size() != 4 || ks.size() != 4 ||
                       qs[2] != ks[2] || qs[2] % (2 * balance) != 0))
    fail("flash_attention", "balance=", balance, " (the load-balanced order for that many ranks) ",
         "needs is_causal and q and k of one sequence length dividing into 2 x ", balance,
         " chunks; got is_causal=", causal ? "True" : "False", ", q ", shape_str(qs), ", k ",
         shape_str(ks));
  return dispatch(def, {q, k, v}, {{"scale", scale}, {"causal", causal}, {"balance", balance}})[0];
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, Generator* gen) {
  const Shape qs = meta_of(q).shape, ks = meta_of(k).shape, vs = meta_of(v).shape;
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    fail("scaled_dot_product_attention", "q, k, v need at least 2 dims, got ", shape_str(qs), ", ",
         shape_str(ks), ", ", shape_str(vs));
  if (qs.back() != ks.back() || ks[k.dim() - 2] != vs[v.dim() - 2])
    fail("scaled_dot_product_attention", "q ", shape_str(qs), ", k ", shape_str(ks), ", v ",
         shape_str(vs), ": head dims of q and k or lengths of k and v differ");
  if (is_causal && attn_mask.defined())
    fail("scaled_dot_product_attention", "pass either attn_mask or is_causal, not both");
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(qs.back())));
  if (fused_serves(q, k, v, attn_mask.defined(), dropout_p))
    return flash_attention(q, k, v, s, is_causal);
  Tensor attn = attention_probs(q, k, s, is_causal, attn_mask);
  if (dropout_p > 0) attn = dropout(attn, dropout_p, true, gen);
  return matmul(attn, v);
}

}  // namespace ofl::internal
