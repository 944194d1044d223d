// The cost model's one description of the machine: devices per node, nodes, per-device peaks and
// per-link-level alpha/beta. Eager signature selection, boxing search and the auto planner all
// price work with the formulas below; a profiler can write a measured spec as JSON.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/op_cost.h"

namespace ofl::internal {

struct DeviceSpec {
  double flops_fp64 = 0;  // peak FLOP/s per dtype class
  double flops_fp32 = 0;
  double flops_fp16 = 0;     // fp16 and bf16 (tensor cores where the device has them)
  double flops_int = 0;      // integer and bool ops
  double mem_bandwidth = 0;  // bytes/s
  double mem_capacity = 0;   // bytes
  double op_overhead =
      0;  // seconds to start one op (dispatch, kernel launch), on top of its roofline
  // The fraction of its peaks the device sustains: the clock it holds under a full load over the
  // clock its peaks are quoted at (a GPU's base clock over its boost clock, from its datasheet); 1
  // where the peaks were measured (profile_cluster).
  double compute_efficiency = 1;
  // A measured ramp, where there is no tile model (sms 0: a CPU): an op of f FLOPs takes
  // (f + half_efficiency_flops) / (peak x compute_efficiency) seconds, half the rate at
  // half_efficiency_flops. Only ops bound by their FLOPs pay it: a memory-bound op (an elementwise
  // one) runs at the bandwidth, whatever few FLOPs it counts.
  double half_efficiency_flops = 0;
  // GEMMs as tiles (gemm_efficiency): the device's streaming multiprocessors (0: no tile model),
  // the output tile of its library's large-GEMM kernel (tile_m x tile_n), and the K its software
  // pipeline loads before a tile's first product (its stages but one, times its K step).
  double sms = 0, tile_m = 128, tile_n = 128, tile_k_fill = 0;
  double peak_flops(DType t) const;
  // The fraction of the sustained rate a GEMM of this shape reaches, from its tiles alone: its
  // output in tiles, one an SM at a time, in waves over the SMs (the last wave's idle SMs and
  // the padding of partial tiles are lost); each tile's K loop after its pipeline's fill; where
  // the tiles are fewer than the SMs, K split among the idle ones (split-K, as cuBLAS does),
  // each split at least 4 fills long. The tile is the best of tile_m x tile_n and its halves in
  // either dimension, as the library's heuristics choose among kernels (a smaller tile's lower
  // reuse of what it loads is not priced). 1 without a tile model or a GEMM shape.
  double gemm_efficiency(const GemmShape& g) const;
};

// One link level: a message of n bytes costs alpha + n / beta seconds.
struct LinkSpec {
  double alpha = 0;  // latency, seconds
  double beta = 0;   // bandwidth, bytes/s
  bool operator==(const LinkSpec&) const = default;
};

// Seconds measured at increasing sizes (bytes, FLOPs): between two points the line through
// them; below the first, the first's time (latency bounds a small one); past the last, the last
// segment's rate.
struct MeasuredCurve {
  std::vector<double> at, seconds;
  double operator()(double x) const;
  bool operator==(const MeasuredCurve&) const = default;
};

// A collective timed over groups of `group` ranks on one node, every such group of the ranks at
// once (as a mesh axis's groups run), at several buffer sizes (bytes as ClusterSpec's
// collectives count them). `kind`: all_reduce, all_gather, reduce_scatter or all_to_all.
struct MeasuredCollective {
  std::string kind;
  int group = 0;
  MeasuredCurve curve;
  bool operator==(const MeasuredCollective&) const = default;
};

// Matrix multiplies timed on one device in one dtype class ("fp64", "fp32", "fp16": fp16 and
// bf16; "int"), by their FLOPs.
struct MeasuredGemm {
  std::string dtype;
  MeasuredCurve curve;
  bool operator==(const MeasuredGemm&) const = default;
};

// The name of t's class of peaks: "fp64", "fp32", "fp16" (fp16 and bf16) or "int".
const char* peak_class(DType t);

struct ClusterSpec {
  std::string name = "custom";
  int nodes = 1;
  int devices_per_node = 1;
  DeviceSpec device;
  LinkSpec intra_node;
  LinkSpec inter_node;
  // Fixed cost of launching one collective (kernel launch, group setup), on top of its
  // per-hop alphas: why one collective over a merged group can beat two nested ones.
  double collective_overhead = 0;
  // Inter-node NICs a node has, each at inter_node.beta. A ring over a group with k of its ranks
  // on every node it spans runs min(k, nics_per_node) rings side by side, one a NIC (NCCL's
  // channels), so it crosses nodes that many times faster, up to the intra-node link. 1: every
  // ring that spans nodes runs at one NIC's bandwidth.
  int nics_per_node = 1;
  // Whether an all_reduce may run as a tree (NCCL's double binary tree: 2 log2(p) latencies
  // where a ring takes 2 (p - 1)), priced at whichever of the two is faster; Gloo's rings only.
  bool tree_all_reduce = false;
  // Collectives as measured (profile_cluster): a group of a measured size inside one node is
  // priced by its curve instead of the alpha-beta formulas below (which price the rest).
  std::vector<MeasuredCollective> measured_collectives;
  // GEMMs as measured (profile_cluster): a compute-bound op of a measured dtype class takes the
  // curve's time at its FLOPs in place of the roofline's FLOPs / (peak x efficiency) and ramp.
  std::vector<MeasuredGemm> measured_gemms;

  // Gloo over TCP loopback on this machine, measured roughly (2 GB/s, 60 us, 100 GFLOP/s fp32).
  static ClusterSpec cpu_loopback(int world);
  // The one default cost model, for the executor and boxing when none is given: the JSON file
  // the environment variable OFL_CLUSTER_SPEC names (e.g. one written by
  // `python -m oneflowlike.tools.profile_cluster`), else cpu_loopback(world).
  static ClusterSpec default_for(int world);
  // DGX A100 80GB: NVLink3 within a node, one HDR 200 Gb/s InfiniBand NIC per GPU across nodes.
  static ClusterSpec a100_nvlink(int nodes, int gpus_per_node);
  // DGX H100: NVLink4 within a node, one NDR 400 Gb/s InfiniBand NIC per GPU across nodes.
  static ClusterSpec h100_ib(int nodes, int gpus_per_node);

  int world() const { return nodes * devices_per_node; }
  int node_of(int rank) const { return rank / devices_per_node; }
  // The slowest link a group of global ranks spans: inter-node once it spans two nodes.
  const LinkSpec& link_for(const std::vector<int>& group) const;
  // How a group spreads over nodes: how many it spans, and the fewest and most of its ranks on
  // one of them. The collectives below price a group by its size, its slowest link and this.
  struct Spread {
    int nodes = 1, fewest = 0, most = 0;
    auto operator<=>(const Spread&) const = default;
  };
  Spread spread(const std::vector<int>& group) const;
  // The bandwidth rings over `group` reach together: the slowest link's, and across nodes
  // min(k, nics_per_node) NICs' for the fewest ranks k the group has on one of its nodes, at
  // most the intra-node link's.
  double ring_beta(const std::vector<int>& group) const;
  double ring_beta_of(const Spread& spread) const;
  // The curve of `kind` over a group of `size` ranks on one node, or null.
  const MeasuredCurve* measured(const std::string& kind, size_t size, const Spread& spread) const;

  // Alpha-beta costs in seconds over `group`: rings at ring_beta, with the slowest link's alpha
  // per hop; all_reduce the faster of a ring and, where tree_all_reduce, a tree. `bytes` is each
  // rank's full buffer: the gathered output of all_gather, the input of reduce_scatter /
  // all_reduce / all_to_all.
  double all_gather(const std::vector<int>& group, double bytes) const;
  double reduce_scatter(const std::vector<int>& group, double bytes) const;
  double all_reduce(const std::vector<int>& group, double bytes) const;
  double all_to_all(const std::vector<int>& group, double bytes) const;
  double broadcast(const std::vector<int>& group, double bytes) const;  // binary tree
  double send_recv(int src, int dst, double bytes) const;
  // Local memory-bound work (slice, zero-fill, copy): bytes touched / memory bandwidth.
  double local(double bytes) const;
  // Roofline time of a compute op at the rate its shape reaches (DeviceSpec: the sustained
  // fraction of the peak, and a GEMM's tiles, or the measured GEMMs where they exist), plus the
  // device's op overhead.
  double compute(const OpCost& cost, DType t) const;
  double compute(double flops, double bytes, DType t) const { return compute({flops, bytes}, t); }

  // Flat JSON: {"name": "...", "nodes": 1, ..., "intra_alpha": 6e-05, ...}. from_json raises
  // ofl::internal::Error naming the bad key; missing keys keep their defaults.
  std::string to_json() const;
  static ClusterSpec from_json(const std::string& json);
  void save(const std::string& path) const;
  static ClusterSpec load(const std::string& path);

  bool operator==(const ClusterSpec&) const;
};

}  // namespace ofl::internal
