// x[key] and x[key] = value for the Tensor class (python/src/tensor.cpp binds them).
#include "indexing.h"

#include "core/autograd/grad_mode.h"
#include "core/dispatcher.h"
#include "global/global_op.h"
#include "ops/ops.h"

namespace ofl::internal::py_bind {

namespace {

bool is_advanced(py::handle item) {
  return py::isinstance<Tensor>(item) || py::isinstance<py::list>(item) ||
         py::isinstance<py::array>(item);
}

// x indexed by a key's basic items (ints, slices, None, Ellipsis), with its one advanced index
// (an integer or bool tensor, list or array) left whole: `view` keeps the dimensions it covers,
// from `at` on (one for an integer index, the mask's for a bool one).
struct Indexed {
  Tensor view;
  Tensor adv;  // undefined: no advanced index
  int64_t at = 0;
  bool is_mask() const { return adv.defined() && adv.dtype() == DType::kBool; }
  int64_t covered() const { return is_mask() ? adv.dim() : 1; }
};

// An index (a list or array, or a host tensor) indexes a local tensor from that tensor's device,
// as PyTorch moves it: the ops take their operands on one device.
Tensor on_device_of(const Tensor& index, const Tensor& x) {
  if (x.is_global() || index.is_global() || index.is_traced() || x.device().is_meta() ||
      index.device() == x.device())
    return index;
  return to_device(index, x.device());
}

Indexed apply_basic(const Tensor& x, py::handle key) {
  py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>() : py::make_tuple(key);
  Indexed out;
  int64_t consumed = 0, ellipsis = 0;
  for (auto it : items) {
    if (it.is_none()) continue;
    if (it.is(py::ellipsis())) {
      ++ellipsis;
      continue;
    }
    if (!is_advanced(it)) {
      ++consumed;
      continue;
    }
    if (out.adv.defined())
      throw IndexError("[index] only one tensor/list index per indexing expression is supported");
    out.adv = on_device_of(as_tensor(it, "index"), x);
    // A 0-d mask (x[True]) covers a new dimension of size 1.
    consumed += out.is_mask() ? out.adv.dim() : 1;
  }
  if (ellipsis > 1) throw IndexError("[index] an index can only have a single ellipsis");
  if (consumed > x.dim())
    throw IndexError(str_cat("[index] too many indices for a tensor of shape ",
                             shape_str(meta_of(x).shape), ": ", consumed, " were given"));
  Tensor r = x;
  int64_t d = 0;
  for (auto it : items) {
    if (it.is_none()) {
      r = unsqueeze(r, d++);
    } else if (it.is(py::ellipsis())) {
      d += x.dim() - consumed;
    } else if (py::isinstance<py::slice>(it)) {
      py::slice s = it.cast<py::slice>();
      auto get = [](py::object o) -> std::optional<int64_t> {
        if (o.is_none()) return std::nullopt;
        return o.cast<int64_t>();
      };
      std::optional<int64_t> step = get(s.attr("step"));
      r = slice(r, d++, get(s.attr("start")), get(s.attr("stop")), step.value_or(1));
    } else if (py::isinstance<py::int_>(it) || (py::hasattr(it, "__index__") && !is_advanced(it))) {
      r = select(r, d, it.cast<int64_t>());
    } else if (is_advanced(it)) {
      if (out.is_mask() && out.adv.dim() == 0) {
        r = unsqueeze(r, d);
        out.adv = reshape(out.adv, {1});
      }
      out.at = d;
      d += out.covered();
    } else {
      throw IndexError(str_cat("[index] unsupported index of type ",
                               std::string(py::str(it.get_type().attr("__name__")))));
    }
  }
  out.view = r;
  return out;
}

// The mask of an Indexed, checked against the dimensions it covers and given the view's rank.
Tensor full_mask(const Indexed& ix) {
  const Shape shape = meta_of(ix.view).shape;
  const Shape mask = meta_of(ix.adv).shape;
  const Shape covered(shape.begin() + ix.at, shape.begin() + ix.at + mask.size());
  if (covered != mask)
    throw IndexError(str_cat("[index] the mask of shape ", shape_str(mask),
                             " does not match the indexed tensor's shape ", shape_str(shape),
                             " at dimensions ", ix.at, " to ", ix.at + mask.size() - 1));
  Shape full(shape.size(), 1);
  std::copy(mask.begin(), mask.end(), full.begin() + ix.at);
  return reshape(ix.adv, full);
}

// The view's shape with the mask's dimensions replaced by one of `count`.
Shape selected_shape(const Indexed& ix, int64_t count) {
  const Shape shape = meta_of(ix.view).shape;
  Shape out(shape.begin(), shape.begin() + ix.at);
  out.push_back(count);
  out.insert(out.end(), shape.begin() + ix.at + ix.adv.dim(), shape.end());
  return out;
}

// How many elements the mask selects (of the whole logical mask when it is global).
int64_t true_count(const Tensor& mask) {
  autograd::NoGradGuard no_grad;
  const Tensor count = sum(mask);
  return (count.is_global() ? full_value(count) : count).item<int64_t>();
}

bool is_number(py::handle v) {
  return py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) ||
         py::isinstance<py::bool_>(v);
}

// x[mask] = value: a number or one-element tensor fills; a tensor broadcast to the selected
// elements' shape is written in their row-major order.
void set_masked(const Indexed& ix, py::handle value) {
  Tensor target = ix.view;
  Tensor mask = full_mask(ix);
  Tensor v = as_tensor(value, "setitem");
  if (!py::isinstance<Tensor>(value) && !is_number(value))  // a list or array: on the host
    v = on_device_of(v, target);
  if (is_number(value) || numel_of(meta_of(v).shape) == 1) {
    masked_fill_(target, mask, reshape(v, {}));
    return;
  }
  Shape shape = selected_shape(ix, true_count(ix.adv));
  const Shape vshape = meta_of(v).shape;
  bool fits = vshape.size() <= shape.size();
  for (size_t i = 0; fits && i < vshape.size(); ++i) {
    const int64_t want = shape[shape.size() - vshape.size() + i];
    fits = vshape[i] == 1 || vshape[i] == want;
  }
  if (!fits)
    throw Error(str_cat("[setitem] a value of shape ", shape_str(vshape),
                        " cannot be broadcast to the indexing result of shape ", shape_str(shape)));
  Tensor source = contiguous(expand(to_dtype(v, target.dtype()), shape));
  masked_scatter_(target, expand(mask, meta_of(target).shape), source);
}

}  // namespace

Tensor index(const Tensor& x, py::handle key) {
  Indexed ix = apply_basic(x, key);
  Tensor r = ix.view;
  const int64_t d = ix.at;
  if (!ix.adv.defined()) return r;
  if (ix.is_mask()) {  // masked_select raises for meta and global tensors
    Tensor picked = masked_select(r, full_mask(ix));
    return reshape(picked, selected_shape(ix, true_count(ix.adv)));
  }
  // Shapes as ops see them: a global tensor's logical ones. A local index (a list, say) is the
  // same on every rank: broadcast on a global tensor's placement.
  Tensor idx = ix.adv;
  if (r.is_global() && !idx.is_global()) {
    // On the device of this rank's shard (a list's index is on the host).
    if (!idx.is_traced() && !r.device().is_meta()) idx = to_device(idx, r.device());
    idx = broadcast_on(idx, r);
  }
  const Shape rshape = meta_of(r).shape, ishape = meta_of(idx).shape;
  if (is_integral(idx.dtype()) && d < r.dim()) {  // negative indices count from the end
    Tensor size = wrap_scalar(static_cast<double>(rshape[d]), DType::kInt64);
    idx = where(lt(idx, wrap_scalar(0, DType::kInt64)), add(idx, size), idx);
  }
  Tensor sel = index_select(r, d, reshape(idx, {-1}));
  const Shape sshape = meta_of(sel).shape;
  Shape shape(sshape.begin(), sshape.begin() + d);
  shape.insert(shape.end(), ishape.begin(), ishape.end());
  shape.insert(shape.end(), sshape.begin() + d + 1, sshape.end());
  return reshape(sel, shape);
}

void set_index(Tensor& x, py::handle key, py::handle value) {
  Indexed ix = apply_basic(x, key);
  if (ix.is_mask()) {
    set_masked(ix, value);
  } else if (ix.adv.defined()) {
    throw IndexError("[setitem] assignment through an integer tensor index is not supported yet");
  } else if (is_number(value)) {
    fill_(ix.view, value.cast<double>());
  } else {
    copy_(ix.view, as_tensor(value, "setitem"));
  }
  // (The in-place op bumped the version, which views share with x.)
}

}  // namespace ofl::internal::py_bind
