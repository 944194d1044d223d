// A communicator whose every collective raises: for one process that plays ranks it must not
// talk to (the SBP conformance checker's simulated world, tests of simulated placements).
#pragma once
#include <string>
#include <vector>

#include "core/comm/communicator.h"

namespace ofl::internal::comm {

class RefusingCommunicator : public Communicator {
 public:
  // Rank `rank` of ranks `ranks`; a refused call raises `message` under `who`'s name.
  RefusingCommunicator(int rank, std::vector<int> ranks, std::string name, std::string who,
                       std::string message)
      : Communicator(rank, std::move(ranks), std::move(name)),
        who_(std::move(who)),
        message_(std::move(message)) {}
  int refused = 0;  // how many calls were attempted

  void all_reduce(Tensor&, ReduceOp) override { refuse(); }
  void all_gather(const Tensor&, Tensor&) override { refuse(); }
  void all_gather_v(const Tensor&, Tensor&, const std::vector<int64_t>&) override { refuse(); }
  void reduce_scatter(const Tensor&, Tensor&, ReduceOp) override { refuse(); }
  void reduce_scatter_v(const Tensor&, Tensor&, const std::vector<int64_t>&, ReduceOp) override {
    refuse();
  }
  void all_to_all(const Tensor&, Tensor&) override { refuse(); }
  void all_to_all_v(const Tensor&, const std::vector<int64_t>&, Tensor&,
                    const std::vector<int64_t>&) override {
    refuse();
  }
  void broadcast(Tensor&, int) override { refuse(); }
  void reduce(Tensor&, int, ReduceOp) override { refuse(); }
  void gather(const Tensor&, Tensor&, int, const std::vector<int64_t>&) override { refuse(); }
  void scatter(const Tensor&, Tensor&, int, const std::vector<int64_t>&) override { refuse(); }
  void send(const Tensor&, int, int) override { refuse(); }
  void recv(Tensor&, int, int) override { refuse(); }
  void barrier() override { refuse(); }

 protected:
  std::shared_ptr<Communicator> make_group(const std::vector<int>&, int,
                                           const std::string&) override {
    refuse();
  }

 private:
  [[noreturn]] void refuse() {
    ++refused;
    fail(who_.c_str(), message_);
  }
  std::string who_, message_;
};

}  // namespace ofl::internal::comm
