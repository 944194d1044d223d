// safetensors files, the weights format flow.save and graph.save write: an 8-byte little-endian
// header length, a JSON header giving each tensor's dtype, shape and byte range, then the bytes.
// Reading checks every entry against the file and raises naming the file and the entry (a
// truncated or corrupt file never yields a tensor); nothing in the file is executed.
#pragma once
#include <map>
#include <set>
#include <string>

#include "core/tensor.h"

namespace ofl::internal::safetensors {

// Every tensor in the file at `path` by name, on the CPU ("__metadata__" is not a tensor); with
// `only`, just those (every entry is still checked; the others' bytes are not read).
std::map<std::string, Tensor> read(const std::string& path,
                                   const std::set<std::string>* only = nullptr);

}  // namespace ofl::internal::safetensors
