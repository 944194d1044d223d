// The eigendecomposition of a general real matrix (linalg.eig): LAPACK's geev on a host copy for
// every device (cuSOLVER's geev is recent), its real-packed vectors unpacked into complex64
// (float32) or complex128 (float64) outputs. The backward computes with (real, imaginary) pairs
// of real tensors, the registry's matmul and solve being real.
#include <algorithm>
#include <string>

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/complex.h"
#include "ops/creation.h"
#include "ops/elementwise_sbp.h"
#include "ops/index_ops.h"
#include "ops/join.h"
#include "ops/linalg.h"
#include "ops/linalg_lapack.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

OFL_DEFINE_HOST_KERNEL(geev_kernel, GeevKernel)

using namespace elementwise_sbp;

namespace {

Shape batch_of(const Shape& s) {
  return Shape(s.begin(), s.end() - 2);
}

std::vector<TensorMeta> infer_eig(const InferArgs& a) {
  const TensorMeta& A = a.in[0];
  if (A.shape.size() < 2 || A.shape[A.shape.size() - 2] != A.shape.back())
    fail("linalg.eig", "A must be batches of square matrices, got shape ", shape_str(A.shape));
  if (A.dtype != DType::kFloat32 && A.dtype != DType::kFloat64)
    fail<TypeError>("linalg.eig", "expects a float32 or float64 matrix, got ", dtype_name(A.dtype),
                    " (complex inputs are not supported yet)");
  const DType c = complex_dtype_of(A.dtype);
  Shape w = batch_of(A.shape);
  w.push_back(A.shape.back());
  return {{w, c, A.device}, {A.shape, c, A.device}};
}

// geev's eigenvalues and real-packed vectors (column-major) as (real, imag) pairs, row-major.
template <class T>
void unpack(int64_t b, int64_t n, const Tensor& wr, const Tensor& wi, const Tensor& vr,
            const Tensor& values, const Tensor& vectors) {
  const T *pr = wr.data<T>(), *pi = wi.data<T>(), *pv = vr.data<T>();
  T *pl = values.data<T>(), *pw = vectors.data<T>();
  for (int64_t m = 0; m < b; ++m) {
    const T *r = pr + m * n, *im = pi + m * n, *v = pv + m * n * n;
    T *l = pl + m * n * 2, *w = pw + m * n * n * 2;
    for (int64_t j = 0; j < n; ++j) {
      l[2 * j] = r[j];
      l[2 * j + 1] = im[j];
    }
    for (int64_t j = 0; j < n; ++j) {
      const bool pair = im[j] != 0 && j + 1 < n;
      for (int64_t i = 0; i < n; ++i) {
        const T re = v[j * n + i], imag = pair ? v[(j + 1) * n + i] : T(0);
        w[(i * n + j) * 2] = re;
        w[(i * n + j) * 2 + 1] = imag;
        if (pair) {  // the conjugate pair's vector
          w[(i * n + j + 1) * 2] = re;
          w[(i * n + j + 1) * 2 + 1] = -imag;
        }
      }
      if (pair) ++j;
    }
  }
}

void compute_eig(const ComputeArgs& c) {
  const Shape& s = c.in[0].shape();
  const int64_t n = s.back(), b = numel_of(batch_of(s));
  if (b == 0 || n == 0) return;
  const DType dt = c.in[0].dtype();
  // A host copy (data crosses devices contiguous), then column-major: its transpose.
  Tensor rows = Tensor::empty({b, n, n}, dt), work = Tensor::empty({b, n, n}, dt);
  copy_into(rows, reshape_view(contiguous_local(c.in[0]), {b, n, n}));
  copy_into(work, Tensor::view_of(rows.storage(), {b, n, n}, {n * n, 1, n}, 0, dt));
  Tensor wr = Tensor::empty({b, n}, dt), wi = Tensor::empty({b, n}, dt);
  Tensor vr = Tensor::empty({b, n, n}, dt), info = Tensor::empty({b}, DType::kInt32);
  geev_kernel().get(DeviceType::kCPU)(work, wr, wi, vr, info);
  for (int64_t i = 0; i < b; ++i) {
    const int v = info.data<int>()[i];
    const std::string where = b > 1 ? "(Batch element " + std::to_string(i) + "): " : "";
    if (v > 0)
      fail("linalg.eig", where,
           "The algorithm failed to converge because the input matrix is ill-conditioned or has "
           "too many repeated eigenvalues (error code: ",
           v, ").");
    if (v < 0)
      fail("linalg.eig", where, "LAPACK geev rejected argument ", -v,
           " (does the matrix hold NaN or inf?)");
  }
  Tensor values = Tensor::empty({b, n, 2}, dt), vectors = Tensor::empty({b, n, n, 2}, dt);
  if (dt == DType::kFloat32)
    unpack<float>(b, n, wr, wi, vr, values, vectors);
  else
    unpack<double>(b, n, wr, wi, vr, values, vectors);
  copy_into(reshape_view(complex_as_real(c.out[0]), {b, n, 2}), values);
  copy_into(reshape_view(complex_as_real(c.out[1]), {b, n, n, 2}), vectors);
}

// Complex matrices as (real, imaginary) pairs of real tensors: the registry's matmul and solve
// are real, so the backward computes with pairs.
struct Pair {
  Tensor re, im;
};

Tensor mT(const Tensor& x) {
  return transpose(x, -2, -1);
}

Pair split(const Tensor& z) {
  return {real(z), imag(z)};
}

Pair adjoint(const Pair& a) {
  return {mT(a.re), neg(mT(a.im))};
}

Pair cmatmul(const Pair& a, const Pair& b) {
  return {sub(matmul(a.re, b.re), matmul(a.im, b.im)), add(matmul(a.re, b.im), matmul(a.im, b.re))};
}

Pair cdiv(const Pair& a, const Pair& b) {
  const Tensor d = add(mul(b.re, b.re), mul(b.im, b.im));
  return {div(add(mul(a.re, b.re), mul(a.im, b.im)), d),
          div(sub(mul(a.im, b.re), mul(a.re, b.im)), d)};
}

// X with A X = B for real A through the LU op: P^T A = L U, X = U^{-1} L^{-1} P^T B.
Tensor real_solve(const Tensor& A, const Tensor& B) {
  static const OpDef& lu = op_def("linalg_lu_factor_ex");
  const int64_t n = meta_of(A).shape.back();
  const std::vector<Tensor> f = dispatch(lu, {A}, {{"pivot", true}});
  const Tensor perm = lu_permutation(f[1], n);
  const Tensor cols = arange(0, double(n), 1, DType::kInt64, meta_of(A).device);
  const Tensor Pt = to_dtype(eq(unsqueeze(perm, -1), cols), meta_of(A).dtype);
  const Tensor Y = linalg_solve_triangular(f[0], matmul(Pt, B), false, true, true);
  return linalg_solve_triangular(f[0], Y, true);
}

// PyTorch's linalg_eig_backward for a real A, in pairs: gA = Re(V^{-H} (diag(gL) + (V^H gV -
// V^H V diag(Re(V^H gV))) / conj(E)) V^H), E_ij = L_j - L_i (1 on the diagonal). The complex
// solve with V^H is the real block system [[Re, -Im], [Im, Re]].
std::vector<Tensor> eig_backward(const BackwardArgs& b) {
  if (!b.needs[0]) return {Tensor()};
  const Pair L = split(b.out[0]), V = split(b.out[1]);
  const Pair gL = split(b.grads[0]), gV = split(b.grads[1]);
  const int64_t n = meta_of(b.out[1]).shape.back();
  const Pair Vh = adjoint(V);
  Pair VhgV = cmatmul(Vh, gV);
  // Re(diag(V^H gV))_j = sum_i Re(conj(V_ij) gV_ij)
  const Tensor d = unsqueeze(sum(add(mul(V.re, gV.re), mul(V.im, gV.im)), {-2}), -2);
  const Pair VhVd = cmatmul(Vh, {mul(V.re, d), mul(V.im, d)});
  VhgV = {sub(VhgV.re, VhVd.re), sub(VhgV.im, VhVd.im)};
  const Tensor diag =
      eq(eye(n, n, DType::kFloat32, meta_of(L.re).device), wrap_scalar(1, DType::kFloat64));
  const Tensor one = wrap_scalar(1, DType::kFloat64), zero = wrap_scalar(0, DType::kFloat64);
  // conj(E)_ij = conj(L_j) - conj(L_i), 1 on the diagonal
  const Pair E = {masked_fill(sub(unsqueeze(L.re, -2), unsqueeze(L.re, -1)), diag, one),
                  masked_fill(neg(sub(unsqueeze(L.im, -2), unsqueeze(L.im, -1))), diag, zero)};
  Pair ret = cdiv(VhgV, E);
  ret = {where(diag, unsqueeze(gL.re, -2), ret.re), where(diag, unsqueeze(gL.im, -2), ret.im)};
  const Pair R = cmatmul(ret, Vh);
  const Tensor block = cat({cat({Vh.re, neg(Vh.im)}, -1), cat({Vh.im, Vh.re}, -1)}, -2);
  const Tensor X = real_solve(block, cat({R.re, R.im}, -2));
  return {narrow(X, -2, 0, n)};
}

const SbpRule kEig{"eig", batch_sbp};

}  // namespace

OFL_REGISTER_OPS({
    {.name = "linalg_eig",
     .num_inputs = 1,
     .cost = lapack_cost,
     .sbp = &kEig,
     .infer = infer_eig,
     .compute = compute_eig,
     .backward = eig_backward,
     .saves = kSaveOutputs,
     .complex = true,
     .api = {{"linalg_eig(Tensor A) -> (Tensor eigenvalues, Tensor eigenvectors)", nullptr,
              kInternal}},
     .doc = "The eigenvalues and right eigenvectors of a general real matrix, complex (LAPACK "
            "geev)"},
});

}  // namespace ofl::internal
