// Module-level op functions, mirroring the C++ API with torch-style keywords.
#include "convert.h"
#include "core/safetensors.h"
#include "ops/ops.h"

namespace ofl::internal::py_bind {

namespace {
Tensor T(py::handle h, const char* op) {
  return as_tensor(h, op);
}
Tensor opt(const std::optional<Tensor>& t) {
  return t ? *t : Tensor();
}
Pair pair(py::handle h, const char* op) {
  if (py::isinstance<py::int_>(h)) {
    int64_t v = h.cast<int64_t>();
    return {v, v};
  }
  Shape s = to_shape(h, op);
  if (s.size() != 2)
    throw Error(str_cat("[", op, "] expected an int or a pair, got ", shape_str(s)));
  return {s[0], s[1]};
}
}  // namespace

void bind_functions(py::module_& m) {
  using py::arg;
  // creation
  m.def("from_numpy", &from_numpy);
  m.def("as_tensor_arg", [](py::handle h) { return as_tensor(h, "tensor"); });
  m.def(
      "empty", [](const Shape& s, DType d, Device device) { return Tensor::empty(s, d, device); },
      arg("shape"), arg("dtype"), arg("device") = Device{});
  m.def(
      "full", [](const Shape& s, double v, DType d, Device dev) { return full(s, v, d, dev); },
      arg("shape"), arg("value"), arg("dtype"), arg("device") = Device{});
  m.def("full_like", [](const Tensor& t, double v, DType d) { return full_like(t, v, d); });
  m.def(
      "arange",
      [](double a, double b, double step, DType d, Device dev) {
        return arange(a, b, step, d, dev);
      },
      arg("start"), arg("end"), arg("step"), arg("dtype"), arg("device") = Device{});
  m.def(
      "linspace",
      [](double a, double b, int64_t n, DType d, Device dev) { return linspace(a, b, n, d, dev); },
      arg("start"), arg("end"), arg("steps"), arg("dtype"), arg("device") = Device{});
  m.def(
      "eye", [](int64_t n, int64_t k, DType d, Device dev) { return eye(n, k, d, dev); }, arg("n"),
      arg("m"), arg("dtype"), arg("device") = Device{});
  m.def(
      "rand", [](const Shape& s, DType d, Generator* g, Device dev) { return rand(s, d, g, dev); },
      arg("shape"), arg("dtype"), arg("generator") = nullptr, arg("device") = Device{});
  m.def(
      "randn",
      [](const Shape& s, DType d, Generator* g, Device dev) { return randn(s, d, g, dev); },
      arg("shape"), arg("dtype"), arg("generator") = nullptr, arg("device") = Device{});
  m.def(
      "randint",
      [](int64_t lo, int64_t hi, const Shape& s, DType d, Generator* g, Device dev) {
        return randint(lo, hi, s, d, g, dev);
      },
      arg("low"), arg("high"), arg("shape"), arg("dtype"), arg("generator") = nullptr,
      arg("device") = Device{});
  m.def("tensor_bytes", [](const Tensor& t) {
    require_data("save", t);
    Tensor c = host_copy(contiguous(t));  // a device tensor's bytes come to the host first
    return py::bytes(static_cast<const char*>(c.raw_data()), c.numel() * itemsize(c.dtype()));
  });
  // The C++ reader of safetensors files (core/safetensors.h), which the C++ API loads weights
  // with: tensors by name.
  m.def(
      "read_safetensors", [](const std::string& path) { return safetensors::read(path); },
      py::arg("path"));
  m.def("tensor_from_bytes", [](py::buffer buf, DType d, const Shape& shape) {
    py::buffer_info info = buf.request();
    size_t n = static_cast<size_t>(numel_of(shape)) * itemsize(d);
    if (static_cast<size_t>(info.size * info.itemsize) != n)
      throw Error(str_cat("[load] buffer of ", info.size * info.itemsize, " bytes does not hold ",
                          shape_str(shape), " ", dtype_name(d), " (", n, " bytes)"));
    Tensor t = Tensor::empty(shape, d);
    std::memcpy(t.raw_data(), info.ptr, n);
    return t;
  });

  // elementwise
  std::vector<std::pair<const char*, UnaryFn>> unary = unary_functions();
  unary.insert(unary.end(), {{"clone", &clone}, {"detach", &detach}, {"contiguous", &contiguous}});
  for (auto [name, f] : unary)
    m.def(
        name, [f](const Tensor& t) { return f(t); }, arg("input"));
  using B = Tensor (*)(const Tensor&, const Tensor&);
  const std::pair<const char*, B> binary[] = {{"mul", &mul},
                                              {"div", &div},
                                              {"maximum", &maximum},
                                              {"minimum", &minimum},
                                              {"eq", &eq},
                                              {"ne", &ne},
                                              {"lt", &lt},
                                              {"le", &le},
                                              {"gt", &gt},
                                              {"ge", &ge},
                                              {"logical_and", &logical_and},
                                              {"logical_or", &logical_or},
                                              {"logical_xor", &logical_xor},
                                              {"matmul", &matmul},
                                              {"matmul_sum", &matmul_sum},
                                              {"floor_divide", &floor_divide},
                                              {"remainder", &remainder}};
  for (auto [name, f] : binary)
    m.def(
        name, [f, name](py::handle a, py::handle b) { return f(T(a, name), T(b, name)); },
        arg("input"), arg("other"));
  m.def(
      "add",
      [](py::handle a, py::handle b, double alpha) { return add(T(a, "add"), T(b, "add"), alpha); },
      arg("input"), arg("other"), arg("alpha") = 1.0);
  m.def(
      "sub",
      [](py::handle a, py::handle b, double alpha) { return sub(T(a, "sub"), T(b, "sub"), alpha); },
      arg("input"), arg("other"), arg("alpha") = 1.0);
  m.def(
      "pow",
      [](py::handle a, py::handle b) {
        if (py::isinstance<Tensor>(a)) return pow_arg(a.cast<Tensor>(), b);
        return pow(T(a, "pow"), T(b, "pow"));
      },
      arg("input"), arg("exponent"));
  m.def(
      "where",
      [](const Tensor& c, py::handle a, py::handle b) {
        return where(c, T(a, "where"), T(b, "where"));
      },
      arg("condition"), arg("input"), arg("other"));
  m.def(
      "clamp", [](const Tensor& t, py::object lo, py::object hi) { return clamp_arg(t, lo, hi); },
      arg("input"), arg("min") = py::none(), arg("max") = py::none());
  m.def(
      "gelu", [](const Tensor& t, const std::string& a) { return gelu(t, a); }, arg("input"),
      arg("approximate") = "none");
  m.def("to_dtype", [](const Tensor& t, DType d) { return to_dtype(t, d); });
  m.def(
      "masked_fill",
      [](const Tensor& t, const Tensor& mask, py::handle v) {
        return masked_fill(t, mask, T(v, "masked_fill"));
      },
      arg("input"), arg("mask"), arg("value"));

  // reductions
  m.def(
      "sum",
      [](const Tensor& t, py::object dim, bool k, py::object dt) {
        return sum(t, to_axes(dim), k, to_dtype_opt(dt));
      },
      arg("input"), arg("dim") = py::none(), arg("keepdim") = false, arg("dtype") = py::none());
  m.def(
      "mean", [](const Tensor& t, py::object dim, bool k) { return mean(t, to_axes(dim), k); },
      arg("input"), arg("dim") = py::none(), arg("keepdim") = false);
  m.def(
      "logsumexp",
      [](const Tensor& t, py::object dim, bool k) { return logsumexp(t, to_axes(dim), k); },
      arg("input"), arg("dim"), arg("keepdim") = false);

  // shapes and joins
  m.def(
      "reshape", [](const Tensor& t, py::handle s) { return reshape(t, to_shape(s, "reshape")); },
      arg("input"), arg("shape"));
  m.def(
      "permute", [](const Tensor& t, py::handle s) { return permute(t, to_shape(s, "permute")); },
      arg("input"), arg("dims"));
  m.def(
      "transpose", [](const Tensor& t, int64_t a, int64_t b) { return transpose(t, a, b); },
      arg("input"), arg("dim0"), arg("dim1"));
  m.def(
      "flatten", [](const Tensor& t, int64_t s, int64_t e) { return flatten(t, s, e); },
      arg("input"), arg("start_dim") = 0, arg("end_dim") = -1);
  m.def(
      "squeeze",
      [](const Tensor& t, py::object d) {
        return d.is_none() ? squeeze(t) : squeeze(t, to_axes(d));
      },
      arg("input"), arg("dim") = py::none());
  m.def(
      "unsqueeze", [](const Tensor& t, int64_t d) { return unsqueeze(t, d); }, arg("input"),
      arg("dim"));
  m.def(
      "narrow", [](const Tensor& t, int64_t d, int64_t s, int64_t l) { return narrow(t, d, s, l); },
      arg("input"), arg("dim"), arg("start"), arg("length"));
  m.def(
      "cat", [](const std::vector<Tensor>& xs, int64_t d) { return cat(xs, d); }, arg("tensors"),
      arg("dim") = 0);
  m.def(
      "stack", [](const std::vector<Tensor>& xs, int64_t d) { return stack(xs, d); },
      arg("tensors"), arg("dim") = 0);
  m.def(
      "split",
      [](const Tensor& t, py::object size, int64_t dim) {
        if (py::isinstance<py::int_>(size)) return split(t, size.cast<int64_t>(), dim);
        return split_sizes(t, to_shape(size, "split"), dim);
      },
      arg("tensor"), arg("split_size_or_sections"), arg("dim") = 0);
  m.def(
      "chunk", [](const Tensor& t, int64_t c, int64_t d) { return chunk(t, c, d); }, arg("input"),
      arg("chunks"), arg("dim") = 0);
  m.def(
      "index_select",
      [](const Tensor& t, int64_t d, const Tensor& i) { return index_select(t, d, i); },
      arg("input"), arg("dim"), arg("index"));
  m.def(
      "gather", [](const Tensor& t, int64_t d, const Tensor& i) { return gather(t, d, i); },
      arg("input"), arg("dim"), arg("index"));
  m.def(
      "scatter_add",
      [](const Tensor& t, int64_t d, const Tensor& i, const Tensor& s) {
        return scatter_add(t, d, i, s);
      },
      arg("input"), arg("dim"), arg("index"), arg("src"));
  m.def(
      "index_add",
      [](const Tensor& t, int64_t d, const Tensor& i, const Tensor& s) {
        return index_add(t, d, i, s);
      },
      arg("input"), arg("dim"), arg("index"), arg("source"));

  // nn
  m.def(
      "linear",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
        return linear(x, w, opt(b));
      },
      arg("input"), arg("weight"), arg("bias") = py::none());
  m.def(
      "softmax", [](const Tensor& x, int64_t d) { return softmax(x, d); }, arg("input"),
      arg("dim"));
  m.def(
      "log_softmax", [](const Tensor& x, int64_t d) { return log_softmax(x, d); }, arg("input"),
      arg("dim"));
  m.def(
      "cross_entropy",
      [](const Tensor& x, const Tensor& t, int64_t ignore, const std::string& red, double ls) {
        return cross_entropy(x, t, ignore, red, ls);
      },
      arg("input"), arg("target"), arg("ignore_index") = -100, arg("reduction") = "mean",
      arg("label_smoothing") = 0.0);
  m.def(
      "nll_loss",
      [](const Tensor& x, const Tensor& t, int64_t ignore, const std::string& red) {
        return nll_loss(x, t, ignore, red);
      },
      arg("input"), arg("target"), arg("ignore_index") = -100, arg("reduction") = "mean");
  m.def(
      "mse_loss",
      [](const Tensor& a, const Tensor& b, const std::string& r) { return mse_loss(a, b, r); },
      arg("input"), arg("target"), arg("reduction") = "mean");
  m.def(
      "layer_norm",
      [](const Tensor& x, py::handle ns, std::optional<Tensor> w, std::optional<Tensor> b,
         double eps) { return layer_norm(x, to_shape(ns, "layer_norm"), opt(w), opt(b), eps); },
      arg("input"), arg("normalized_shape"), arg("weight") = py::none(), arg("bias") = py::none(),
      arg("eps") = 1e-5);
  m.def(
      "rms_norm",
      [](const Tensor& x, py::handle ns, std::optional<Tensor> w, std::optional<double> eps) {
        return rms_norm(x, to_shape(ns, "rms_norm"), opt(w), eps);
      },
      arg("input"), arg("normalized_shape"), arg("weight") = py::none(), arg("eps") = py::none());
  m.def(
      "embedding",
      [](const Tensor& idx, const Tensor& w, std::optional<int64_t> pad) {
        return embedding(w, idx, pad);
      },
      arg("input"), arg("weight"), arg("padding_idx") = py::none());
  m.def(
      "dropout", [](const Tensor& x, double p, bool training) { return dropout(x, p, training); },
      arg("input"), arg("p") = 0.5, arg("training") = true);
  m.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> mask, double p,
         bool causal, std::optional<double> scale) {
        return scaled_dot_product_attention(q, k, v, opt(mask), p, causal, scale);
      },
      arg("query"), arg("key"), arg("value"), arg("attn_mask") = py::none(), arg("dropout_p") = 0.0,
      arg("is_causal") = false, arg("scale") = py::none());
  m.def(
      "adam_moment_",
      [](Tensor& x, const Tensor& g, double decay, bool square) -> Tensor& {
        return adam_moment_(x, g, decay, square);
      },
      arg("x"), arg("grad"), arg("decay"), arg("square") = false);
  m.def(
      "adam_step_",
      [](Tensor& p, const Tensor& m, const Tensor& v, py::handle decay, py::handle step_size,
         py::handle bias2_sqrt, double eps) -> Tensor& {
        const char* op = "adam_step_";
        return adam_step_(p, m, v, T(decay, op), T(step_size, op), T(bias2_sqrt, op), eps);
      },
      arg("param"), arg("exp_avg"), arg("exp_avg_sq"), arg("decay"), arg("step_size"),
      arg("bias2_sqrt"), arg("eps"));
  m.def("flash_attention", &flash_attention, arg("query"), arg("key"), arg("value"), arg("scale"),
        arg("is_causal") = false);
  m.def("set_attention_allow_fused", [](bool allow) { attention_allow_fused() = allow; });
  m.def("attention_allow_fused", [] { return attention_allow_fused().load(); });
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, py::handle stride,
         py::handle padding, py::handle dilation, int64_t groups) {
        return conv2d(x, w, opt(b), pair(stride, "conv2d"), pair(padding, "conv2d"),
                      pair(dilation, "conv2d"), groups);
      },
      arg("input"), arg("weight"), arg("bias") = py::none(), arg("stride") = 1, arg("padding") = 0,
      arg("dilation") = 1, arg("groups") = 1);
  m.def(
      "max_pool2d",
      [](const Tensor& x, py::handle k, py::object s, py::handle p) {
        Pair kp = pair(k, "max_pool2d");
        return max_pool2d(x, kp, s.is_none() ? kp : pair(s, "max_pool2d"), pair(p, "max_pool2d"));
      },
      arg("input"), arg("kernel_size"), arg("stride") = py::none(), arg("padding") = 0);
  m.def(
      "avg_pool2d",
      [](const Tensor& x, py::handle k, py::object s, py::handle p, bool cip) {
        Pair kp = pair(k, "avg_pool2d");
        return avg_pool2d(x, kp, s.is_none() ? kp : pair(s, "avg_pool2d"), pair(p, "avg_pool2d"),
                          cip);
      },
      arg("input"), arg("kernel_size"), arg("stride") = py::none(), arg("padding") = 0,
      arg("count_include_pad") = true);
  m.def(
      "batch_norm",
      [](const Tensor& x, std::optional<Tensor> rm, std::optional<Tensor> rv,
         std::optional<Tensor> w, std::optional<Tensor> b, bool training, double momentum,
         double eps) {
        return batch_norm(x, opt(rm), opt(rv), opt(w), opt(b), training, momentum, eps);
      },
      arg("input"), arg("running_mean"), arg("running_var"), arg("weight") = py::none(),
      arg("bias") = py::none(), arg("training") = false, arg("momentum") = 0.1, arg("eps") = 1e-5);
}

}  // namespace ofl::internal::py_bind
