#include "core/kernel_table.h"

#include <algorithm>
#include <mutex>

namespace ofl::internal {
namespace {

struct Tables {
  std::mutex mu;
  std::vector<const KernelTableBase*> all;
};

Tables& tables() {
  static Tables* t = new Tables;  // tables live as long as the process
  return *t;
}

}  // namespace

KernelTableBase::KernelTableBase(const char* op, bool host_only) : op_(op), host_only_(host_only) {
  std::lock_guard lock(tables().mu);
  tables().all.push_back(this);
}

KernelTableBase::~KernelTableBase() {
  std::lock_guard lock(tables().mu);
  auto& all = tables().all;
  all.erase(std::find(all.begin(), all.end(), this));
}

std::vector<const KernelTableBase*> kernel_tables() {
  std::lock_guard lock(tables().mu);
  return tables().all;
}

}  // namespace ofl::internal
