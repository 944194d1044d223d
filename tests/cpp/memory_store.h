// An in-process Store (a map behind a mutex): threads standing in for ranks meet through it,
// which keeps multi-rank tests fast and free of ports.
#pragma once
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/comm/store.h"
#include "core/error.h"

namespace ofl::internal::comm {

class MemoryStore : public Store {
 public:
  void set(const std::string& key, const Bytes& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    map_[key] = value;
    cv_.notify_all();
  }
  Bytes get(const std::string& key) override {
    wait({key}, timeout());
    std::lock_guard<std::mutex> lock(mu_);
    return map_.at(key);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mu_);
    Bytes& v = map_[key];
    int64_t now = (v.empty() ? 0 : std::stoll(to_string(v))) + delta;
    v = to_bytes(std::to_string(now));
    cv_.notify_all();
    return now;
  }
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end() ? expected.empty() : it->second == expected) {
      map_[key] = desired;
      cv_.notify_all();
      return desired;
    }
    return it == map_.end() ? Bytes{} : it->second;
  }
  void wait(const std::vector<std::string>& keys, Millis timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, timeout, [&] { return has_all(keys); })) return;
    std::string missing;
    for (const auto& k : keys)
      if (!map_.count(k)) missing += (missing.empty() ? "" : ", ") + k;
    fail("store", "timed out after ", timeout.count(), " ms waiting for keys: ", missing);
  }
  bool remove(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.erase(key) > 0;
  }
  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu_);
    return has_all(keys);
  }
  std::vector<std::string> keys() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [k, v] : map_) out.push_back(k);
    return out;
  }

 private:
  bool has_all(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (!map_.count(k)) return false;
    return true;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Bytes> map_;
};

}  // namespace ofl::internal::comm
