#include "graph/pipeline/schedule.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace ofl::internal::graph::pipeline {

namespace {

constexpr const char* kOp = "pipeline schedule";

struct Named {
  ScheduleKind kind;
  const char* name;
};
constexpr Named kNames[] = {{ScheduleKind::kGPipe, "gpipe"},
                            {ScheduleKind::k1F1B, "1f1b"},
                            {ScheduleKind::kInterleaved, "interleaved_1f1b"}};

// The action with its neighbours filled in, for virtual stage `stage` of `s`.
Action action(const Schedule& s, Phase phase, int micro, int chunk, int device) {
  Action a{.phase = phase, .micro = micro, .stage = chunk * s.devices + device, .chunk = chunk};
  const int last = s.virtual_stages() - 1;
  if (phase == Phase::kForward) {
    a.recv_from = a.stage > 0 ? a.stage - 1 : -1;
    a.send_to = a.stage < last ? a.stage + 1 : -1;
  } else {
    a.recv_from = a.stage < last ? a.stage + 1 : -1;
    a.send_to = a.stage > 0 ? a.stage - 1 : -1;
  }
  return a;
}

// Device d of p without interleaving: `warmup` forwards, then a forward before each backward,
// then the remaining backwards (GPipe: every forward is warm-up).
std::vector<Action> one_chunk_order(const Schedule& s, int d, int warmup) {
  const int m = s.micro_batches;
  std::vector<Action> order;
  for (int i = 0; i < warmup; ++i) order.push_back(action(s, Phase::kForward, i, 0, d));
  for (int i = 0; i < m - warmup; ++i) {
    order.push_back(action(s, Phase::kForward, warmup + i, 0, d));
    order.push_back(action(s, Phase::kBackward, i, 0, d));
  }
  for (int i = m - warmup; i < m; ++i) order.push_back(action(s, Phase::kBackward, i, 0, d));
  return order;
}

// Megatron-LM's interleaved order on device d: micro-batches go in groups of p through chunk 0,
// then chunk 1, ...; backwards take the chunks in reverse. The k-th forward (backward) of the
// device is micro-batch (k / pv) p + k % p of chunk (k % pv) / p (reversed for backwards).
std::vector<Action> interleaved_order(const Schedule& s, int d) {
  const int p = s.devices, v = s.chunks, total = s.micro_batches * v;
  auto nth = [&](int k, Phase phase) {
    const int group = k / (p * v), in_group = k % (p * v);
    const int chunk = phase == Phase::kForward ? in_group / p : v - 1 - in_group / p;
    return action(s, phase, group * p + in_group % p, chunk, d);
  };
  const int warmup = s.micro_batches == p ? total : std::min(total, (p - d - 1) * 2 + (v - 1) * p);
  std::vector<Action> order;
  for (int k = 0; k < warmup; ++k) order.push_back(nth(k, Phase::kForward));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(nth(warmup + k, Phase::kForward));
    order.push_back(nth(k, Phase::kBackward));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(nth(k, Phase::kBackward));
  return order;
}

double per_stage(const std::vector<double>& seconds, int stage, int stages, const char* what) {
  if (seconds.size() == 1) return seconds[0];
  if (seconds.size() != size_t(stages))
    fail(kOp, "timeline takes one ", what, " time for every stage or ", stages,
         " (one per virtual stage), got ", seconds.size());
  return seconds[size_t(stage)];
}

}  // namespace

const char* schedule_name(ScheduleKind kind) {
  for (const Named& n : kNames)
    if (n.kind == kind) return n.name;
  return "?";
}

ScheduleKind parse_schedule(const std::string& name) {
  for (const Named& n : kNames)
    if (name == n.name) return n.kind;
  fail(kOp, "unknown schedule '", name, "': expected gpipe, 1f1b or interleaved_1f1b");
}

std::string Action::str() const {
  std::string s = (phase == Phase::kForward ? "F" : "B") + std::to_string(micro);
  return chunk ? s + "." + std::to_string(chunk) : s;
}

Schedule make_schedule(ScheduleKind kind, int devices, int micro_batches, int chunks) {
  const char* name = schedule_name(kind);
  if (devices < 1 || micro_batches < 1 || chunks < 1)
    fail(kOp, name, " needs at least one device, micro-batch and chunk, got ", devices,
         " devices, ", micro_batches, " micro-batches and ", chunks, " chunks");
  if (kind != ScheduleKind::kInterleaved && chunks != 1)
    fail(kOp, name, " runs one chunk of layers per device, got ", chunks,
         " (interleaved_1f1b takes several)");
  if (kind == ScheduleKind::kInterleaved && micro_batches % devices)
    fail(kOp, name, " sends micro-batches through in groups of the ", devices,
         " devices: ", micro_batches, " micro-batches do not divide into them");
  Schedule s{.kind = kind, .devices = devices, .micro_batches = micro_batches, .chunks = chunks};
  for (int d = 0; d < devices; ++d) {
    if (kind == ScheduleKind::kInterleaved)
      s.order.push_back(interleaved_order(s, d));
    else
      s.order.push_back(one_chunk_order(
          s, d,
          kind == ScheduleKind::kGPipe ? micro_batches : std::min(devices - d - 1, micro_batches)));
  }
  return s;
}

int Schedule::peak_in_flight(int device) const {
  int live = 0, peak = 0;
  for (const Action& a : order.at(size_t(device))) {
    live += a.phase == Phase::kForward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

std::vector<Timed> Schedule::timeline(const std::vector<double>& forward,
                                      const std::vector<double>& backward, double send) const {
  // done[phase][stage][micro]: when that action ended (NaN: not yet).
  const int V = virtual_stages(), m = micro_batches;
  std::vector<double> done(size_t(2 * V * m), std::nan(""));
  auto end_of = [&](Phase ph, int stage, int micro) -> double& {
    return done[size_t(((ph == Phase::kForward ? 0 : 1) * V + stage) * m + micro)];
  };
  std::vector<size_t> next(size_t(devices), 0);
  std::vector<double> free_at(size_t(devices), 0);
  std::vector<Timed> out;
  for (bool progress = true; progress;) {
    progress = false;
    for (int d = 0; d < devices; ++d) {
      const std::vector<Action>& ord = order[size_t(d)];
      while (next[size_t(d)] < ord.size()) {
        const Action& a = ord[next[size_t(d)]];
        double ready = free_at[size_t(d)];
        if (a.recv_from >= 0) {
          const double in = end_of(a.phase, a.recv_from, a.micro);
          if (std::isnan(in)) break;
          ready = std::max(ready, in + (device_of(a.recv_from) == d ? 0 : send));
        }
        if (a.phase == Phase::kBackward) {  // its own forward's activations
          const double f = end_of(Phase::kForward, a.stage, a.micro);
          if (std::isnan(f)) break;
          ready = std::max(ready, f);
        }
        const double secs = a.phase == Phase::kForward
                                ? per_stage(forward, a.stage, V, "forward")
                                : per_stage(backward, a.stage, V, "backward");
        out.push_back({d, a, ready, ready + secs});
        end_of(a.phase, a.stage, a.micro) = free_at[size_t(d)] = ready + secs;
        ++next[size_t(d)];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int d = 0; d < devices; ++d)
    if (next[size_t(d)] < order[size_t(d)].size())
      stuck += " device " + std::to_string(d) + " at " + order[size_t(d)][next[size_t(d)]].str();
  if (!stuck.empty())
    fail(kOp, schedule_name(kind), " deadlocks: every device waits on an input never sent:", stuck);
  return out;
}

double Schedule::bubble_fraction(const std::vector<double>& forward,
                                 const std::vector<double>& backward, double send) const {
  double busy = 0, makespan = 0;
  for (const Timed& t : timeline(forward, backward, send)) {
    busy += t.end - t.start;
    makespan = std::max(makespan, t.end);
  }
  return makespan > 0 ? 1.0 - busy / (devices * makespan) : 0.0;
}

std::string Schedule::str() const {
  std::string s = std::string(schedule_name(kind)) + ": " + std::to_string(devices) + " devices, " +
                  std::to_string(micro_batches) + " micro-batches";
  if (chunks > 1) s += ", " + std::to_string(chunks) + " chunks per device";
  s += "\n";
  for (int d = 0; d < devices; ++d) {
    s += "device " + std::to_string(d) + ":";
    for (const Action& a : order[size_t(d)]) s += " " + a.str();
    s += "  (" + std::to_string(peak_in_flight(d)) + " in flight at most)\n";
  }
  // The grid: a column per unit of time, forward 1 and backward 2, each action's name in its
  // first column and '-' through the rest; '.' where the device waits.
  const std::vector<Timed> t = timeline({1.0}, {2.0});
  size_t width = 1;
  int makespan = 0;
  for (const Timed& x : t) {
    width = std::max(width, x.action.str().size());
    makespan = std::max(makespan, int(std::lround(x.end)));
  }
  std::vector<std::vector<std::string>> grid(size_t(devices),
                                             std::vector<std::string>(size_t(makespan), "."));
  for (const Timed& x : t)
    for (long c = std::lround(x.start); c < std::lround(x.end); ++c)
      grid[size_t(x.device)][size_t(c)] = c == std::lround(x.start) ? x.action.str() : "-";
  s += "time (forward 1, backward 2):\n";
  for (int d = 0; d < devices; ++d) {
    s += "device " + std::to_string(d) + ":";
    for (const std::string& cell : grid[size_t(d)])
      s += " " + cell + std::string(width - cell.size(), ' ');
    while (!s.empty() && s.back() == ' ') s.pop_back();
    s += "\n";
  }
  return s;
}

}  // namespace ofl::internal::graph::pipeline
