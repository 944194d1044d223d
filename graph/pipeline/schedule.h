// Pipeline schedules as data: which micro-batch runs forward or backward on which stage, in
// which order, with the activations and gradients each action receives and sends. Computed
// before anything runs, so that a test checks a schedule without ranks and the planner prices
// one without running it.
#pragma once
#include <string>
#include <vector>

namespace ofl::internal::graph::pipeline {

enum class ScheduleKind {
  kGPipe,        // every forward, then every backward: m micro-batches in flight
  k1F1B,         // PipeDream-flush: warm up, then one forward per backward: at most p in flight
  kInterleaved,  // Megatron's interleaved 1F1B: v chunks of layers per device (virtual stages)
};

// "gpipe", "1f1b", "interleaved_1f1b"; parse raises naming the known ones.
const char* schedule_name(ScheduleKind kind);
ScheduleKind parse_schedule(const std::string& name);

enum class Phase { kForward, kBackward };

// One slot of a device's work: a micro-batch's forward or backward through one virtual stage
// (chunk c of device d is virtual stage c * p + d; without interleaving, chunk 0 and stage d).
struct Action {
  Phase phase = Phase::kForward;
  int micro = 0;
  int stage = 0;  // virtual stage
  int chunk = 0;
  // The virtual stage this action receives its input from (the previous stage's activation for
  // a forward, the next stage's gradient for a backward) and sends its result to; -1 for none.
  int recv_from = -1;
  int send_to = -1;

  std::string str() const;  // "F3", "B0", "F3.1" (chunk 1)
  bool operator==(const Action&) const = default;
};

// When an action runs on a timeline (see Schedule::timeline).
struct Timed {
  int device = 0;
  Action action;
  double start = 0, end = 0;
};

struct Schedule {
  ScheduleKind kind = ScheduleKind::k1F1B;
  int devices = 1;  // p: physical stages
  int micro_batches = 1;
  int chunks = 1;                          // v: virtual stages per device
  std::vector<std::vector<Action>> order;  // per device, in the order it runs them

  int virtual_stages() const { return devices * chunks; }
  int device_of(int stage) const { return stage % devices; }

  // The most micro-batches whose forward ran on `device` and whose backward has not, at any
  // point of its order: the activations it holds (with chunks, in units of one chunk's layers).
  int peak_in_flight(int device) const;

  // Every action placed in time: each device runs its order one action at a time, an action
  // starting once its input arrived (`send` seconds after the action producing it ended).
  // `forward[k]` / `backward[k]`: seconds of one micro-batch through virtual stage k (one entry
  // serves every stage). Raises when the orders deadlock, naming the stuck actions.
  std::vector<Timed> timeline(const std::vector<double>& forward,
                              const std::vector<double>& backward, double send = 0) const;

  // Idle time over (devices x makespan) on `timeline`'s clock: GPipe and 1F1B with equal
  // stages give (p-1)/(m+p-1).
  double bubble_fraction(const std::vector<double>& forward, const std::vector<double>& backward,
                         double send = 0) const;

  // The schedule as its orders, then as a grid of unit-time slots (forward 1, backward 2):
  //   1f1b: 2 devices, 4 micro-batches
  //   device 0: F0 F1 B0 F2 B1 F3 B2 B3
  //   ...
  std::string str() const;
};

// The schedule of `kind` for p devices, m micro-batches and v chunks per device (only the
// interleaved schedule takes v > 1, and needs m divisible by p, as Megatron-LM's does). Raises
// naming the schedule and the offending counts. Backwards run in micro-batch order on every
// device (gradients accumulate in that order, as one process adds them).
Schedule make_schedule(ScheduleKind kind, int devices, int micro_batches, int chunks = 1);

}  // namespace ofl::internal::graph::pipeline
