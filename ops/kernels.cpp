#include "ops/kernels.h"

namespace ofl {

OFL_DEFINE_KERNEL(unary_kernel, UnaryKernel)
OFL_DEFINE_KERNEL(binary_kernel, BinaryKernel)
OFL_DEFINE_KERNEL(where_kernel, WhereKernel)
OFL_DEFINE_KERNEL(reduce_kernel, ReduceKernel)
OFL_DEFINE_KERNEL(arg_reduce_kernel, ArgReduceKernel)
OFL_DEFINE_KERNEL(matmul_kernel, MatmulKernel)
OFL_DEFINE_KERNEL(softmax_kernel, SoftmaxKernel)
OFL_DEFINE_KERNEL(softmax_backward_kernel, SoftmaxBackwardKernel)
OFL_DEFINE_KERNEL(norm_kernel, NormKernel)
OFL_DEFINE_KERNEL(norm_backward_kernel, NormBackwardKernel)
OFL_DEFINE_KERNEL(random_kernel, RandomKernel)
OFL_DEFINE_KERNEL(index_check_kernel, IndexCheckKernel)
OFL_DEFINE_KERNEL(nll_loss_kernel, NllLossKernel)
OFL_DEFINE_KERNEL(nll_loss_backward_kernel, NllLossBackwardKernel)
OFL_DEFINE_KERNEL(index_select_kernel, IndexSelectKernel)
OFL_DEFINE_KERNEL(index_add_kernel, IndexAddKernel)
OFL_DEFINE_KERNEL(gather_kernel, GatherKernel)
OFL_DEFINE_KERNEL(scatter_add_kernel, ScatterAddKernel)
OFL_DEFINE_KERNEL(conv2d_kernel, Conv2dKernel)
OFL_DEFINE_KERNEL(conv2d_input_grad_kernel, Conv2dInputGradKernel)
OFL_DEFINE_KERNEL(conv2d_weight_grad_kernel, Conv2dWeightGradKernel)
OFL_DEFINE_KERNEL(max_pool2d_kernel, MaxPool2dKernel)
OFL_DEFINE_KERNEL(max_pool2d_backward_kernel, MaxPool2dBackwardKernel)
OFL_DEFINE_KERNEL(avg_pool2d_kernel, AvgPool2dKernel)
OFL_DEFINE_KERNEL(avg_pool2d_backward_kernel, AvgPool2dBackwardKernel)

}  // namespace ofl
