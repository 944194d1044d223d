#include "graph/auto_parallel/stages.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "graph/auto_parallel/predict.h"

namespace ofl::internal::auto_parallel {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Segment {
  double seconds = 0;  // forward + backward of one micro-batch, with the receives
  double update = 0;
  double bytes = 0;
};

// Device s of S running the layers of `ranges` ([i, j) each, one per virtual stage: chunks of
// them).
Segment segment(const StageOption& o, const std::vector<std::pair<int, int>>& ranges, int s, int S,
                bool recompute) {
  Segment g;
  double inputs = 0, activations = 0, largest = 0;
  for (auto [i, j] : ranges)
    for (int l = i; l < j; ++l) {
      const LayerCost& c = o.layers[size_t(l)];
      g.seconds += c.forward + c.backward + (recompute ? c.forward : 0);
      g.update += c.update;
      g.bytes += c.state_bytes;
      inputs += c.input_bytes;
      activations += c.activation_bytes;
      largest = std::max(largest, c.activation_bytes);
    }
  const int v = int(ranges.size());
  g.seconds += (2 * v - (s == 0) - (s == S - 1)) * o.send_seconds;
  // Micro-batches in flight, in units of all the device's layers: 1F1B's warm-up, or the
  // interleaved schedule's in virtual stages (each 1/v of the layers).
  const double in_flight =
      v == 1 ? std::min(S - s, o.micro_batches)
             : std::min(2.0 * (S - s - 1) + (v - 1) * S + 1, double(o.micro_batches) * v) / v;
  g.bytes += recompute ? in_flight * inputs + largest : in_flight * activations;
  return g;
}

Segment segment(const StageOption& o, int i, int j, int s, int S, bool recompute) {
  return segment(o, {{i, j}}, s, S, recompute);
}

// The split of L layers into S contiguous non-empty stages least in max_s cost(i, j, s) (inf:
// not allowed); returns that max (inf when no split is allowed) and each stage's first layer.
double minmax_split(int L, int S, const std::function<double(int, int, int)>& cost,
                    std::vector<int>* first) {
  // best[s][j]: the least max over stages 0..s-1 covering layers [0, j); from[s][j]: stage s-1's
  // first layer there.
  std::vector<std::vector<double>> best(size_t(S) + 1, std::vector<double>(size_t(L) + 1, kInf));
  std::vector<std::vector<int>> from(size_t(S) + 1, std::vector<int>(size_t(L) + 1, -1));
  best[0][0] = -kInf;
  for (int s = 1; s <= S; ++s)
    for (int j = s; j <= L - (S - s); ++j)
      for (int i = s - 1; i < j; ++i) {
        if (best[size_t(s) - 1][size_t(i)] == kInf) continue;
        const double v = std::max(best[size_t(s) - 1][size_t(i)], cost(i, j, s - 1));
        if (v < best[size_t(s)][size_t(j)])
          best[size_t(s)][size_t(j)] = v, from[size_t(s)][size_t(j)] = i;
      }
  const double v = best[size_t(S)][size_t(L)];
  if (v == kInf) return kInf;
  first->assign(size_t(S), 0);
  for (int s = S, j = L; s > 0; j = from[size_t(s)][size_t(j)], --s)
    (*first)[size_t(s) - 1] = from[size_t(s)][size_t(j)];
  return v;
}

int end_of(const std::vector<int>& first, int s, int L) {
  return s + 1 < int(first.size()) ? first[size_t(s) + 1] : L;
}

// Device s of a choice: its virtual stages s, s + S, ... of `first` (one per chunk).
Segment device_segment(const StageOption& o, const std::vector<int>& first, int s, bool recompute) {
  const int virtual_stages = int(first.size()), S = virtual_stages / o.chunks;
  std::vector<std::pair<int, int>> ranges;
  for (int c = s; c < virtual_stages; c += S)
    ranges.emplace_back(first[size_t(c)], end_of(first, c, int(o.layers.size())));
  return segment(o, ranges, s, S, recompute);
}

// The interleaved schedule's split, given how many of the R repeated layers (rows 1 .. L - 2)
// each device runs: device s's d_s in v chunks of d_s / v (the first d_s % v chunks one more),
// chunk k being virtual stage k S + s; the first row goes with virtual stage 0, the last with the
// last.
std::vector<int> interleaved_first(const std::vector<int>& per_device, int v) {
  const int S = int(per_device.size());
  std::vector<int> first{0};
  for (int c = 0, next = 1; c + 1 < S * v; ++c) {
    const int d = per_device[size_t(c % S)], k = c / S;
    next += d / v + (k < d % v);
    first.push_back(next);
  }
  return first;
}

// The interleaved schedule's split least in max_s ((m - 1/v) t_s + U_s) within the budget: how
// many repeated layers each device runs (at least one a chunk), by a min-max dynamic program over
// (device, layers so far). Only a device's count matters where the repeated layers cost alike
// (plan_pipeline's options: one traced layer's costs for each), which the program assumes,
// pricing each device's layers as rows 1.. (with the first and last rows on the first and last
// devices); the choice is then priced on the real rows. Empty when the layers are too few.
std::vector<int> interleaved_split(const StageOption& o, int S, bool recompute, double budget) {
  const int L = int(o.layers.size()), R = L - 2, v = o.chunks;
  if (R < S * v) return {};
  // Device s's finish running d layers, inf where it overruns the budget.
  const auto finish = [&](int s, int d) {
    std::vector<std::pair<int, int>> ranges;
    for (int k = 0; k < v; ++k) {
      const int n = d / v + (k < d % v);
      ranges.emplace_back(1, 1 + n);
    }
    if (s == 0) ranges.front().first = 0;
    if (s == S - 1) ranges.back() = {L - 1 - (ranges.back().second - 1), L};
    const Segment g = segment(o, ranges, s, S, recompute);
    return g.bytes > budget ? kInf : (o.micro_batches - 1.0 / v) * g.seconds + g.update;
  };
  // best[s][j]: the least max over devices 0..s-1 running j layers; take[s][j]: device s-1's.
  std::vector<std::vector<double>> best(size_t(S) + 1, std::vector<double>(size_t(R) + 1, kInf));
  std::vector<std::vector<int>> take(size_t(S) + 1, std::vector<int>(size_t(R) + 1, 0));
  best[0][0] = -kInf;
  for (int s = 1; s <= S; ++s) {
    const int most = R - (S - s) * v;  // leave a layer a chunk for the devices after
    std::vector<double> cost(size_t(most) + 1, kInf);
    for (int d = v; d <= most; ++d) cost[size_t(d)] = finish(s - 1, d);
    for (int j = s * v; j <= most; ++j)
      for (int d = v; d <= j - (s - 1) * v; ++d) {
        const double before = best[size_t(s) - 1][size_t(j - d)];
        if (before == kInf || cost[size_t(d)] == kInf) continue;
        const double m = std::max(before, cost[size_t(d)]);
        if (m < best[size_t(s)][size_t(j)])
          best[size_t(s)][size_t(j)] = m, take[size_t(s)][size_t(j)] = d;
      }
  }
  std::vector<int> per_device(size_t(S), v);  // nothing fits: the even counts, for the bytes
  if (best[size_t(S)][size_t(R)] != kInf)
    for (int s = S, j = R; s > 0; j -= take[size_t(s)][size_t(j)], --s)
      per_device[size_t(s) - 1] = take[size_t(s)][size_t(j)];
  else
    for (int s = 0; s < S; ++s) per_device[size_t(s)] = R / S + (s < R % S);
  return interleaved_first(per_device, v);
}

}  // namespace

double pipeline_seconds(const StageOption& o, const std::vector<int>& first, bool recompute,
                        std::vector<double>* stage_seconds) {
  const int S = int(first.size()) / o.chunks;
  const double v = o.chunks;
  double fill = 0, last = 0;
  if (stage_seconds) stage_seconds->clear();
  for (int s = 0; s < S; ++s) {
    const Segment g = device_segment(o, first, s, recompute);
    fill += g.seconds / v;
    last = std::max(last, (o.micro_batches - 1 / v) * g.seconds + g.update);
    if (stage_seconds) stage_seconds->push_back(g.seconds);
  }
  return fill + last;
}

double stage_bytes(const StageOption& o, const std::vector<int>& first, int s, bool recompute) {
  return device_segment(o, first, s, recompute).bytes;
}

std::vector<LayerCost> layer_costs(const graph::Graph& g, PlanCache& cache) {
  using graph::NodeKind;
  const std::vector<graph::Node>& nodes = g.nodes();
  const Prediction pred = predict(g, cache);
  int layers = 0;
  size_t first_fwd = nodes.size(), first_bwd = nodes.size(), last_bwd = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const graph::Node& n = nodes[i];
    layers = std::max(layers, n.layer + 1);
    if (n.backward) last_bwd = i;
    if (n.layer < 0) continue;
    if (!n.backward) first_fwd = std::min(first_fwd, i);
    if (n.backward) first_bwd = std::min(first_bwd, i);
  }
  const int epilogue = layers + 1;
  std::vector<LayerCost> rows(size_t(layers) + 2);
  // Each node's row and whether it is the once-a-step update (a gradient's reduction, or a node
  // after the backward).
  std::vector<int> row(nodes.size()), var_row(g.values().size(), -1),
      made_in(g.values().size(), -1);
  std::vector<bool> update(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const graph::Node& n = nodes[i];
    update[i] = n.kind == NodeKind::kReduce || (n.kind == NodeKind::kBoxing && n.param_grad) ||
                (!n.backward && i > last_bwd && last_bwd > 0);
    if (n.layer >= 0)
      row[i] = n.layer + 1;
    else if (!n.backward)
      row[i] = i < first_fwd ? 0 : epilogue;
    else
      row[i] = i < first_bwd ? epilogue : 0;
  }
  for (const graph::Variable& v : g.variables()) var_row[size_t(v.value)] = -2;  // not read yet
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int id : nodes[i].inputs)
      if (id >= 0 && var_row[size_t(id)] == -2 && !nodes[i].backward && !update[i])
        var_row[size_t(id)] = row[i];
  for (size_t i = 0; i < nodes.size(); ++i)  // an update goes with the variable it reads first
    if (update[i] && nodes[i].layer < 0)
      for (int id : nodes[i].inputs)
        if (id >= 0 && var_row[size_t(id)] >= 0) {
          row[i] = var_row[size_t(id)];
          break;
        }
  for (size_t i = 0; i < nodes.size(); ++i)  // optimizer states: where their update runs
    for (int id : nodes[i].inputs)
      if (id >= 0 && var_row[size_t(id)] == -2 && update[i]) var_row[size_t(id)] = row[i];
  const std::vector<int> owner = graph::memory_owner(g);
  std::vector<bool> read_in_backward(g.values().size(), false);
  for (const graph::Node& n : nodes)
    for (int id : n.inputs)
      if (id >= 0 && n.backward) read_in_backward[size_t(owner[size_t(id)])] = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const graph::Node& n = nodes[i];
    LayerCost& c = rows[size_t(row[i])];
    const double secs = pred.node_seconds[i];
    (update[i] ? c.update : n.backward ? c.backward : c.forward) += secs;
    if (n.backward || update[i]) continue;
    for (int id : n.outputs) {
      made_in[size_t(id)] = row[i];
      if (owner[size_t(id)] == id && read_in_backward[size_t(id)])
        c.activation_bytes += double(graph::bytes_per_rank(g.values()[size_t(id)]));
    }
    for (int id : n.inputs)  // what crosses into this row from an earlier one
      if (id >= 0 && made_in[size_t(id)] >= 0 && made_in[size_t(id)] < row[i]) {
        c.input_bytes += double(graph::bytes_per_rank(g.values()[size_t(id)]));
        made_in[size_t(id)] = row[i];  // counted once
      }
  }
  for (const graph::Variable& v : g.variables()) {
    const int r = var_row[size_t(v.value)];
    if (r < 0) continue;
    const double bytes = double(graph::bytes_per_rank(g.values()[size_t(v.value)]));
    rows[size_t(r)].state_bytes += v.tensor.requires_grad() ? 2 * bytes : bytes;  // + gradient
  }
  return rows;
}

std::string PipelineChoice::str() const {
  std::ostringstream os;
  os << stages << (stages == 1 ? " stage" : " stages") << " x " << devices_per_stage << " devices, "
     << micro_batches << " micro-batches, "
     << (chunks > 1 ? "interleaved in " + std::to_string(chunks) + " chunks a device, " : "")
     << (recompute ? "recomputing activations" : "keeping activations") << "; first layers:";
  for (int f : first_layer) os << " " << f;
  return os.str();
}

const char* recompute_name(Recompute r) {
  return r == Recompute::kAlways ? "always" : r == Recompute::kNever ? "never" : "either";
}

Recompute parse_recompute(const std::string& name) {
  for (Recompute r : {Recompute::kEither, Recompute::kAlways, Recompute::kNever})
    if (name == recompute_name(r)) return r;
  fail("auto_parallel", "recompute must be \"either\", \"always\" or \"never\", got \"", name,
       "\"");
}

PipelineChoice plan_stages(const std::vector<StageOption>& options, int total_devices,
                           double budget, Recompute allowed) {
  std::vector<bool> settings;
  if (allowed != Recompute::kAlways) settings.push_back(false);
  if (allowed != Recompute::kNever) settings.push_back(true);
  PipelineChoice best;
  best.seconds = kInf;
  double least_bytes = kInf;
  for (size_t k = 0; k < options.size(); ++k) {
    const StageOption& o = options[k];
    const int L = int(o.layers.size());
    if (o.devices_per_stage < 1 || total_devices % o.devices_per_stage) continue;
    const int S = total_devices / o.devices_per_stage;
    if (S > L || o.micro_batches < 1 || o.chunks < 1) continue;
    // The interleaved schedule sends micro-batches through in groups of S (Megatron-LM's, and
    // the executor's: graph/pipeline/schedule.h).
    if (o.chunks > 1 && o.micro_batches % S) continue;
    if (o.chunks > 1 && L - 2 < S * o.chunks) continue;  // a layer a virtual stage
    for (bool recompute : settings) {
      if (o.chunks > 1) {  // the interleaved schedule: the best counts a device, if they fit
        const std::vector<int> first = interleaved_split(o, S, recompute, budget);
        PipelineChoice c{.option = int(k),
                         .stages = S,
                         .devices_per_stage = o.devices_per_stage,
                         .micro_batches = o.micro_batches,
                         .chunks = o.chunks,
                         .recompute = recompute,
                         .first_layer = first};
        double most = 0;
        for (int s = 0; s < S; ++s) {
          c.stage_bytes.push_back(stage_bytes(o, first, s, recompute));
          most = std::max(most, c.stage_bytes.back());
        }
        if (most > budget) {
          least_bytes = std::min(least_bytes, most);
          continue;
        }
        c.seconds = pipeline_seconds(o, first, recompute, &c.stage_seconds);
        if (c.seconds < best.seconds) best = std::move(c);
        continue;
      }
      std::vector<int> first;
      const double m1 = o.micro_batches - 1;
      // The fill term is the same for every split: only the slowest stage's finish varies.
      const double v = minmax_split(
          L, S,
          [&](int i, int j, int s) {
            const Segment g = segment(o, i, j, s, S, recompute);
            return g.bytes > budget ? kInf : m1 * g.seconds + g.update;
          },
          &first);
      if (v == kInf) {
        std::vector<int> unused;
        least_bytes = std::min(
            least_bytes,
            minmax_split(
                L, S, [&](int i, int j, int s) { return segment(o, i, j, s, S, recompute).bytes; },
                &unused));
        continue;
      }
      PipelineChoice c{.option = int(k),
                       .stages = S,
                       .devices_per_stage = o.devices_per_stage,
                       .micro_batches = o.micro_batches,
                       .recompute = recompute,
                       .first_layer = first};
      c.seconds = pipeline_seconds(o, first, recompute, &c.stage_seconds);
      for (int s = 0; s < S; ++s) c.stage_bytes.push_back(stage_bytes(o, first, s, recompute));
      if (c.seconds < best.seconds) best = std::move(c);
    }
  }
  if (best.seconds == kInf)
    fail("auto_parallel", "no pipeline fits ",
         std::isfinite(budget)
             ? "the memory budget of " + std::to_string(std::llround(budget)) + " bytes per device"
             : std::string("(with no memory budget)"),
         ": the least any choice of stages, micro-batches and recomputation ",
         allowed == Recompute::kAlways  ? "(always recomputing) "
         : allowed == Recompute::kNever ? "(never recomputing) "
                                        : "",
         "needs is ",
         std::isfinite(least_bytes)
             ? std::to_string(std::llround(least_bytes)) + " bytes"
             : std::string(
                   "unknown (no option has a valid stage count, or a repeated layer for each of "
                   "its virtual stages and micro-batches that divide into the stages)"));
  return best;
}

}  // namespace ofl::internal::auto_parallel
