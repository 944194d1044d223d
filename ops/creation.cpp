// Creation ops and random fills.
#include "ops/creation.h"

#include <cmath>

#include "core/autograd/node.h"
#include "core/dispatcher.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/sort.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

void check_float(const char* op, DType dtype) {
  if (!is_floating(dtype))
    fail<TypeError>(op, "expects a floating-point dtype, got ", dtype_name(dtype));
}

// Creation ops take their output's dtype and device as attributes (the device as its name).
const AttrDef kShapeAttr{"shape", AttrType::kInts}, kDTypeAttr{"dtype", AttrType::kDType},
    kDeviceAttr{"device", AttrType::kString};

std::vector<TensorMeta> created(const InferArgs& a, Shape shape) {
  for (int64_t d : shape)
    if (d < 0) fail(a.op, "sizes must be non-negative, got ", shape_str(shape));
  return single_output(std::move(shape), a.attrs.get<DType>("dtype"),
                       Device::parse(a.attrs.get<std::string>("device")));
}

// Fills out (any layout) from a host buffer of doubles computed by f(i).
template <class F>
void fill_from_host(const Tensor& out, F f) {
  Tensor host = Tensor::empty(out.shape(), DType::kFloat64, Device{});
  double* p = host.data<double>();
  for (int64_t i = 0, n = host.numel(); i < n; ++i) p[i] = f(i);
  copy_kernel().get(out.device().type)(host, out);
}

int64_t arange_length(const InferArgs& a) {
  const double start = a.attrs.get<double>("start"), end = a.attrs.get<double>("end"),
               step = a.attrs.get<double>("step");
  if (step == 0) fail(a.op, "step must be nonzero");
  if ((end - start) / step < 0)
    fail(a.op, "upper bound ", end, " and lower bound ", start,
         " are inconsistent with the step sign ", step);
  return static_cast<int64_t>(std::ceil((end - start) / step));
}

// Philox draws (RandomKernel kinds: 0 uniform [a, b), 1 normal (a, b), 2 integers [a, b)),
// counters from `offset` on: the front end takes seed and offset from the generator.
// A shard of a global tensor draws its block of the logical tensor (with_block), so every
// layout draws the same logical values.
void draw(const Tensor& out, int kind, double a, double b, const Attrs& attrs) {
  const auto seed = static_cast<uint64_t>(attrs.get<int64_t>("seed"));
  const auto offset = static_cast<uint64_t>(attrs.get<int64_t>("offset"));
  const RandomBlock block = block_of(attrs);
  if (out.is_contiguous()) {
    random_kernel().get(out.device().type)(out, kind, a, b, seed, offset, block);
    return;
  }
  Tensor tmp = Tensor::empty(out.shape(), out.dtype(), out.device());
  random_kernel().get(out.device().type)(tmp, kind, a, b, seed, offset, block);
  copy_kernel().get(out.device().type)(tmp, out);
}

// The generator's seed and the offset of `numel` fresh counters (none taken on meta).
Attrs random_attrs(Attrs attrs, int64_t numel, Generator* gen, Device device) {
  Generator& g = gen ? *gen : default_generator();
  const uint64_t offset = device.is_meta() ? 0 : g.advance(static_cast<uint64_t>(numel));
  attrs.set("seed", static_cast<int64_t>(g.seed()));
  attrs.set("offset", static_cast<int64_t>(offset));
  return attrs;
}

const std::vector<AttrDef> kRandomAttrs{
    kShapeAttr, kDTypeAttr, kDeviceAttr, {"seed", AttrType::kInt}, {"offset", AttrType::kInt}};

OpDef random_def(const char* name, int kind, std::vector<AttrDef> extra = {}) {
  std::vector<AttrDef> attrs = kRandomAttrs;
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  return {.name = name,
          .num_inputs = 0,
          .differentiable = false,
          .cost = elementwise_cost,
          .attrs = std::move(attrs),
          .infer =
              [kind](const InferArgs& a) {
                if (kind != 2) check_float(a.op, a.attrs.get<DType>("dtype"));
                if (kind == 2 && a.attrs.get<int64_t>("high") <= a.attrs.get<int64_t>("low"))
                  fail(a.op, "high (", a.attrs.get<int64_t>("high"), ") must be greater than low (",
                       a.attrs.get<int64_t>("low"), ")");
                return created(a, a.attrs.get<Shape>("shape"));
              },
          .compute =
              [kind](const ComputeArgs& c) {
                if (kind == 2)
                  draw(c.out[0], 2, static_cast<double>(c.attrs.get<int64_t>("low")),
                       static_cast<double>(c.attrs.get<int64_t>("high")), c.attrs);
                else
                  draw(c.out[0], kind, 0.0, 1.0, c.attrs);
              }};
}

// uniform_ / normal_: any split or B (each shard draws its block by logical index).
Sigs random_fill_sbp(const SbpQuery& q) {
  return broadcast_splits(q);
}
const SbpRule kRandomFill{"random_fill", random_fill_sbp};

// uniform_ / normal_: draws into self (nn.init's fills).
OpDef random_fill_def(const char* name, int kind, const char* a_name, const char* b_name) {
  return {.name = name,
          .num_inputs = 1,
          .differentiable = false,
          .cost = elementwise_cost,
          .sbp = &kRandomFill,
          .attrs = {{a_name, AttrType::kFloat},
                    {b_name, AttrType::kFloat},
                    {"seed", AttrType::kInt},
                    {"offset", AttrType::kInt}},
          .infer = [kind, b_name](const InferArgs& a) -> std::vector<TensorMeta> {
            check_float(a.op, a.in[0].dtype);
            if (kind == 1 && a.attrs.get<double>(b_name) < 0)
              fail(a.op, "std must be non-negative, got ", a.attrs.get<double>(b_name));
            return single_output(a.in[0].shape, a.in[0].dtype, a.in[0].device);
          },
          .compute =
              [kind, a_name, b_name](const ComputeArgs& c) {
                draw(c.out[0], kind, c.attrs.get<double>(a_name), c.attrs.get<double>(b_name),
                     c.attrs);
              },
          .inplace = true,
          .shard_attrs = with_block};
}

}  // namespace

Attrs with_block(const Attrs& attrs, const ShardArgs& shard) {
  Attrs out = attrs;
  out.set("block_logical", shard.in_shapes[0]);
  out.set("block_start", shard.in_offsets[0]);
  return out;
}

RandomBlock block_of(const Attrs& attrs) {
  if (!attrs.has("block_start")) return {};
  return {attrs.get<Shape>("block_logical"), attrs.get<Shape>("block_start")};
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  static const OpDef& def = op_def("full");
  return dispatch1(
      def, {}, {{"shape", shape}, {"value", value}, {"dtype", dtype}, {"device", device.str()}});
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}
// Of a global tensor: the same placement and layout, each rank filling only its shard.
Tensor full_like(const Tensor& t, double value, std::optional<DType> dtype) {
  static const OpDef& def = op_def("full_like");
  return dispatch1(def, {t}, {{"value", value}, {"dtype", dtype.value_or(t.dtype())}});
}
Tensor to_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  if (device.is_meta()) {
    Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
    out.impl()->global = t.impl()->global;
    return out;
  }
  if (t.device().is_meta())
    fail("to", "cannot copy out of a meta tensor of shape ", shape_str(t.shape()),
         ": it has no data (create the tensor on ", device.str(),
         ", or use Module.to_empty(device=...) for modules)");
  for (const Device& d : {device, t.device()}) {
    if (d.type == DeviceType::kCPU) continue;
    DeviceRuntime* runtime = runtime_for(d.type);
    if (!runtime)
      fail("to", d.str(), " is not available: this build has no ", device_type_name(d.type),
           " backend (configure with ONEFLOWLIKE_BUILD_CUDA=ON on a machine with CUDA)");
    const int count = runtime->device_count();
    if (d.index >= count)
      fail("to", d.str(), " is not available: ", count, " ", device_type_name(d.type), " device",
           count == 1 ? "" : "s", " visible");
  }
  if (t.is_global())
    fail("to", "moving a global tensor between devices: give its placement the device instead");
  Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
  copy_into(out, t);
  if (autograd::needs_grad(t))  // the gradient goes back to t's device
    autograd::record(
        "to", {t}, {out},
        [from = t.device()](const autograd::Grads& g, const autograd::Needs&) -> autograd::Grads {
          return {to_device(g[0], from)};
        });
  return out;
}

Tensor zeros_like(const Tensor& t) {
  return full_like(t, 0.0);
}
Tensor ones_like(const Tensor& t) {
  return full_like(t, 1.0);
}
Tensor scalar_tensor(double value, DType dtype, Device device) {
  return full({}, value, dtype, device);
}

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  static const OpDef& def = op_def("arange");
  return dispatch1(
      def, {},
      {{"start", start}, {"end", end}, {"step", step}, {"dtype", dtype}, {"device", device.str()}});
}

Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  static const OpDef& def = op_def("linspace");
  return dispatch1(def, {},
                   {{"start", start},
                    {"end", end},
                    {"steps", steps},
                    {"dtype", dtype},
                    {"device", device.str()}});
}

Tensor eye(int64_t n, int64_t m, DType dtype, Device device) {
  static const OpDef& def = op_def("eye");
  return dispatch1(def, {}, {{"n", n}, {"m", m}, {"dtype", dtype}, {"device", device.str()}});
}

Tensor rand(const Shape& shape, DType dtype, Generator* gen, Device device) {
  static const OpDef& def = op_def("rand");
  Attrs attrs{{"shape", shape}, {"dtype", dtype}, {"device", device.str()}};
  return dispatch1(def, {}, random_attrs(std::move(attrs), numel_of(shape), gen, device));
}

Tensor randn(const Shape& shape, DType dtype, Generator* gen, Device device) {
  static const OpDef& def = op_def("randn");
  Attrs attrs{{"shape", shape}, {"dtype", dtype}, {"device", device.str()}};
  return dispatch1(def, {}, random_attrs(std::move(attrs), numel_of(shape), gen, device));
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Generator* gen,
               Device device) {
  static const OpDef& def = op_def("randint");
  Attrs attrs{{"shape", shape}, {"dtype", dtype}, {"device", device.str()}};
  attrs = random_attrs(std::move(attrs), numel_of(shape), gen, device);
  attrs.set("low", low);
  attrs.set("high", high);
  return dispatch1(def, {}, attrs);
}

void uniform_(const Tensor& t, double low, double high, Generator* gen) {
  static const OpDef& def = op_def("uniform_");
  Attrs attrs{{"low", low}, {"high", high}};
  dispatch(def, {t}, random_attrs(std::move(attrs), numel_of(meta_of(t).shape), gen, t.device()));
}

void normal_(const Tensor& t, double mean, double std, Generator* gen) {
  static const OpDef& def = op_def("normal_");
  Attrs attrs{{"mean", mean}, {"std", std}};
  // Counters for the whole logical tensor: every rank's generator advances alike.
  dispatch(def, {t}, random_attrs(std::move(attrs), numel_of(meta_of(t).shape), gen, t.device()));
}

namespace {

// A creation signature's last parameters (ApiBind kCreation): where the tensor is made, laid out
// and whether it requires grad. The front end reads them; a row's call reads only the device.
#define OFL_WHERE                                                   \
  "Device? device=None, Placement? placement=None, SBP? sbp=None, " \
  "bool requires_grad=False) -> Tensor"
constexpr uint8_t kCreate = kFunction | kCreation;
constexpr uint8_t kNewOf = kMethod | kCreation;  // input.new_zeros(...): input's dtype and device

// The signatures' arguments by position: dtype? (float32 unless given) and the device after it.
DType dtype_or(const CallArgs& a, size_t i, DType fallback = DType::kFloat32) {
  return a.optional_dtype(i).value_or(fallback);
}

// arange's dtype, as PyTorch's: int64 when start, end and step are all integers.
Tensor arange_of(const CallArgs& a, double start, double end, double step, bool integral,
                 size_t dtype) {
  const DType fallback = integral ? DType::kInt64 : DType::kFloat32;
  return arange(start, end, step, dtype_or(a, dtype, fallback), a.device(dtype + 1));
}

// The *_like signatures: "(Tensor input, ..., *, dtype? dtype=None, " OFL_LIKE. A global input
// gives its placement and layout (the front end lays a whole tensor out so).
#define OFL_LIKE "Device? device=None, bool requires_grad=False) -> Tensor"

// The device argument i of a *_like signature: input's device when none is given.
Device device_or(const CallArgs& a, size_t i, const Tensor& input) {
  return a.is_none(i) ? input.device() : a.device(i);
}

// zeros_like and its kin: the full_like op, whose shards each fill their own block of a global
// input (and a partial input gives B); another device than input's, the whole tensor there.
Tensor fill_like(const CallArgs& a, double value, size_t dtype) {
  const Tensor& input = a.tensor(0);
  if (a.is_none(dtype + 1)) return full_like(input, value, a.optional_dtype(dtype));
  return full(meta_of(input).shape, value, dtype_or(a, dtype, input.dtype()), a.device(dtype + 1));
}

// full's dtype, as PyTorch's: from the fill value's kind (bool, int64, float32) unless given.
DType fill_dtype(const CallArgs& a, size_t value) {
  if (std::holds_alternative<bool>(a[value])) return DType::kBool;
  return a.integral(value) ? DType::kInt64 : DType::kFloat32;
}

// full_like(x): the output ignores the input's values, so splits map and a partial x gives a B
// output.
Sigs fill_like_sbp(const SbpQuery& q) {
  Sigs sigs = broadcast_splits(q);
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back({{p}, {kB}});
  return sigs;
}
const SbpRule kFillLike{"fill_like", fill_like_sbp};

}  // namespace

OFL_REGISTER_OPS({
    with_api(
        {{"full(int[] size, Number fill_value, *, dtype? dtype=None, " OFL_WHERE,
          [](const CallArgs& a) {
            return full(a.ints(0), a.scalar(1), dtype_or(a, 2, fill_dtype(a, 1)), a.device(3));
          },
          kCreate},
         {"new_full(Tensor input, int[] size, Number fill_value, *, dtype? dtype=None, " OFL_WHERE,
          [](const CallArgs& a) {
            return full(a.ints(1), a.scalar(2), dtype_or(a, 3, a.tensor(0).dtype()), a.device(4));
          },
          kNewOf}},
        {.name = "full",
         .num_inputs = 0,
         .differentiable = false,
         .cost = elementwise_cost,
         .attrs = {kShapeAttr, {"value", AttrType::kFloat}, kDTypeAttr, kDeviceAttr},
         .infer = [](const InferArgs& a) { return created(a, a.attrs.get<Shape>("shape")); },
         .compute =
             [](const ComputeArgs& c) {
               fill_kernel().get(c.out[0].device().type)(c.out[0], c.attrs.get<double>("value"));
             },
         .complex = true}),  // complex64: value + 0i
    with_api({{"zeros(int[] size, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) { return zeros(a.ints(0), dtype_or(a, 1), a.device(2)); },
               kCreate},
              {"new_zeros(Tensor input, int[] size, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 return zeros(a.ints(1), dtype_or(a, 2, a.tensor(0).dtype()), a.device(3));
               },
               kNewOf}},
             {.name = "zeros", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost}),
    with_api({{"ones(int[] size, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) { return ones(a.ints(0), dtype_or(a, 1), a.device(2)); },
               kCreate},
              {"new_ones(Tensor input, int[] size, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 return ones(a.ints(1), dtype_or(a, 2, a.tensor(0).dtype()), a.device(3));
               },
               kNewOf}},
             {.name = "ones", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost}),
    // Uninitialised memory: no kernel runs.
    with_api({{"empty(int[] size, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 return Tensor::empty(a.ints(0), dtype_or(a, 1), a.device(2));
               },
               kCreate},
              {"new_empty(Tensor input, int[] size, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 return Tensor::empty(a.ints(1), dtype_or(a, 2, a.tensor(0).dtype()), a.device(3));
               },
               kNewOf}},
             {.name = "empty", .num_inputs = 0, .differentiable = false}),
    with_api({{"arange(Number end, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) { return arange_of(a, 0, a.scalar(0), 1, a.integral(0), 1); },
               kCreate},
              {"arange(Number start, Number end, Number step=1, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 const bool integral = a.integral(0) && a.integral(1) && a.integral(2);
                 return arange_of(a, a.scalar(0), a.scalar(1), a.scalar(2), integral, 3);
               },
               kCreate}},
             {.name = "arange",
              .num_inputs = 0,
              .differentiable = false,
              .cost = elementwise_cost,
              .attrs = {{"start", AttrType::kFloat},
                        {"end", AttrType::kFloat},
                        {"step", AttrType::kFloat},
                        kDTypeAttr,
                        kDeviceAttr},
              .infer = [](const InferArgs& a) { return created(a, {arange_length(a)}); },
              .compute =
                  [](const ComputeArgs& c) {
                    const double start = c.attrs.get<double>("start"),
                                 step = c.attrs.get<double>("step");
                    fill_from_host(
                        c.out[0], [&](int64_t i) { return start + static_cast<double>(i) * step; });
                  }}),
    with_api({{"linspace(Number start, Number end, int steps, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 return linspace(a.scalar(0), a.scalar(1), a.integer(2), dtype_or(a, 3),
                                 a.device(4));
               },
               kCreate}},
             {.name = "linspace",
              .num_inputs = 0,
              .differentiable = false,
              .cost = elementwise_cost,
              .attrs = {{"start", AttrType::kFloat},
                        {"end", AttrType::kFloat},
                        {"steps", AttrType::kInt},
                        kDTypeAttr,
                        kDeviceAttr},
              .infer =
                  [](const InferArgs& a) {
                    const int64_t steps = a.attrs.get<int64_t>("steps");
                    if (steps < 0) fail(a.op, "number of steps must be non-negative, got ", steps);
                    return created(a, {steps});
                  },
              .compute =
                  [](const ComputeArgs& c) {
                    const double start = c.attrs.get<double>("start"),
                                 end = c.attrs.get<double>("end");
                    const int64_t steps = c.attrs.get<int64_t>("steps");
                    const double delta =
                        steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
                    fill_from_host(
                        c.out[0], [&](int64_t i) {  // symmetric from both ends, like PyTorch
                          if (steps == 1) return start;
                          return i < steps / 2 ? start + delta * i : end - delta * (steps - 1 - i);
                        });
                  }}),
    with_api({{"eye(int n, int? m=None, *, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 const int64_t n = a.integer(0);
                 return eye(n, a.optional_integer(1).value_or(n), dtype_or(a, 2), a.device(3));
               },
               kCreate}},
             {.name = "eye",
              .num_inputs = 0,
              .differentiable = false,
              .cost = elementwise_cost,
              .attrs = {{"n", AttrType::kInt}, {"m", AttrType::kInt}, kDTypeAttr, kDeviceAttr},
              .infer =
                  [](const InferArgs& a) {
                    const int64_t n = a.attrs.get<int64_t>("n"), m = a.attrs.get<int64_t>("m");
                    if (n < 0 || m < 0)
                      fail(a.op, "sizes must be non-negative, got ", n, " and ", m);
                    return created(a, {n, m});
                  },
              .compute =
                  [](const ComputeArgs& c) {
                    const int64_t m = c.out[0].shape()[1];
                    fill_from_host(c.out[0], [m](int64_t i) { return i / m == i % m ? 1.0 : 0.0; });
                  }}),
    with_api({{"rand(int[] size, *, Generator? generator=None, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 return rand(a.ints(0), dtype_or(a, 2), a.generator(1), a.device(3));
               },
               kCreate},
              {"rand_like(Tensor input, *, Generator? generator=None, dtype? dtype=None, " OFL_LIKE,
               [](const CallArgs& a) {
                 const Tensor& in = a.tensor(0);
                 return rand(meta_of(in).shape, dtype_or(a, 2, in.dtype()), a.generator(1),
                             device_or(a, 3, in));
               },
               kCreate}},
             random_def("rand", 0)),
    with_api(
        {{"randn(int[] size, *, Generator? generator=None, dtype? dtype=None, " OFL_WHERE,
          [](const CallArgs& a) {
            return randn(a.ints(0), dtype_or(a, 2), a.generator(1), a.device(3));
          },
          kCreate},
         {"randn_like(Tensor input, *, Generator? generator=None, dtype? dtype=None, " OFL_LIKE,
          [](const CallArgs& a) {
            const Tensor& in = a.tensor(0);
            return randn(meta_of(in).shape, dtype_or(a, 2, in.dtype()), a.generator(1),
                         device_or(a, 3, in));
          },
          kCreate}},
        random_def("randn", 1)),
    // randint(high, size) or randint(low, high, size), as PyTorch's.
    with_api({{"randint(int high, int[] size, *, Generator? generator=None, dtype? "
               "dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 return randint(0, a.integer(0), a.ints(1), dtype_or(a, 3, DType::kInt64),
                                a.generator(2), a.device(4));
               },
               kCreate},
              {"randint(int low, int high, int[] size, *, Generator? generator=None, dtype? "
               "dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 return randint(a.integer(0), a.integer(1), a.ints(2),
                                dtype_or(a, 4, DType::kInt64), a.generator(3), a.device(5));
               },
               kCreate},
              {"randint_like(Tensor input, int high, *, Generator? generator=None, dtype? "
               "dtype=None, " OFL_LIKE,
               [](const CallArgs& a) {
                 const Tensor& in = a.tensor(0);
                 return randint(0, a.integer(1), meta_of(in).shape, dtype_or(a, 3, in.dtype()),
                                a.generator(2), device_or(a, 4, in));
               },
               kCreate},
              {"randint_like(Tensor input, int low, int high, *, Generator? generator=None, "
               "dtype? dtype=None, " OFL_LIKE,
               [](const CallArgs& a) {
                 const Tensor& in = a.tensor(0);
                 return randint(a.integer(1), a.integer(2), meta_of(in).shape,
                                dtype_or(a, 4, in.dtype()), a.generator(3), device_or(a, 5, in));
               },
               kCreate}},
             random_def("randint", 2, {{"low", AttrType::kInt}, {"high", AttrType::kInt}})),
    // A random permutation of 0 .. n - 1: the order that sorts n uniform draws, so manual_seed
    // makes it reproducible.
    with_api({{"randperm(int n, *, Generator? generator=None, dtype? dtype=None, " OFL_WHERE,
               [](const CallArgs& a) {
                 const int64_t n = a.integer(0);
                 if (n < 0) fail("randperm", "n must be non-negative, got ", n);
                 Tensor draws = rand({n}, DType::kFloat64, a.generator(1), a.device(3));
                 return to_dtype(argsort(draws), dtype_or(a, 2, DType::kInt64));
               },
               kCreate}},
             {.name = "randperm", .num_inputs = 0, .differentiable = false}),
    with_api({{"uniform_(Tensor input, float a=0, float b=1, Generator? generator=None) -> Tensor",
               [](const CallArgs& a) {
                 uniform_(a.tensor(0), a.number(1), a.number(2), a.generator(3));
                 return a.tensor(0);
               },
               kMethod}},
             random_fill_def("uniform_", 0, "low", "high")),
    with_api({{"normal_(Tensor input, float mean=0, float std=1, Generator? generator=None) -> "
               "Tensor",
               [](const CallArgs& a) {
                 normal_(a.tensor(0), a.number(1), a.number(2), a.generator(3));
                 return a.tensor(0);
               },
               kMethod}},
             random_fill_def("normal_", 1, "mean", "std")),
    {.name = "full_like",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &kFillLike,
     .attrs = {{"value", AttrType::kFloat}, {"dtype", AttrType::kDType}},
     .infer = [](const InferArgs& a) -> std::vector<TensorMeta> {
       return single_output(a.in[0].shape, a.attrs.get<DType>("dtype"), a.in[0].device);
     },
     .compute =
         [](const ComputeArgs& c) {
           fill_kernel().get(c.out[0].device().type)(c.out[0], c.attrs.get<double>("value"));
         },
     .complex = true,
     .api = {{"zeros_like(Tensor input, *, dtype? dtype=None, " OFL_LIKE,
              [](const CallArgs& a) { return fill_like(a, 0.0, 1); }, kCreate},
             {"ones_like(Tensor input, *, dtype? dtype=None, " OFL_LIKE,
              [](const CallArgs& a) { return fill_like(a, 1.0, 1); }, kCreate},
             {"full_like(Tensor input, Number fill_value, *, dtype? dtype=None, " OFL_LIKE,
              [](const CallArgs& a) { return fill_like(a, a.scalar(1), 2); }, kCreate},
             {"empty_like(Tensor input, *, dtype? dtype=None, " OFL_LIKE,
              [](const CallArgs& a) {
                const Tensor& input = a.tensor(0);
                return Tensor::empty(meta_of(input).shape, dtype_or(a, 1, input.dtype()),
                                     device_or(a, 2, input));
              },
              kCreate}}},
});

#undef OFL_WHERE
#undef OFL_LIKE

}  // namespace ofl::internal
