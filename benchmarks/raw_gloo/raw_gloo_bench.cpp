// The baseline for benchmarks/bench_comm.py: Gloo called directly, with nothing of oneflowlike.
// Each of WORLD_SIZE local processes (RANK from the environment, as our launcher sets it) meets
// the others through a gloo::rendezvous::FileStore in a shared directory, connects a full mesh
// over TCP on 127.0.0.1, and times all_reduce, all_gather, reduce_scatter and all_to_all on
// float32 buffers, each case in --rounds rounds (the best round's mean per call counts, taken on
// the slowest rank). Rank 0 prints one JSON line per (op, size):
//   {"op": ..., "bytes": ..., "seconds": ..., "ranks": ..., "iters": ..., "impl": ...}
// `bytes` follows nccl-tests: the whole buffer for all_reduce and all_to_all, the gathered
// output for all_gather, the reduced input for reduce_scatter.
//
// Usage: raw_gloo_bench STORE_DIR [--min-bytes B] [--max-bytes B] [--iters N] [--warmup N]
//                                 [--rounds N] [--ops all_reduce,all_gather,reduce_scatter,...]
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string store_dir;
  int64_t min_bytes = 1 << 10;
  int64_t max_bytes = 64 << 20;
  int iters = 0;    // 0: chosen per size
  int warmup = -1;  // -1: chosen per size
  int rounds = 5;
  std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
};

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "raw_gloo_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--min-bytes")
      o.min_bytes = std::stoll(next());
    else if (a == "--max-bytes")
      o.max_bytes = std::stoll(next());
    else if (a == "--iters")
      o.iters = std::stoi(next());
    else if (a == "--warmup")
      o.warmup = std::stoi(next());
    else if (a == "--rounds")
      o.rounds = std::stoi(next());
    else if (a == "--ops")
      o.ops = split(next(), ',');
    else if (o.store_dir.empty())
      o.store_dir = a;
    else {
      std::fprintf(stderr, "raw_gloo_bench: unexpected argument %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.store_dir.empty()) {
    std::fprintf(stderr,
                 "usage: raw_gloo_bench STORE_DIR [--min-bytes B] [--max-bytes B] "
                 "[--iters N] [--warmup N] [--rounds N] [--ops a,b]\n");
    std::exit(2);
  }
  return o;
}

// Fewer repetitions for large buffers: about 256 MB moved per size, within [10, 200].
int iters_for(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>((int64_t{256} << 20) / bytes, 10, 200));
}

// One benchmark case: `run` performs a single collective call.
struct Case {
  std::string op;
  std::string impl;
  int64_t bytes;
  std::function<void()> run;
};

class Bench {
 public:
  explicit Bench(std::shared_ptr<gloo::Context> ctx) : ctx_(std::move(ctx)) {}
  int rank() const { return ctx_->rank; }
  int size() const { return ctx_->size; }

  // Seconds per call: `iters` calls in `rounds` rounds, each round's mean taken on the slowest
  // rank; the best round wins, which filters out other load on a shared machine.
  double time(const Case& c, int iters, int warmup, int rounds) {
    for (int i = 0; i < warmup; ++i) c.run();
    rounds = std::max(1, std::min(rounds, iters));
    int per_round = std::max(1, iters / rounds);
    double best = 1e300;
    for (int k = 0; k < rounds; ++k) {
      barrier();
      auto start = Clock::now();
      for (int i = 0; i < per_round; ++i) c.run();
      double mine = std::chrono::duration<double>(Clock::now() - start).count() / per_round;
      best = std::min(best, max_over_ranks(mine));
    }
    return best;
  }

  Case all_reduce(int64_t bytes) {
    size_t n = bytes / sizeof(float);
    auto buf = std::make_shared<std::vector<float>>(n, 1.0f);
    auto fn = static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>);
    return {"all_reduce", "gloo::allreduce", static_cast<int64_t>(n * sizeof(float)),
            [this, buf, n, fn] {
              gloo::AllreduceOptions opts(ctx_);
              opts.setOutput(buf->data(), n);
              opts.setReduceFunction(fn);
              opts.setTag(next_tag());
              gloo::allreduce(opts);
            }};
  }

  Case all_gather(int64_t bytes) {
    size_t block = bytes / sizeof(float) / size();
    auto in = std::make_shared<std::vector<float>>(block, 1.0f);
    auto out = std::make_shared<std::vector<float>>(block * size());
    return {"all_gather", "gloo::allgather", static_cast<int64_t>(block * size() * sizeof(float)),
            [this, in, out, block] {
              gloo::AllgatherOptions opts(ctx_);
              opts.setInput(in->data(), block);
              opts.setOutput(out->data(), block * size());
              opts.setTag(next_tag());
              gloo::allgather(opts);
            }};
  }

  // Gloo has no options-style reduce_scatter; its algorithm class is the closest baseline.
  // It reduces in place and is built once, as Gloo's own benchmark does.
  Case reduce_scatter(int64_t bytes) {
    size_t block = bytes / sizeof(float) / size();
    auto buf = std::make_shared<std::vector<float>>(block * size(), 1.0f);
    std::vector<int> recv(size(), static_cast<int>(block));
    auto algo = std::make_shared<gloo::ReduceScatterHalvingDoubling<float>>(
        ctx_, std::vector<float*>{buf->data()}, static_cast<int>(block * size()), recv);
    return {"reduce_scatter", "gloo::ReduceScatterHalvingDoubling",
            static_cast<int64_t>(block * size() * sizeof(float)), [buf, algo] { algo->run(); }};
  }

  Case all_to_all(int64_t bytes) {
    size_t block = bytes / sizeof(float) / size();
    auto in = std::make_shared<std::vector<float>>(block * size(), 1.0f);
    auto out = std::make_shared<std::vector<float>>(block * size());
    return {"all_to_all", "gloo::alltoall", static_cast<int64_t>(block * size() * sizeof(float)),
            [this, in, out, block] {
              gloo::AlltoallOptions opts(ctx_);
              opts.setInput(in->data(), block * size());
              opts.setOutput(out->data(), block * size());
              opts.setTag(next_tag());
              gloo::alltoall(opts);
            }};
  }

 private:
  uint32_t next_tag() { return tag_++ % 1000000; }
  void barrier() {
    gloo::BarrierOptions opts(ctx_);
    opts.setTag(next_tag());
    gloo::barrier(opts);
  }
  double max_over_ranks(double v) {
    gloo::AllreduceOptions opts(ctx_);
    opts.setOutput(&v, 1);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
    opts.setTag(next_tag());
    gloo::allreduce(opts);
    return v;
  }

  std::shared_ptr<gloo::Context> ctx_;
  uint32_t tag_ = 1;
};

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  int rank = env_int("RANK", 0), size = env_int("WORLD_SIZE", 1);
  if (size < 2) {
    std::fprintf(stderr, "raw_gloo_bench: needs WORLD_SIZE >= 2 (got %d)\n", size);
    return 2;
  }
  try {
    gloo::transport::tcp::attr attr("127.0.0.1");
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(o.store_dir);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->setTimeout(std::chrono::seconds(env_int("OFL_COMM_TIMEOUT_S", 300)));
    ctx->connectFullMesh(store, dev);

    Bench bench(ctx);
    for (const std::string& op : o.ops) {
      for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
        Case c = op == "all_reduce"       ? bench.all_reduce(bytes)
                 : op == "all_gather"     ? bench.all_gather(bytes)
                 : op == "reduce_scatter" ? bench.reduce_scatter(bytes)
                 : op == "all_to_all"     ? bench.all_to_all(bytes)
                                          : Case{};
        if (!c.run) {
          std::fprintf(stderr, "raw_gloo_bench: unknown op %s\n", op.c_str());
          return 2;
        }
        int iters = o.iters > 0 ? o.iters : iters_for(c.bytes);
        int warmup = o.warmup >= 0 ? o.warmup : std::max(2, iters / 10);
        double seconds = bench.time(c, iters, warmup, o.rounds);
        if (rank == 0) {
          std::printf(
              "{\"op\": \"%s\", \"bytes\": %lld, \"seconds\": %.9g, \"ranks\": %d, \"iters\": %d, "
              "\"impl\": \"%s\"}\n",
              c.op.c_str(), static_cast<long long>(c.bytes), seconds, size, iters, c.impl.c_str());
          std::fflush(stdout);
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "raw_gloo_bench rank %d: %s\n", rank, e.what());
    return 1;
  }
  return 0;
}
