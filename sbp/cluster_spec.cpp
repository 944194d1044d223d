#include "sbp/cluster_spec.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ofl::internal {

const char* peak_class(DType t) {
  switch (t) {
    case DType::kFloat64:
      return "fp64";
    case DType::kFloat32:
      return "fp32";
    case DType::kFloat16:
    case DType::kBFloat16:
      return "fp16";
    default:
      return "int";
  }
}

double DeviceSpec::peak_flops(DType t) const {
  switch (t) {
    case DType::kFloat64:
      return flops_fp64;
    case DType::kFloat32:
      return flops_fp32;
    case DType::kFloat16:
    case DType::kBFloat16:
      return flops_fp16;
    default:
      return flops_int;
  }
}

double DeviceSpec::gemm_efficiency(const GemmShape& g) const {
  if (sms <= 0 || g.count <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0) return 1;
  // One tile's efficiency on this GEMM.
  const auto with = [&](double tm, double tn) {
    const double rows = std::ceil(g.m / tm), cols = std::ceil(g.n / tn);
    const double tiles = g.count * rows * cols;
    const double padding = g.m * g.n / (rows * tm * cols * tn);
    double split = 1;
    if (tiles < sms && tile_k_fill > 0)
      split = std::max(1.0, std::min(std::floor(sms / tiles), std::floor(g.k / (4 * tile_k_fill))));
    const double work = tiles * split, k = g.k / split;
    return padding * work / (std::ceil(work / sms) * sms) * k / (k + tile_k_fill);
  };
  double best = 0;
  for (double tm : {tile_m, tile_m / 2})
    for (double tn : {tile_n, tile_n / 2})
      best = std::max(best, with(std::max(tm, 1.0), std::max(tn, 1.0)));
  return best;
}

ClusterSpec ClusterSpec::default_for(int world) {
  const char* path = std::getenv("OFL_CLUSTER_SPEC");
  return path && *path ? load(path) : cpu_loopback(world);
}

ClusterSpec ClusterSpec::cpu_loopback(int world) {
  ClusterSpec s;
  s.name = "cpu_loopback";
  s.nodes = 1;
  s.devices_per_node = std::max(world, 1);
  // Rough figures for this 2-core box: Gloo TCP loopback ~2 GB/s with ~60 us per message.
  s.intra_node = {60e-6, 2e9};
  s.inter_node = s.intra_node;
  s.collective_overhead = 20e-6;
  s.device.flops_fp32 = 100e9;
  s.device.flops_fp64 = 50e9;
  s.device.flops_fp16 = 25e9;  // no native half arithmetic: converted through fp32
  s.device.flops_int = 100e9;
  s.device.mem_bandwidth = 20e9;
  const double phys = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  s.device.mem_capacity = phys > 0 ? phys / s.devices_per_node : 8e9;
  return s;
}

// Datasheet peaks, and what a device sustains of them from its clocks and its GEMMs' tiles
// (DeviceSpec), no figure fitted to a published run (examples/meta/ checks them against
// Megatron-LM's, Korthikanti et al.'s and BLOOM's). Bandwidth is per direction per GPU, as NCCL
// reaches it (bus bandwidth: about 230 of NVLink3's 300 GB/s, about 23 of an HDR NIC's 25; our
// recollection of NVIDIA's nccl-tests figures, not checked against a source here); latencies are
// typical NCCL small-message figures (a few us on NVLink, ~10 us across an InfiniBand hop).
namespace {

// A DGX-style cluster of GPUs over NCCL: a NIC a GPU across nodes, NCCL's tree where an all-reduce
// is latency-bound, a kernel's launch for every op and NCCL's launch and channel setup for every
// collective. The presets fill in the device and the links.
ClusterSpec nccl_gpus(const char* name, int nodes, int gpus_per_node) {
  ClusterSpec s;
  s.name = name;
  s.nodes = nodes;
  s.devices_per_node = gpus_per_node;
  s.device.op_overhead = 4e-6;
  s.collective_overhead = 10e-6;
  s.nics_per_node = gpus_per_node;
  s.tree_all_reduce = true;
  return s;
}

}  // namespace

ClusterSpec ClusterSpec::a100_nvlink(int nodes, int gpus_per_node) {
  ClusterSpec s = nccl_gpus("a100_nvlink", nodes, gpus_per_node);
  // NVIDIA's A100 datasheet: 108 SMs x 2048 dense float16 FLOP a clock x 1.41 GHz = 312 TFLOP/s.
  s.device.flops_fp64 = 19.5e12;      // FP64 tensor core
  s.device.flops_fp32 = 19.5e12;      // non-tensor FP32 (TF32 tensor core: 156e12)
  s.device.flops_fp16 = 312e12;       // FP16/BF16 dense tensor core
  s.device.flops_int = 624e12;        // INT8 dense tensor core
  s.device.mem_bandwidth = 2.039e12;  // HBM2e, 80 GB SXM
  s.device.mem_capacity = 80e9;
  // The peaks are at the 1410 MHz boost clock; its base clock, the least GPU Boost holds under a
  // full load at its 400 W, is 1095 MHz (TechPowerUp's GPU database for the SXM4 40 GB part; the
  // 80 GB part has the same GPU, its clocks taken as the same, not checked against a source).
  s.device.compute_efficiency = 1095.0 / 1410.0;
  // cuBLAS's large float16 GEMM kernels on sm80 compute 256 x 128 output tiles, loading K in
  // steps of 64 through 3 stages (their names say so: ampere_fp16_s16816gemm_fp16_256x128_ldg8_
  // f2f_stages_64x3_tn): two steps of K fill the pipeline before a tile's first product.
  s.device.sms = 108;
  s.device.tile_m = 256;
  s.device.tile_n = 128;
  s.device.tile_k_fill = 2 * 64;
  s.intra_node = {5e-6, 230e9};  // NVLink3: 600 GB/s bidirectional, 230 GB/s as NCCL's bus
  s.inter_node = {10e-6, 23e9};  // HDR InfiniBand 200 Gb/s per GPU, 23 GB/s as NCCL's bus
  return s;
}

ClusterSpec ClusterSpec::h100_ib(int nodes, int gpus_per_node) {
  ClusterSpec s = nccl_gpus("h100_ib", nodes, gpus_per_node);
  // NVIDIA's H100 SXM5 figures: 132 SMs x 4096 dense float16 FLOP a clock x 1.83 GHz = 989
  // TFLOP/s.
  s.device.flops_fp64 = 67e12;       // FP64 tensor core
  s.device.flops_fp32 = 67e12;       // non-tensor FP32
  s.device.flops_fp16 = 989e12;      // FP16/BF16 dense tensor core
  s.device.flops_int = 1979e12;      // INT8 dense tensor core
  s.device.mem_bandwidth = 3.35e12;  // HBM3, SXM5
  s.device.mem_capacity = 80e9;
  // The tensor peaks are at 1830 MHz; the SXM5 part's base clock is 1590 MHz (TechPowerUp's GPU
  // database as we recall it, not checked against a source here).
  s.device.compute_efficiency = 1590.0 / 1830.0;
  // cuBLAS's large bf16 GEMM kernels on sm90 compute 128 x 256 tiles in K steps of 64
  // (sm90_xmma_gemm_bf16bf16_..._tilesize128x256x64_...); the same fill as the A100's assumed.
  s.device.sms = 132;
  s.device.tile_m = 128;
  s.device.tile_n = 256;
  s.device.tile_k_fill = 2 * 64;
  s.intra_node = {4e-6, 450e9};  // NVLink4: 900 GB/s bidirectional
  s.inter_node = {8e-6, 50e9};   // NDR InfiniBand 400 Gb/s per GPU
  return s;
}

const LinkSpec& ClusterSpec::link_for(const std::vector<int>& group) const {
  for (int r : group)
    if (node_of(r) != node_of(group.front())) return inter_node;
  return intra_node;
}

ClusterSpec::Spread ClusterSpec::spread(const std::vector<int>& group) const {
  thread_local std::vector<int> per_node;  // ranks on each node, zero between calls
  for (int r : group) {  // (a rank past the spec's world is on a node of its own number)
    const size_t n = size_t(node_of(r));
    if (per_node.size() <= n) per_node.resize(n + 1, 0);
    ++per_node[n];
  }
  Spread out{0, int(group.size()), 0};
  for (int r : group) {
    int& k = per_node[size_t(node_of(r))];
    if (k == 0) continue;  // this node counted already
    ++out.nodes;
    out.fewest = std::min(out.fewest, k);
    out.most = std::max(out.most, k);
    k = 0;
  }
  return out;
}

// Across nodes, rings run one a NIC: nccl-tests on 8-GPU A100 nodes with 4 HDR NICs report
// 85 to 96 GB/s of all_reduce bus bandwidth over 16 to 24 GPUs (NVIDIA/nccl-tests issues 100
// and 119), four NICs' worth.
double ClusterSpec::ring_beta_of(const Spread& s) const {
  if (s.nodes <= 1) return intra_node.beta;
  const double nics = std::max(1, std::min(s.fewest, nics_per_node));
  return std::max(inter_node.beta, std::min(nics * inter_node.beta, intra_node.beta));
}

double ClusterSpec::ring_beta(const std::vector<int>& group) const {
  return ring_beta_of(spread(group));
}

double MeasuredCurve::operator()(double x) const {
  if (at.empty()) return 0;
  if (x <= at.front() || at.size() == 1) return seconds.front();
  size_t i = size_t(std::upper_bound(at.begin(), at.end(), x) - at.begin());
  i = std::min(i, at.size() - 1);  // past the last point: the last segment, extended
  const double rate = (seconds[i] - seconds[i - 1]) / (at[i] - at[i - 1]);
  return std::max(seconds[i - 1] + (x - at[i - 1]) * rate, 0.0);
}

const MeasuredCurve* ClusterSpec::measured(const std::string& kind, size_t size,
                                           const Spread& spread) const {
  if (spread.nodes > 1) return nullptr;
  for (const MeasuredCollective& m : measured_collectives)
    if (m.kind == kind && size_t(m.group) == size) return &m.curve;
  return nullptr;
}

namespace {

// A ring collective of p - 1 hops, each moving a p-th of `bytes`: all_gather, reduce_scatter
// and all_to_all alike (all_to_all's p - 1 rounds each move one block).
double ring_pass(const ClusterSpec& c, const std::vector<int>& group, double bytes,
                 const char* kind) {
  const double p = double(group.size());
  if (p <= 1) return 0;
  const ClusterSpec::Spread s = c.spread(group);
  if (const MeasuredCurve* m = c.measured(kind, group.size(), s)) return (*m)(bytes);
  const double alpha = s.nodes > 1 ? c.inter_node.alpha : c.intra_node.alpha;
  return c.collective_overhead + (p - 1) * (alpha + bytes / p / c.ring_beta_of(s));
}

}  // namespace

double ClusterSpec::all_gather(const std::vector<int>& group, double bytes) const {
  return ring_pass(*this, group, bytes, "all_gather");
}

double ClusterSpec::reduce_scatter(const std::vector<int>& group, double bytes) const {
  return ring_pass(*this, group, bytes, "reduce_scatter");
}

double ClusterSpec::all_reduce(const std::vector<int>& group, double bytes) const {
  // Ring: a reduce-scatter then an all-gather, launched as one collective. Tree (NCCL's): a
  // pipelined reduce up and broadcast down a chain inside each node and a binary tree across
  // the nodes, each byte crossing a link twice.
  const double p = double(group.size());
  if (p <= 1) return 0;
  const Spread s = spread(group);
  if (const MeasuredCurve* m = measured("all_reduce", group.size(), s)) return (*m)(bytes);
  const double alpha = s.nodes > 1 ? inter_node.alpha : intra_node.alpha, beta = ring_beta_of(s);
  const double ring = 2 * (p - 1) * (alpha + bytes / p / beta);
  if (!tree_all_reduce) return collective_overhead + ring;
  const double tree =
      2 * (std::ceil(std::log2(double(s.nodes))) * alpha + double(s.most - 1) * intra_node.alpha) +
      2 * bytes / beta;
  return collective_overhead + std::min(ring, tree);
}

double ClusterSpec::all_to_all(const std::vector<int>& group, double bytes) const {
  return ring_pass(*this, group, bytes, "all_to_all");
}

double ClusterSpec::broadcast(const std::vector<int>& group, double bytes) const {
  if (group.size() <= 1) return 0;
  const LinkSpec& l = link_for(group);
  return collective_overhead +
         std::ceil(std::log2(double(group.size()))) * (l.alpha + bytes / l.beta);
}

double ClusterSpec::send_recv(int src, int dst, double bytes) const {
  if (src == dst) return local(bytes);
  const LinkSpec& l = link_for({src, dst});
  return l.alpha + bytes / l.beta;
}

double ClusterSpec::local(double bytes) const {
  return device.mem_bandwidth > 0 ? bytes / device.mem_bandwidth : 0;
}

double ClusterSpec::compute(const OpCost& cost, DType t) const {
  const double rate =
      device.peak_flops(t) * device.compute_efficiency * device.gemm_efficiency(cost.gemm);
  const double memory = local(cost.bytes);
  double math = cost.flops > 0 && rate > 0 ? cost.flops / rate : 0;
  if (math > memory) {  // compute-bound: the measured GEMM time, or the roofline's ramp
    const char* cls = peak_class(t);
    auto m = std::find_if(measured_gemms.begin(), measured_gemms.end(),
                          [&](const MeasuredGemm& g) { return g.dtype == cls; });
    math = m != measured_gemms.end() ? std::max(m->curve(cost.flops), memory)
                                     : math + device.half_efficiency_flops / rate;
  }
  return device.op_overhead + std::max(math, memory);
}

namespace {

struct NumField {
  const char* key;
  double DeviceSpec::*dev;  // a field of the DeviceSpec, or
  LinkSpec ClusterSpec::*link;
  double LinkSpec::*link_field;  // one on a LinkSpec
};

double* field_ptr(ClusterSpec& s, const NumField& f) {
  if (f.dev) return &(s.device.*f.dev);
  if (!f.link) return &s.collective_overhead;
  return &((s.*f.link).*f.link_field);
}

const NumField kFields[] = {
    {"flops_fp64", &DeviceSpec::flops_fp64, nullptr, nullptr},
    {"flops_fp32", &DeviceSpec::flops_fp32, nullptr, nullptr},
    {"flops_fp16", &DeviceSpec::flops_fp16, nullptr, nullptr},
    {"flops_int", &DeviceSpec::flops_int, nullptr, nullptr},
    {"mem_bandwidth", &DeviceSpec::mem_bandwidth, nullptr, nullptr},
    {"mem_capacity", &DeviceSpec::mem_capacity, nullptr, nullptr},
    {"op_overhead", &DeviceSpec::op_overhead, nullptr, nullptr},
    {"compute_efficiency", &DeviceSpec::compute_efficiency, nullptr, nullptr},
    {"half_efficiency_flops", &DeviceSpec::half_efficiency_flops, nullptr, nullptr},
    {"sms", &DeviceSpec::sms, nullptr, nullptr},
    {"tile_m", &DeviceSpec::tile_m, nullptr, nullptr},
    {"tile_n", &DeviceSpec::tile_n, nullptr, nullptr},
    {"tile_k_fill", &DeviceSpec::tile_k_fill, nullptr, nullptr},
    {"intra_alpha", nullptr, &ClusterSpec::intra_node, &LinkSpec::alpha},
    {"intra_beta", nullptr, &ClusterSpec::intra_node, &LinkSpec::beta},
    {"inter_alpha", nullptr, &ClusterSpec::inter_node, &LinkSpec::alpha},
    {"inter_beta", nullptr, &ClusterSpec::inter_node, &LinkSpec::beta},
    {"collective_overhead", nullptr, nullptr, nullptr},
};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const char* const kMeasuredKinds[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};

// The numbers under `key` of a measured entry: finite, not negative, and (`increasing`) each
// above the one before.
std::vector<double> numbers_of(const nlohmann::json& j, const char* key, const std::string& where,
                               bool increasing) {
  const nlohmann::json& a = j[key];
  if (!a.is_array() || a.empty())
    fail("ClusterSpec::from_json", where, ": \"", key, "\" is not a list of numbers");
  std::vector<double> out;
  for (const nlohmann::json& v : a) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      fail("ClusterSpec::from_json", where, ": \"", key, "\" holds ", v.dump(),
           ", not a finite number >= 0");
    out.push_back(v.get<double>());
  }
  if (increasing && std::adjacent_find(out.begin(), out.end(), std::greater_equal<>()) != out.end())
    fail("ClusterSpec::from_json", where, ": \"", key, "\" must increase");
  return out;
}

// A measured entry's curve: `at` (sizes, increasing) against "seconds", of one length.
MeasuredCurve curve_of(const nlohmann::json& j, const char* at, const std::string& where) {
  MeasuredCurve c{numbers_of(j, at, where, true), numbers_of(j, "seconds", where, false)};
  if (c.at.size() != c.seconds.size())
    fail("ClusterSpec::from_json", where, ": ", c.at.size(), " sizes but ", c.seconds.size(),
         " times");
  return c;
}

// An entry of "collectives" or "gemms" is an object with these keys.
void require_keys(const nlohmann::json& j, const std::string& where,
                  std::initializer_list<const char*> keys) {
  if (!j.is_object()) fail("ClusterSpec::from_json", where, " is not an object");
  for (const char* key : keys)
    if (!j.contains(key)) fail("ClusterSpec::from_json", where, " has no \"", key, "\"");
}

// One entry of "gemms": {"dtype": "fp16", "flops": [...], "seconds": [...]}.
MeasuredGemm gemm_from_json(const nlohmann::json& j, size_t index) {
  const std::string where = "\"gemms\"[" + std::to_string(index) + "]";
  require_keys(j, where, {"dtype", "flops", "seconds"});
  const nlohmann::json& d = j["dtype"];
  const char* const classes[] = {"fp64", "fp32", "fp16", "int"};
  if (!d.is_string() ||
      std::find(std::begin(classes), std::end(classes), d.get<std::string>()) == std::end(classes))
    fail("ClusterSpec::from_json", where, ": \"dtype\" must be fp64, fp32, fp16 or int, got ",
         d.dump());
  return {d.get<std::string>(), curve_of(j, "flops", where)};
}

// One entry of "collectives": {"kind": ..., "group": g, "bytes": [...], "seconds": [...]}, the
// sizes increasing and every number finite and not negative.
MeasuredCollective measured_from_json(const nlohmann::json& j, size_t index) {
  const std::string where = "\"collectives\"[" + std::to_string(index) + "]";
  require_keys(j, where, {"kind", "group", "bytes", "seconds"});
  MeasuredCollective m;
  if (!j["kind"].is_string()) fail("ClusterSpec::from_json", where, ": \"kind\" is not a string");
  m.kind = j["kind"].get<std::string>();
  if (std::find(std::begin(kMeasuredKinds), std::end(kMeasuredKinds), m.kind) ==
      std::end(kMeasuredKinds))
    fail("ClusterSpec::from_json", where, ": unknown collective \"", m.kind,
         "\" (all_reduce, all_gather, reduce_scatter or all_to_all)");
  const nlohmann::json& g = j["group"];
  if (!g.is_number_integer() || g.get<int64_t>() < 2 || g.get<int64_t>() > (1 << 24))
    fail("ClusterSpec::from_json", where, ": \"group\" must be a whole number of ranks >= 2");
  m.group = g.get<int>();
  m.curve = curve_of(j, "bytes", where);
  return m;
}

}  // namespace

std::string ClusterSpec::to_json() const {
  std::ostringstream os;
  os << "{\n  \"name\": \"" << name << "\",\n  \"nodes\": " << nodes
     << ",\n  \"devices_per_node\": " << devices_per_node
     << ",\n  \"nics_per_node\": " << nics_per_node
     << ",\n  \"tree_all_reduce\": " << (tree_all_reduce ? 1 : 0);
  ClusterSpec& self = const_cast<ClusterSpec&>(*this);
  for (const NumField& f : kFields) os << ",\n  \"" << f.key << "\": " << num(*field_ptr(self, f));
  auto list = [&](const std::vector<double>& v) {
    std::string out;
    for (double x : v) out += (out.empty() ? "" : ", ") + num(x);
    return "[" + out + "]";
  };
  if (!measured_collectives.empty()) {
    os << ",\n  \"collectives\": [";
    for (size_t k = 0; k < measured_collectives.size(); ++k) {
      const MeasuredCollective& m = measured_collectives[k];
      os << (k ? "," : "") << "\n    {\"kind\": \"" << m.kind << "\", \"group\": " << m.group
         << ", \"bytes\": " << list(m.curve.at) << ", \"seconds\": " << list(m.curve.seconds)
         << "}";
    }
    os << "\n  ]";
  }
  if (!measured_gemms.empty()) {
    os << ",\n  \"gemms\": [";
    for (size_t k = 0; k < measured_gemms.size(); ++k) {
      const MeasuredGemm& m = measured_gemms[k];
      os << (k ? "," : "") << "\n    {\"dtype\": \"" << m.dtype
         << "\", \"flops\": " << list(m.curve.at) << ", \"seconds\": " << list(m.curve.seconds)
         << "}";
    }
    os << "\n  ]";
  }
  os << "\n}\n";
  return os.str();
}

ClusterSpec ClusterSpec::from_json(const std::string& json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    fail("ClusterSpec::from_json", "not valid JSON: ", e.what());
  }
  if (!j.is_object()) fail("ClusterSpec::from_json", "expected a JSON object");
  ClusterSpec s;
  for (const auto& [key, value] : j.items()) {
    if (key == "name") {
      if (!value.is_string()) fail("ClusterSpec::from_json", "\"name\" is not a string");
      s.name = value.get<std::string>();
      continue;
    }
    if (key == "collectives") {
      if (!value.is_array()) fail("ClusterSpec::from_json", "\"collectives\" is not a list");
      for (size_t k = 0; k < value.size(); ++k)
        s.measured_collectives.push_back(measured_from_json(value[k], k));
      continue;
    }
    if (key == "gemms") {
      if (!value.is_array()) fail("ClusterSpec::from_json", "\"gemms\" is not a list");
      for (size_t k = 0; k < value.size(); ++k)
        s.measured_gemms.push_back(gemm_from_json(value[k], k));
      continue;
    }
    if (!value.is_number()) fail("ClusterSpec::from_json", "\"", key, "\" is not a number");
    const double v = value.get<double>();
    // A count: a positive whole number an int holds (a damaged file's 1e300 is not one).
    auto count = [&] {
      if (!(v >= 1 && v <= double(std::numeric_limits<int>::max()) && v == std::floor(v)))
        fail("ClusterSpec::from_json", "\"", key, "\" must be a positive whole number, got ", v);
      return int(v);
    };
    if (key == "nodes") {
      s.nodes = count();
    } else if (key == "devices_per_node") {
      s.devices_per_node = count();
    } else if (key == "nics_per_node") {
      s.nics_per_node = count();
    } else if (key == "tree_all_reduce") {
      if (v != 0 && v != 1) fail("ClusterSpec::from_json", "\"tree_all_reduce\" must be 0 or 1");
      s.tree_all_reduce = v == 1;
    } else {
      auto it = std::find_if(std::begin(kFields), std::end(kFields),
                             [&](const NumField& f) { return key == f.key; });
      if (it == std::end(kFields)) fail("ClusterSpec::from_json", "unknown key \"", key, "\"");
      // A tile is a positive whole count of rows; the SMs a whole count, 0 for no tile model.
      if (key == "tile_m" || key == "tile_n" || (key == "sms" && v != 0)) count();
      *field_ptr(s, *it) = v;
    }
  }
  return s;
}

void ClusterSpec::save(const std::string& path) const {
  std::ofstream f(path);
  if (!f) fail("ClusterSpec::save", "cannot write ", path);
  f << to_json();
}

ClusterSpec ClusterSpec::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail("ClusterSpec::load", "cannot read ", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return from_json(ss.str());
}

bool ClusterSpec::operator==(const ClusterSpec& o) const {
  return to_json() == o.to_json();
}

}  // namespace ofl::internal
