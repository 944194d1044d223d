// NCCL's functions, loaded when the first NCCL communicator is made rather than with the library.
// Linked, libnccl.so.2 came with the library: the toolkit's NCCL, and a PyTorch imported after it
// was given that (older) NCCL, the loader matching libraries by name, and failed
// (`libtorch_cuda.so: undefined symbol: ncclCommResume`). Loaded late, by name, NCCL is whichever
// libnccl.so.2 the process already has (PyTorch's, when PyTorch came first), else the one the
// system finds; PyTorch imports in either order, unless a NCCL communicator was made before it.
#pragma once
#include <nccl.h>

namespace ofl::internal::comm::nccl_detail {

struct NcclApi {
#define OFL_NCCL_FUNCTIONS(X)                                                                      \
  X(AllGather)                                                                                     \
  X(AllReduce)                                                                                     \
  X(Broadcast)                                                                                     \
  X(CommAbort) X(CommDestroy) X(CommFinalize) X(CommGetAsyncError) X(CommInitRankConfig)           \
      X(GetErrorString) X(GetLastError) X(GetUniqueId) X(GroupEnd) X(GroupStart) X(Recv) X(Reduce) \
          X(ReduceScatter) X(Send)
#define OFL_NCCL_POINTER(name) decltype(&::nccl##name) name = nullptr;
  OFL_NCCL_FUNCTIONS(OFL_NCCL_POINTER)
#undef OFL_NCCL_POINTER
};

// The functions, loaded on the first call (once, thread-safe). Raises naming libnccl.so.2 and
// the loader's reason when it cannot be loaded or lacks one of them.
const NcclApi& nccl_lib();

}  // namespace ofl::internal::comm::nccl_detail
