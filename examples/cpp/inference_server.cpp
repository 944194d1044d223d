// Serves a GPT graph saved from Python (nn.Graph.save) over HTTP, with cpp-httplib and the public
// C++ API only. The graph takes token ids (-1, T) int64 and gives logits (-1, T, V) float32, as
// the example GPT's (examples/cpp/save_gpt.py saves one).
//
//   inference_server GRAPH_DIR [--host 127.0.0.1] [--port 8000] [--threads 16] [--max-batch 1]
//
//   GET  /v1/health                                   {"block_size": T, "vocab_size": V}
//   POST /v1/logits   {"tokens": [1, 2, 3]}           {"logits": [V floats]} (after the last)
//   POST /v1/generate {"tokens": [...], "max_new_tokens": 16}   {"tokens": [16 ids]} (greedy)
//
// Sequences shorter than T are padded on the right and read at their last position (the model
// is causal, so padding changes nothing before it); longer ones keep their last T tokens, as the
// Python model's generate(). --max-batch N > 1 gathers the requests waiting at once into one
// forward of up to N rows (the graph was saved with a dynamic batch); with 1, each request's
// thread calls forward itself, concurrently. Port 0 picks a free port; the first line printed
// is "listening on http://HOST:PORT".
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <oneflowlike/oneflowlike.h>
#include <nlohmann/json.hpp>

namespace {

using Json = nlohmann::json;

// A bad request: answered with status 400 and its message.
struct BadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Model {
 public:
  Model(const std::string& dir, int max_batch)
      : graph_(ofl::Graph::load(dir)), max_batch_(max_batch) {
    const auto& in = graph_.input_infos();
    const auto& out = graph_.output_infos();
    if (in.size() != 1 || in[0].dtype != ofl::DType::kInt64 || in[0].shape.size() != 2 ||
        out.size() != 1 || out[0].dtype != ofl::DType::kFloat32 || out[0].shape.size() != 3)
      throw ofl::Error("the graph in " + dir + " is " + graph_.str() +
                       ", not token ids (-1, T) int64 -> logits (-1, T, V) float32");
    if (max_batch > 1 && !graph_.dynamic_batch())
      throw ofl::Error("--max-batch " + std::to_string(max_batch) + " needs a graph saved with a " +
                       "dynamic batch; " + dir + " runs one batch size only");
    block_ = in[0].shape[1];
    vocab_ = out[0].shape[2];
    batch_ = graph_.dynamic_batch() ? 1 : graph_.saved_batch();
    graph_.warmup(graph_.dynamic_batch() ? 1 : 0);
    if (max_batch_ > 1) worker_ = std::thread([this] { serve_batches(); });
  }
  ~Model() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  int64_t block_size() const { return block_; }
  int64_t vocab_size() const { return vocab_; }

  // The logits after the last of `tokens`.
  std::vector<float> next_logits(const std::vector<int64_t>& tokens) {
    if (tokens.empty()) throw BadRequest("\"tokens\" is empty");
    for (int64_t t : tokens)
      if (t < 0 || t >= vocab_)
        throw BadRequest("token " + std::to_string(t) + " is not in [0, " + std::to_string(vocab_) +
                         ")");
    Row row;
    const size_t keep = std::min<size_t>(tokens.size(), size_t(block_));
    row.ids.assign(tokens.end() - keep, tokens.end());
    row.last = int64_t(keep) - 1;
    row.ids.resize(size_t(block_), 0);
    if (max_batch_ <= 1) return run({&row})[0];
    std::future<std::vector<float>> answer = row.answer.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(&row);
    }
    ready_.notify_one();
    return answer.get();
  }

 private:
  struct Row {
    std::vector<int64_t> ids;  // block_ ids, padded
    int64_t last = 0;          // the position whose logits are wanted
    std::promise<std::vector<float>> answer;
  };

  // One forward over the rows (padded to the graph's batch when it has a fixed one).
  std::vector<std::vector<float>> run(const std::vector<Row*>& rows) {
    const int64_t n = std::max<int64_t>(int64_t(rows.size()), batch_);
    std::vector<int64_t> ids(size_t(n * block_), 0);
    for (size_t r = 0; r < rows.size(); ++r)
      std::copy(rows[r]->ids.begin(), rows[r]->ids.end(), ids.begin() + int64_t(r) * block_);
    const ofl::Tensor logits =
        graph_.forward({ofl::Tensor::from_blob(ids.data(), {n, block_}, ofl::DType::kInt64)})[0]
            .contiguous();
    const float* p = logits.data<float>();
    std::vector<std::vector<float>> out;
    for (size_t r = 0; r < rows.size(); ++r) {
      const float* at = p + (int64_t(r) * block_ + rows[r]->last) * vocab_;
      out.emplace_back(at, at + vocab_);
    }
    return out;
  }

  void serve_batches() {
    for (;;) {
      std::vector<Row*> rows;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_ && queue_.empty()) return;
        while (!queue_.empty() && int(rows.size()) < max_batch_) {
          rows.push_back(queue_.front());
          queue_.pop_front();
        }
      }
      try {
        std::vector<std::vector<float>> out = run(rows);
        for (size_t r = 0; r < rows.size(); ++r) rows[r]->answer.set_value(std::move(out[r]));
      } catch (...) {
        for (Row* row : rows) row->answer.set_exception(std::current_exception());
      }
    }
  }

  ofl::Graph graph_;
  int max_batch_;
  int64_t block_ = 0, vocab_ = 0, batch_ = 1;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Row*> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

std::vector<int64_t> tokens_of(const Json& body) {
  if (!body.is_object() || !body.contains("tokens") || !body["tokens"].is_array())
    throw BadRequest("the body needs \"tokens\": a list of token ids");
  std::vector<int64_t> tokens;
  for (const Json& t : body["tokens"]) {
    if (!t.is_number_integer()) throw BadRequest("\"tokens\" holds " + t.dump() + ", not an id");
    tokens.push_back(t.get<int64_t>());
  }
  return tokens;
}

int64_t argmax(const std::vector<float>& v) {
  return std::max_element(v.begin(), v.end()) - v.begin();
}

// Runs `answer` on the request's JSON body; a bad body or request gives 400 with the reason, a
// failure of the model 500.
template <class F>
void handle(const httplib::Request& req, httplib::Response& res, F&& answer) {
  Json reply;
  try {
    const Json body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) throw BadRequest("the body is not JSON");
    reply = answer(body);
  } catch (const BadRequest& e) {
    res.status = 400;
    reply = {{"error", e.what()}};
  } catch (const std::exception& e) {
    res.status = 500;
    reply = {{"error", e.what()}};
  }
  res.set_content(reply.dump(), "application/json");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0]
              << " GRAPH_DIR [--host H] [--port P] [--threads N] [--max-batch N]\n";
    return 2;
  }
  std::string dir = argv[1], host = "127.0.0.1";
  int port = 8000, threads = 16, max_batch = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--host")
      host = value;
    else if (flag == "--port")
      port = std::stoi(value);
    else if (flag == "--threads")
      threads = std::stoi(value);
    else if (flag == "--max-batch")
      max_batch = std::stoi(value);
    else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  // SIGTERM and SIGINT stop the server: the handler (which may run on any thread, the
  // library's own included) only writes to a pipe; a thread reading it calls stop().
  static int stop_pipe[2];
  if (pipe(stop_pipe) != 0) return 1;
  struct sigaction on_stop {};
  on_stop.sa_handler = [](int) { (void)!write(stop_pipe[1], "s", 1); };
  sigaction(SIGTERM, &on_stop, nullptr);
  sigaction(SIGINT, &on_stop, nullptr);
  try {
    Model model(dir, max_batch);
    httplib::Server server;
    server.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
    server.set_payload_max_length(1 << 20);
    server.set_tcp_nodelay(true);  // the headers and the body are two writes: no Nagle wait
    server.Get("/v1/health", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(Json{{"status", "ok"},
                           {"block_size", model.block_size()},
                           {"vocab_size", model.vocab_size()}}
                          .dump(),
                      "application/json");
    });
    server.Post("/v1/logits", [&](const httplib::Request& req, httplib::Response& res) {
      handle(req, res, [&](const Json& body) {
        return Json{{"logits", model.next_logits(tokens_of(body))}};
      });
    });
    server.Post("/v1/generate", [&](const httplib::Request& req, httplib::Response& res) {
      handle(req, res, [&](const Json& body) {
        std::vector<int64_t> tokens = tokens_of(body);
        const Json n = body.value("max_new_tokens", Json(16));
        if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > 1024)
          throw BadRequest("\"max_new_tokens\" is " + n.dump() + ", not a count up to 1024");
        std::vector<int64_t> made;
        for (int64_t i = 0; i < n.get<int64_t>(); ++i) {
          made.push_back(argmax(model.next_logits(tokens)));
          tokens.push_back(made.back());
        }
        return Json{{"tokens", made}};
      });
    });
    const int bound = port == 0                         ? server.bind_to_any_port(host)
                      : server.bind_to_port(host, port) ? port
                                                        : -1;
    if (bound < 0)
      throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port));
    std::thread stopper([&] {
      char byte;
      while (read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
      }
      server.stop();
    });
    stopper.detach();
    std::cout << "listening on http://" << host << ":" << bound << std::endl;
    server.listen_after_bind();
  } catch (const std::exception& e) {
    std::cerr << "inference_server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
