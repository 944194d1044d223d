#include "graph/pipeline/order.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/error.h"

namespace ofl::internal::graph::pipeline {

namespace {

constexpr const char* kOp = "pipeline";

bool share_ranks(const Placement& a, const Placement& b) {
  for (int r : a.ranks())
    if (b.contains(r)) return true;
  return false;
}

// Where a node runs: its output's placement (a boxing node's target), else its inputs'.
const Placement* placement_of(const Graph& g, const Node& n) {
  for (const std::vector<int>* ids : {&n.outputs, &n.inputs})
    for (int id : *ids)
      if (id >= 0 && g.values()[size_t(id)].is_global()) return &*g.values()[size_t(id)].placement;
  return nullptr;
}

// Each micro-batch node's stage: its tag, else the only stage on its placement, else the stage
// of the nearest node of its micro-batch and phase that runs on that placement (or anywhere,
// for a node on no placement), looking back first.
std::vector<int> stages_of(const Graph& g, const PipelineOptions& o) {
  const std::vector<Node>& nodes = g.nodes();
  std::vector<int> stage(nodes.size(), -1), producer(g.values().size(), -1);
  auto on = [&](int s, const Placement* p) { return !p || o.stages[size_t(s)] == *p; };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    for (int id : n.outputs) producer[size_t(id)] = int(i);
    if (n.micro < 0) continue;
    if (n.stage >= 0) {
      if (n.stage >= int(o.stages.size()))
        fail(kOp, "node ", i, " (", n.name(), ") is in stage ", n.stage, " but the pipeline has ",
             o.stages.size(), " stages");
      stage[i] = n.stage;
      continue;
    }
    const Placement* p = placement_of(g, n);
    std::vector<int> here;
    for (int s = 0; s < int(o.stages.size()); ++s)
      if (p && o.stages[size_t(s)] == *p) here.push_back(s);
    if (here.size() == 1) {
      stage[i] = here[0];
      continue;
    }
    auto near = [&](size_t j) {
      const Node& m = nodes[j];
      return m.micro == n.micro && m.backward == n.backward && m.stage >= 0 && on(m.stage, p);
    };
    for (size_t j = i; j-- > 0 && stage[i] < 0;)
      if (near(j)) stage[i] = nodes[j].stage;
    for (size_t j = i + 1; j < nodes.size() && stage[i] < 0; ++j)
      if (near(j)) stage[i] = nodes[j].stage;
    if (stage[i] < 0 && here.empty())  // a placement no stage has: where its input was made
      for (int id : n.inputs)
        if (id >= 0 && producer[size_t(id)] >= 0 && stage[size_t(producer[size_t(id)])] >= 0) {
          stage[i] = stage[size_t(producer[size_t(id)])];
          break;
        }
    if (stage[i] < 0) stage[i] = here.empty() ? 0 : here[0];
  }
  // A move between stages goes out with the action making what it moves (of its micro-batch and
  // phase): sent as soon as it is made, not queued behind the receiver's earlier work on the
  // sender's communication thread.
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.kind != NodeKind::kBoxing || n.micro < 0) continue;
    const Value &from = g.values()[size_t(n.inputs[0])], &to = g.values()[size_t(n.outputs[0])];
    const int p = producer[size_t(n.inputs[0])];
    if (from.is_global() && to.is_global() && *from.placement != *to.placement && p >= 0 &&
        nodes[size_t(p)].micro == n.micro && nodes[size_t(p)].backward == n.backward)
      stage[i] = stage[size_t(p)];
  }
  return stage;
}

// Raises when `order` reads a value before the node making it, or after a node writing it in
// place (the reader wanted the value before the write).
void check_order(const Graph& g, const std::vector<size_t>& order) {
  const std::vector<Node>& nodes = g.nodes();
  std::vector<long> made(g.values().size(), -1), written(g.values().size(), -1);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const Node& n = nodes[order[pos]];
    for (int id : n.outputs) made[size_t(id)] = long(pos);
    if (writes_in_place(n)) written[size_t(n.inputs[0])] = long(pos);
  }
  std::vector<bool> produced(g.values().size(), false);
  for (const Node& n : nodes)
    for (int id : n.outputs) produced[size_t(id)] = true;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const Node& n = nodes[order[pos]];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int id = n.inputs[k];
      if (id < 0) continue;
      if (produced[size_t(id)] && made[size_t(id)] > long(pos))
        fail(kOp, "the schedule would run node ", order[pos], " (", n.name(), ", stage ", n.stage,
             ", micro-batch ", n.micro, ") before the node making its input %", id);
      const bool self = k == 0 && writes_in_place(n);
      if (!self && written[size_t(id)] >= 0 && written[size_t(id)] < long(pos))
        fail(kOp, "the schedule would run node ", order[pos], " (", n.name(),
             ") after the node writing its input %", id, " in place");
    }
  }
}

}  // namespace

Schedule stage_schedule(const PipelineOptions& o) {
  const int V = int(o.stages.size());
  if (V == 0) fail(kOp, "no stages: put modules in stages with set_stage(stage_id, placement)");
  std::vector<Placement> devices;
  for (int k = 0; k < V; ++k) {
    const Placement& p = o.stages[size_t(k)];
    if (p.size() == 0)
      fail(kOp, "stage ", k, " has no placement: stage ids go from 0 without gaps");
    if (std::find(devices.begin(), devices.end(), p) != devices.end()) continue;
    for (size_t d = 0; d < devices.size(); ++d)
      if (share_ranks(devices[d], p))
        fail(kOp, "stage ", k, " on ", p.str(), " overlaps stage ", d, " on ", devices[d].str(),
             ": stages share no ranks unless they share the placement (interleaved stages)");
    devices.push_back(p);
  }
  const int p = int(devices.size());
  for (int k = 0; k < V; ++k)
    if (o.stages[size_t(k)] != devices[size_t(k % p)] || V % p)
      fail(kOp, "stage ", k, " is on ", o.stages[size_t(k)].str(), ", but ", V, " stages over ", p,
           " placements go round them (stage k on the placement of stage k mod ", p, ")");
  if (V > p && o.kind != ScheduleKind::kInterleaved)
    fail(kOp, V, " stages on ", p, " placements need the interleaved_1f1b schedule, not ",
         schedule_name(o.kind));
  return make_schedule(o.kind, p, o.micro_batches, V / p);
}

Graph order_by_schedule(const Graph& g, const PipelineOptions& o) {
  const Schedule schedule = stage_schedule(o);
  const std::vector<Node>& nodes = g.nodes();
  // When each action starts on the schedule's clock (forward 1, backward 2).
  std::map<std::tuple<bool, int, int>, std::pair<double, int>> start;  // (bwd, micro, stage)
  for (const Timed& t : schedule.timeline({1.0}, {2.0}))
    start[{t.action.phase == Phase::kBackward, t.action.micro, t.action.stage}] = {t.start,
                                                                                   t.device};
  const std::vector<int> stage = stages_of(g, o);
  size_t first_micro = nodes.size();
  for (size_t i = 0; i < nodes.size() && first_micro == nodes.size(); ++i)
    if (nodes[i].micro >= 0) first_micro = i;
  using Key = std::tuple<int, double, int, size_t>;  // (part, start, device, traced position)
  std::vector<Key> key(nodes.size());
  // The nodes before the micro-batches run in the order the stages first need them: a move onto
  // a stage (an input going where it is read) when that stage's first forward starts, so that
  // the first stage's input is not queued behind the last stage's targets.
  std::vector<double> needed(g.values().size(), 0.0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.micro < 0 && i < first_micro) {
      double at = 0.0;
      for (int id : n.inputs)
        if (id >= 0) at = std::max(at, needed[size_t(id)]);
      if (n.kind == NodeKind::kBoxing) {
        const Value &from = g.values()[size_t(n.inputs[0])], &to = g.values()[size_t(n.outputs[0])];
        for (int s = 0; s < int(o.stages.size()) && to.is_global(); ++s)
          if (o.stages[size_t(s)] == *to.placement && from.placement != to.placement) {
            at = std::max(at, start.at({false, 0, s}).first);
            break;
          }
      }
      for (int id : n.outputs) needed[size_t(id)] = at;
      key[i] = {0, at, 0, i};
      continue;
    }
    if (n.micro < 0) {
      key[i] = {2, 0.0, 0, i};
      continue;
    }
    if (n.micro >= o.micro_batches)
      fail(kOp, "node ", i, " (", n.name(), ") is in micro-batch ", n.micro, " of ",
           o.micro_batches);
    const auto [at, device] = start.at({n.backward, n.micro, stage[i]});
    key[i] = {1, at, device, i};
  }
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  check_order(g, order);
  Graph out = g.without_nodes();
  for (size_t i : order) {
    Node n = nodes[i];
    if (n.micro >= 0) n.stage = stage[i];
    out.add_node(std::move(n));
  }
  return out;
}

}  // namespace ofl::internal::graph::pipeline
