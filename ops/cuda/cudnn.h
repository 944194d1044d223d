// cuDNN's handles and errors, for the kernels built on it (convolutions, attention).
#pragma once
#include <cudnn.h>

#include "core/device.h"

namespace ofl::internal::cuda {

// Raises naming `what` (the op) with cuDNN's message.
void check_cudnn(cudnnStatus_t status, const char* what);
// This thread's cuDNN handle for `device` (a handle is not for concurrent use), bound to the
// device's current stream.
cudnnHandle_t cudnn_handle(Device device, const char* op);

}  // namespace ofl::internal::cuda
