// Exact reductions of the planner's problem before the integer program, those of PBQP solvers
// (Scholz and Eckstein 2002). A choice that another of its group beats or equals whatever the
// other groups take is dropped. Then a group that adds nothing to the memory budget and meets at
// most two others is folded into them, each keeping, for every choice of its neighbours, its own
// best choice. A training step's graph is mostly chains of such groups (an op between its producer
// and its reader), so what reaches the solver is the variables and the ops that meet three or
// more groups.
#pragma once
#include <optional>
#include <vector>

#include "graph/auto_parallel/problem.h"

namespace ofl::internal::auto_parallel {

class Reduction {
 public:
  explicit Reduction(const Problem& p);

  // What is left to solve: groups of the original problem (rest_groups()[k] is rest()'s group k)
  // with the folded groups' costs moved onto their neighbours and between them.
  const Problem& rest() const { return rest_; }
  const std::vector<int>& rest_groups() const { return kept_; }
  // A plan of the original problem from a plan of rest(): the folded groups' best choices.
  std::vector<int> expand(const std::vector<int>& rest_choice) const;
  // The plan of rest() that a plan of the original problem takes in rest()'s groups; empty where
  // it takes a choice the reduction dropped.
  std::optional<std::vector<int>> restrict(const std::vector<int>& choice) const;

 private:
  struct Fold {
    int group;
    int a = -1, b = -1;     // the neighbours it was folded into (-1: none)
    size_t nb = 1;          // b's choices (1 without b)
    std::vector<int> best;  // per choice of a and of b, row-major: the group's choice
  };
  Problem rest_;
  std::vector<int> kept_;
  std::vector<Fold> folds_;  // in the order they were made; expanded in reverse
  // Per group: the original index of each choice kept (the others are never better).
  std::vector<std::vector<int>> choices_;
  size_t groups_ = 0;
};

}  // namespace ofl::internal::auto_parallel
