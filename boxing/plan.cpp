#include "boxing/plan.h"

#include <cstdio>
#include <sstream>

namespace ofl::internal {

const char* step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::kAllGather:
      return "all_gather";
    case StepKind::kAllReduce:
      return "all_reduce";
    case StepKind::kReduceScatter:
      return "reduce_scatter";
    case StepKind::kAllToAll:
      return "all_to_all";
    case StepKind::kLocalSlice:
      return "local_slice";
    case StepKind::kLocalZeroFill:
      return "local_zero_fill";
    case StepKind::kLocalPad:
      return "local_pad";
    case StepKind::kSendRecv:
      return "send_recv";
  }
  return "?";
}

bool is_communication(StepKind k) {
  return k == StepKind::kAllGather || k == StepKind::kAllReduce || k == StepKind::kReduceScatter ||
         k == StepKind::kAllToAll || k == StepKind::kSendRecv;
}

std::string bytes_str(double bytes) {
  char buf[32];
  if (bytes >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else if (bytes >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else if (bytes >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1f KB", bytes / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  return buf;
}

std::string seconds_str(double s) {
  char buf[32];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  return buf;
}

std::string BoxingStep::str() const {
  std::ostringstream os;
  os << step_kind_name(kind);
  const bool has_op = kind == StepKind::kAllReduce || kind == StepKind::kReduceScatter ||
                      kind == StepKind::kLocalZeroFill || kind == StepKind::kLocalPad;
  if (has_op) os << "(" << partial_op_name(op) << ")";
  if (kind == StepKind::kSendRecv) {
    os << " across placements";
  } else {
    os << (mesh_axes.size() > 1 ? " on merged mesh axes " : " on mesh axis ");
    for (size_t i = 0; i < mesh_axes.size(); ++i) os << (i ? "+" : "") << mesh_axes[i];
    os << " (groups of " << group_size << ")";
  }
  os << ", " << from.str() << " -> " << to.str() << ", " << bytes_str(double(bytes)) << "/rank, "
     << seconds_str(seconds);
  return os.str();
}

int BoxingPlan::num_communication_steps() const {
  int n = 0;
  for (const BoxingStep& s : steps) n += is_communication(s.kind);
  return n;
}

std::string BoxingPlan::str() const {
  std::ostringstream os;
  os << "boxing plan: " << steps.size() << (steps.size() == 1 ? " step" : " steps") << ", "
     << seconds_str(seconds);
  if (fallback) os << " [FALLBACK]";
  if (!note.empty()) os << " (" << note << ")";
  for (size_t i = 0; i < steps.size(); ++i) os << "\n  " << i + 1 << ". " << steps[i].str();
  return os.str();
}

void PredictedCost::add(const BoxingPlan& plan) {
  comm_seconds += plan.seconds;
  for (const BoxingStep& s : plan.steps) {
    if (is_communication(s.kind)) {
      comm_bytes += s.bytes;
      ++comm_steps;
    }
    steps.push_back(s.str());
  }
}

std::string PredictedCost::str() const {
  std::ostringstream os;
  os << op << " " << signature << ": ";
  if (comm_steps) os << comm_steps << " collective" << (comm_steps == 1 ? "" : "s") << ", ";
  os << bytes_str(double(comm_bytes)) << "/rank, boxing " << seconds_str(comm_seconds)
     << ", compute " << seconds_str(compute_seconds);
  return os.str();
}

}  // namespace ofl::internal
