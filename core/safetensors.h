// safetensors files, the weights format flow.save and graph.save write: an 8-byte little-endian
// header length, a JSON header giving each tensor's dtype, shape and byte range, then the bytes.
// Reading checks every entry against the file and raises naming the file and the entry (a
// truncated or corrupt file, or one with bytes no entry claims, never yields a tensor); nothing
// in the file is executed. flow.load reads files and file objects through this reader.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ofl::internal::safetensors {

// What a file holds: its __metadata__ (strings to strings) and its tensors in file order.
struct Contents {
  std::map<std::string, std::string> metadata;
  std::vector<std::pair<std::string, Tensor>> tensors;
};

// The file at `path`, on the CPU; with `only`, just those tensors (every entry is still checked;
// the others' bytes are not read). A file that cannot be opened raises NotFoundError.
Contents read_file(const std::string& path, const std::set<std::string>* only = nullptr);
// The same from bytes in memory; errors name them `shown`.
Contents read_bytes(std::string_view bytes, const std::string& shown = "<bytes>",
                    const std::set<std::string>* only = nullptr);
// The header's name of a dtype ("F32" for float32).
std::string code_of(DType dtype);
// read_file's tensors by name.
std::map<std::string, Tensor> read(const std::string& path,
                                   const std::set<std::string>* only = nullptr);

}  // namespace ofl::internal::safetensors
