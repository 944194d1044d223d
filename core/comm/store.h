// The rendezvous key-value store ranks meet through (TcpStore hosts it on rank 0). Every
// blocking call takes a timeout and raises ofl::internal::Error naming the keys it waited for.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ofl::internal::comm {

using Bytes = std::vector<uint8_t>;
using Millis = std::chrono::milliseconds;

// Default for collectives and store waits; OFL_COMM_TIMEOUT_S overrides it.
Millis default_timeout();

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Waits until the key exists, then returns its value.
  virtual Bytes get(const std::string& key) = 0;
  // Adds delta to the integer stored at key (0 when absent); returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Sets key to desired when its current value equals expected (an absent key matches an
  // empty expected); returns the value the key holds afterwards.
  virtual Bytes compare_set(const std::string& key, const Bytes& expected,
                            const Bytes& desired) = 0;
  // Waits until every key exists.
  virtual void wait(const std::vector<std::string>& keys, Millis timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }
  // Removes key; returns whether it existed.
  virtual bool remove(const std::string& key) = 0;
  // Whether every key exists now (no waiting).
  virtual bool check(const std::vector<std::string>& keys) = 0;

  Millis timeout() const { return timeout_; }
  void set_timeout(Millis t) { timeout_ = t; }

 private:
  Millis timeout_ = default_timeout();
};

// Namespaces every key under "prefix/"; sub-groups build their rendezvous on one.
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base);
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  bool remove(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;

 private:
  std::string k(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> k(const std::vector<std::string>& keys) const;
  std::string prefix_;
  std::shared_ptr<Store> base_;
};

inline Bytes to_bytes(const std::string& s) {
  return Bytes(s.begin(), s.end());
}
inline std::string to_string(const Bytes& b) {
  return std::string(b.begin(), b.end());
}

}  // namespace ofl::internal::comm
