#include "core/comm/store.h"

#include <cstdlib>

namespace ofl::internal::comm {

Millis default_timeout() {
  static const Millis t = [] {
    const char* env = std::getenv("OFL_COMM_TIMEOUT_S");
    double seconds = env ? std::atof(env) : 300.0;
    return Millis(static_cast<int64_t>((seconds > 0 ? seconds : 300.0) * 1000));
  }();
  return t;
}

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> base)
    : prefix_(std::move(prefix)), base_(std::move(base)) {
  set_timeout(base_->timeout());
}

std::vector<std::string> PrefixStore::k(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(k(key));
  return out;
}

void PrefixStore::set(const std::string& key, const Bytes& value) {
  base_->set(k(key), value);
}
Bytes PrefixStore::get(const std::string& key) {
  return base_->get(k(key));
}
int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  return base_->add(k(key), delta);
}
Bytes PrefixStore::compare_set(const std::string& key, const Bytes& expected,
                               const Bytes& desired) {
  return base_->compare_set(k(key), expected, desired);
}
void PrefixStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  base_->wait(k(keys), timeout);
}
bool PrefixStore::remove(const std::string& key) {
  return base_->remove(k(key));
}
bool PrefixStore::check(const std::vector<std::string>& keys) {
  return base_->check(k(keys));
}

}  // namespace ofl::internal::comm
