// Convolution on CUDA through cuDNN: forward, and the input and weight gradients, as
// cross-correlation over NCHW with groups, padding, stride and dilation. cuDNN's heuristics pick
// each algorithm; its workspace comes from our caching allocator on the op's stream.
#include <unordered_map>

#include "ops/cuda/common.cuh"
#include "ops/cuda/cudnn.h"
#include "ops/kernels.h"

namespace ofl::internal::cuda {

void check_cudnn(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) fail(what, "cuDNN error: ", cudnnGetErrorString(status));
}

cudnnHandle_t cudnn_handle(Device device, const char* op) {
  struct Handles {
    std::unordered_map<int, cudnnHandle_t> by_device;
    ~Handles() {
      for (auto& [index, h] : by_device) cudnnDestroy(h);
    }
  };
  thread_local Handles handles;
  cudnnHandle_t& h = handles.by_device[device.index];
  if (!h) check_cudnn(cudnnCreate(&h), op);
  check_cudnn(cudnnSetStream(h, stream_of(device)), op);
  return h;
}

namespace {

cudnnDataType_t cudnn_dtype(DType t, const char* op) {
  switch (t) {
    case DType::kFloat32:
      return CUDNN_DATA_FLOAT;
    case DType::kFloat64:
      return CUDNN_DATA_DOUBLE;
    case DType::kFloat16:
      return CUDNN_DATA_HALF;
    case DType::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      fail<TypeError>(op, "cuDNN convolves floating tensors, got ", dtype_name(t));
  }
}

// The descriptors of one convolution: x (N, C, H, W), w (Co, C/groups, kh, kw), y (N, Co, Ho, Wo).
class ConvDescriptors {
 public:
  ConvDescriptors(const Shape& x, const Shape& w, const Shape& y, DType dtype, const Window2d& win,
                  int64_t groups, const char* op)
      : op_(op) {
    const cudnnDataType_t t = cudnn_dtype(dtype, op);
    check_cudnn(cudnnCreateTensorDescriptor(&x_), op);
    check_cudnn(cudnnCreateTensorDescriptor(&y_), op);
    check_cudnn(cudnnCreateFilterDescriptor(&w_), op);
    check_cudnn(cudnnCreateConvolutionDescriptor(&conv_), op);
    check_cudnn(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, t, dim(x[0]), dim(x[1]),
                                           dim(x[2]), dim(x[3])),
                op);
    check_cudnn(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, t, dim(y[0]), dim(y[1]),
                                           dim(y[2]), dim(y[3])),
                op);
    check_cudnn(cudnnSetFilter4dDescriptor(w_, t, CUDNN_TENSOR_NCHW, dim(w[0]), dim(w[1]),
                                           dim(w[2]), dim(w[3])),
                op);
    // Accumulate in float for 16-bit types (double for double), as the CPU kernel.
    const cudnnDataType_t compute = dtype == DType::kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    check_cudnn(
        cudnnSetConvolution2dDescriptor(conv_, dim(win.ph), dim(win.pw), dim(win.sh), dim(win.sw),
                                        dim(win.dh), dim(win.dw), CUDNN_CROSS_CORRELATION, compute),
        op);
    check_cudnn(cudnnSetConvolutionGroupCount(conv_, dim(groups)), op);
    // Tensor cores for 16-bit types; for float32 only when TF32 is allowed.
    const cudnnMathType_t math = dtype == DType::kFloat32
                                     ? (conv_allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH)
                                 : dtype == DType::kFloat64 ? CUDNN_DEFAULT_MATH
                                                            : CUDNN_TENSOR_OP_MATH;
    check_cudnn(cudnnSetConvolutionMathType(conv_, math), op);
  }
  ~ConvDescriptors() {
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(w_);
    cudnnDestroyTensorDescriptor(y_);
    cudnnDestroyTensorDescriptor(x_);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;

  cudnnTensorDescriptor_t x() const { return x_; }
  cudnnTensorDescriptor_t y() const { return y_; }
  cudnnFilterDescriptor_t w() const { return w_; }
  cudnnConvolutionDescriptor_t conv() const { return conv_; }

 private:
  int dim(int64_t v) const {
    if (v > INT32_MAX) fail(op_, "cuDNN takes sizes below 2^31, got ", v);
    return static_cast<int>(v);
  }

  const char* op_;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
};

// alpha = 1, beta = 0 in the type cuDNN scales by (double for double, float otherwise).
struct Scale {
  explicit Scale(DType t) : is_double(t == DType::kFloat64) {}
  const void* one() const { return is_double ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return is_double ? static_cast<const void*>(&d0) : &f0; }
  bool is_double;
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
};

// The first algorithm of cuDNN's heuristic ranking that it reports as runnable, and its workspace.
// The ranking is of (algorithm, math type) pairs, its workspace sizes for that math type: the
// descriptor takes the chosen one (as PyTorch does), except that FMA math (float32 without TF32)
// never gives way to tensor-op math.
template <class Perf, class Get>
Perf pick_algorithm(Get&& get, cudnnConvolutionDescriptor_t conv, const char* op) {
  cudnnMathType_t asked;
  check_cudnn(cudnnGetConvolutionMathType(conv, &asked), op);
  Perf perfs[16];
  int returned = 0;
  check_cudnn(get(16, &returned, perfs), op);
  for (int i = 0; i < returned; ++i) {
    if (perfs[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (asked == CUDNN_FMA_MATH && perfs[i].mathType != CUDNN_FMA_MATH) continue;
    check_cudnn(cudnnSetConvolutionMathType(conv, perfs[i].mathType), op);
    return perfs[i];
  }
  fail(op, "cuDNN has no algorithm for this convolution");
}

Tensor workspace(size_t bytes, Device device) {
  return scratch(std::max<int64_t>(int64_t(bytes), 1), DType::kUInt8, device);
}

void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Window2d& win,
            int64_t groups, const Tensor& y) {
  const char* op = "conv2d";
  if (y.numel() == 0) return;
  const Device device = x.device();
  const Launch launch(device, op);
  const cudnnHandle_t h = cudnn_handle(device, op);
  const ConvDescriptors d(x.shape(), w.shape(), y.shape(), x.dtype(), win, groups, op);
  const auto perf = pick_algorithm<cudnnConvolutionFwdAlgoPerf_t>(
      [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* out) {
        return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x(), d.w(), d.conv(), d.y(), n, got,
                                                      out);
      },
      d.conv(), op);
  const Tensor ws = workspace(perf.memory, device);
  const Scale s(x.dtype());
  check_cudnn(
      cudnnConvolutionForward(h, s.one(), d.x(), x.raw_data(), d.w(), w.raw_data(), d.conv(),
                              perf.algo, ws.raw_data(), perf.memory, s.zero(), d.y(), y.raw_data()),
      op);
  if (!bias.defined()) return;
  cudnnTensorDescriptor_t b = nullptr;
  check_cudnn(cudnnCreateTensorDescriptor(&b), op);
  const cudnnStatus_t set = cudnnSetTensor4dDescriptor(
      b, CUDNN_TENSOR_NCHW, cudnn_dtype(bias.dtype(), op), 1, int(y.shape()[1]), 1, 1);
  const cudnnStatus_t added =
      set != CUDNN_STATUS_SUCCESS
          ? set
          : cudnnAddTensor(h, s.one(), b, bias.raw_data(), s.one(), d.y(), y.raw_data());
  cudnnDestroyTensorDescriptor(b);
  check_cudnn(added, op);
}

void conv2d_input_grad(const Tensor& gy, const Tensor& w, const Window2d& win, int64_t groups,
                       const Tensor& gx) {
  const char* op = "conv2d_backward";
  if (gx.numel() == 0) return;
  const Device device = gy.device();
  const Launch launch(device, op);
  if (gy.numel() == 0) return fill_kernel().get(DeviceType::kCUDA)(gx, 0);
  const cudnnHandle_t h = cudnn_handle(device, op);
  const ConvDescriptors d(gx.shape(), w.shape(), gy.shape(), gy.dtype(), win, groups, op);
  const auto perf = pick_algorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
      [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* out) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w(), d.y(), d.conv(), d.x(), n, got,
                                                           out);
      },
      d.conv(), op);
  const Tensor ws = workspace(perf.memory, device);
  const Scale s(gy.dtype());
  check_cudnn(cudnnConvolutionBackwardData(h, s.one(), d.w(), w.raw_data(), d.y(), gy.raw_data(),
                                           d.conv(), perf.algo, ws.raw_data(), perf.memory,
                                           s.zero(), d.x(), gx.raw_data()),
              op);
}

void conv2d_weight_grad(const Tensor& gy, const Tensor& x, const Window2d& win, int64_t groups,
                        const Tensor& gw) {
  const char* op = "conv2d_backward";
  if (gw.numel() == 0) return;
  const Device device = gy.device();
  const Launch launch(device, op);
  if (gy.numel() == 0) return fill_kernel().get(DeviceType::kCUDA)(gw, 0);
  const cudnnHandle_t h = cudnn_handle(device, op);
  const ConvDescriptors d(x.shape(), gw.shape(), gy.shape(), gy.dtype(), win, groups, op);
  const auto perf = pick_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
      [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* out) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x(), d.y(), d.conv(), d.w(), n,
                                                             got, out);
      },
      d.conv(), op);
  const Tensor ws = workspace(perf.memory, device);
  const Scale s(gy.dtype());
  check_cudnn(cudnnConvolutionBackwardFilter(h, s.one(), d.x(), x.raw_data(), d.y(), gy.raw_data(),
                                             d.conv(), perf.algo, ws.raw_data(), perf.memory,
                                             s.zero(), d.w(), gw.raw_data()),
              op);
}

OFL_REGISTER_KERNEL(conv2d_kernel, DeviceType::kCUDA, conv2d);
OFL_REGISTER_KERNEL(conv2d_input_grad_kernel, DeviceType::kCUDA, conv2d_input_grad);
OFL_REGISTER_KERNEL(conv2d_weight_grad_kernel, DeviceType::kCUDA, conv2d_weight_grad);

}  // namespace
}  // namespace ofl::internal::cuda
