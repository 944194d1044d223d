// NumPy's stacking functions as PyTorch has them, composites of cat (ops/index_ops.cpp):
// atleast_1d/2d/3d, hstack, vstack (row_stack), dstack, column_stack.
#include "core/dispatcher.h"
#include "ops/index_ops.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

namespace {

// x with at least `n` dimensions, as NumPy adds them: 0-d -> (1, ...), 1-d (k) -> (1, k) and
// for 3 dimensions (1, k, 1), 2-d (m, k) -> (m, k, 1).
Tensor at_least(const Tensor& x, int64_t n) {
  const Shape s = meta_of(x).shape;
  if (int64_t(s.size()) >= n) return x;
  if (s.empty()) return reshape(x, Shape(size_t(n), 1));
  if (s.size() == 1) return reshape(x, n == 2 ? Shape{1, s[0]} : Shape{1, s[0], 1});
  return reshape(x, {s[0], s[1], 1});
}

std::vector<Tensor> all_at_least(const std::vector<Tensor>& xs, int64_t n, const char* op) {
  if (xs.empty()) fail(op, "expects a non-empty list of tensors");
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(at_least(x, n));
  return out;
}

Tensor hstack(const CallArgs& a) {
  const std::vector<Tensor> xs = all_at_least(a.tensors(0), 1, "hstack");
  return cat(xs, xs[0].dim() == 1 ? 0 : 1);
}

Tensor column_stack(const CallArgs& a) {
  std::vector<Tensor> xs;
  for (const Tensor& x : a.tensors(0))
    xs.push_back(x.dim() <= 1 ? reshape(x, {-1, 1}) : x);  // vectors as columns
  if (xs.empty()) fail("column_stack", "expects a non-empty list of tensors");
  return cat(xs, 1);
}

Api at_least_api(const char* text, int64_t n) {
  return {text,
          [n](const CallArgs& a) -> CallResult { return at_least(a.tensor(0), n); },
          kFunction,
          {}};
}

// atleast_Nd([x, y, ...]): each of a list.
Api at_least_list_api(const char* text, int64_t n) {
  return {text,
          [n](const CallArgs& a) -> CallResult {
            std::vector<Tensor> out;
            for (const Tensor& x : a.tensors(0)) out.push_back(at_least(x, n));
            return out;
          },
          kFunction,
          {}};
}

}  // namespace

OFL_REGISTER_OPS({
    {.name = "atleast_1d",
     .api = {at_least_api("atleast_1d(Tensor input) -> Tensor", 1),
             at_least_api("atleast_2d(Tensor input) -> Tensor", 2),
             at_least_api("atleast_3d(Tensor input) -> Tensor", 3),
             at_least_list_api("atleast_1d(Tensor[] tensors) -> Tensor[]", 1),
             at_least_list_api("atleast_2d(Tensor[] tensors) -> Tensor[]", 2),
             at_least_list_api("atleast_3d(Tensor[] tensors) -> Tensor[]", 3)},
     .doc = "The tensor with at least 1, 2 or 3 dimensions, as NumPy adds them"},
    {.name = "hstack",
     .num_inputs = -1,
     .api = {{"hstack(Tensor[] tensors) -> Tensor", hstack, kFunction},
             {"vstack(Tensor[] tensors) -> Tensor",
              [](const CallArgs& a) { return cat(all_at_least(a.tensors(0), 2, "vstack"), 0); },
              kFunction},
             {"row_stack(Tensor[] tensors) -> Tensor",
              [](const CallArgs& a) { return cat(all_at_least(a.tensors(0), 2, "row_stack"), 0); },
              kFunction},
             {"dstack(Tensor[] tensors) -> Tensor",
              [](const CallArgs& a) { return cat(all_at_least(a.tensors(0), 3, "dstack"), 2); },
              kFunction},
             {"column_stack(Tensor[] tensors) -> Tensor", column_stack, kFunction}},
     .doc = "Tensors joined along columns (hstack), rows (vstack), depth (dstack) or as columns"},
});

}  // namespace ofl::internal
