// Communication for tensors on any device, behind one Communicator: each call goes to the
// backend for its tensors' device. CPU tensors take the host backend (Gloo); CUDA tensors take
// NCCL, or the host backend through host copies where NCCL cannot serve (a build without NCCL,
// several ranks on one GPU, or OFL_COMM_BACKEND=gloo).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/comm/communicator.h"

namespace ofl::internal::comm {

// How a group moves device tensors.
enum class DeviceTransport { kNccl, kHostStaged };
const char* transport_name(DeviceTransport t);

// NCCL only where it can serve every member: requested is "nccl", "gloo" or "auto" (NCCL when
// it can); `devices` names each member's GPU ("host/bus id"), and NCCL needs them distinct.
// Raises when "nccl" is requested and cannot be had, naming the ranks that share a GPU.
DeviceTransport choose_transport(const std::string& requested, bool nccl_built,
                                 const std::vector<std::string>& devices,
                                 const std::vector<int>& ranks);

// Wraps `host` (over the same ranks): device tensors travel as host copies through it.
std::shared_ptr<Communicator> make_host_staged_communicator(std::shared_ptr<Communicator> host);

// The communicator a distributed world uses: CPU calls go to `host`; the first call with device
// tensors chooses the group's transport (collective over its members, who all make that call),
// exchanging each member's GPU over `host`. `store` bootstraps NCCL; `requested` as above.
std::shared_ptr<Communicator> make_device_communicator(std::shared_ptr<Communicator> host,
                                                       std::shared_ptr<Store> store,
                                                       std::string requested);

}  // namespace ofl::internal::comm
