// Serves a GPT graph saved from Python (nn.Graph.save) over HTTP, with cpp-httplib and the public
// C++ API only. The graph takes token ids (-1, T) int64 and gives logits (-1, T, V) float32, as
// the example GPT's (examples/cpp/save_gpt.py saves one).
//
//   inference_server GRAPH_DIR [--host 127.0.0.1] [--port 8000] [--threads 16] [--max-batch 1]
//                    [--max-tokens 0] [--max-waiting 1024] [--max-connections 512]
//                    [--max-body-bytes 1048576] [--header-timeout-ms 2000]
//                    [--read-timeout-ms 5000] [--write-timeout-ms 5000]
//                    [--keep-alive-timeout-ms 5000] [--backlog 1024]
//
//   GET  /v1/health                                   {"block_size": T, "vocab_size": V}
//   POST /v1/logits   {"tokens": [1, 2, 3]}           {"logits": [V floats]} (after the last)
//   POST /v1/generate {"tokens": [...], "max_new_tokens": 16}   {"tokens": [16 ids]} (greedy)
//   POST /v1/completions {"prompt": "text" or [ids], "max_tokens": 16, "temperature": 1,
//                         "top_p": 1, "top_k": 0, "seed": 0, "stop": ["\n"], "stream": false}
//        OpenAI's completion ({"choices": [{"text", "tokens", "finish_reason"}], "usage"}; a stop
//        token ends the text without being in it; errors {"error": {"message", "type"}}), or
//        with "stream": true server-sent events, one a token ("data: {...}", then
//        "data: [DONE]"). Only for a model saved with save_gpt.py --generation (GRAPH_DIR/
//        generation): decoded with a KV cache and batched continuously (ofl::Generator): up to
//        --max-batch sequences at once, each admitted at the next step while its cache positions
//        fit --max-tokens, and leaving when done; the others wait (503 over --max-waiting, or
//        for one that could never fit). Each streamed request holds a connection meanwhile.
//
// Sequences shorter than T are padded on the right and read at their last position (the model
// is causal, so padding changes nothing before it); longer ones keep their last T tokens, as the
// Python model's generate(). --max-batch N > 1 gathers the requests waiting at once into one
// forward of up to N rows (the graph was saved with a dynamic batch); with 1, each request's
// thread calls forward itself, concurrently. Port 0 picks a free port; the first line printed
// is "listening on http://HOST:PORT". --help lists the flags; a bad one exits with status 2.
//
// Each connection has a thread of its own (--threads started at once, more as connections come,
// up to --max-connections held; with --max-batch 1, still --threads forwards at once), so a slow
// client holds only its own, and what it may hold it for is bounded: the request line and headers
// within --header-timeout-ms of the first byte, the whole request within --read-timeout-ms, its
// answer within --write-timeout-ms, an idle kept-alive connection --keep-alive-timeout-ms. At
// --max-connections, a new connection takes the place of the one waiting longest for its request
// to arrive whole, or is answered 503 at once when every one held is being answered (40 clients
// sending heads slowly held 16 fixed threads, and normal requests queued behind them for seconds).
// Every error is JSON {"error": reason}: 400 for a body that
// is not the JSON wanted or nests deeper than 32, 413 for one over --max-body-bytes, 411 / 415
// for a body without a Content-Length or with a coding, 408 / 431 for a late or oversized head.
// Over 600 lines: an example a reader follows from the request to the reply, so it stays one file.
#include <httplib.h>
#include <signal.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <oneflowlike/oneflowlike.h>
#include <nlohmann/json.hpp>
#include "guarded_server.h"
#include "json_limits.h"

namespace {

using Json = nlohmann::json;
using ofl_examples::ConnectionLimits;
using ofl_examples::DeadlineStream;
using ofl_examples::GuardedServer;
using ofl_examples::text_of;

// A bad request: answered with status 400 and its message.
struct BadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A request the server has no room for: answered with status 503 and its message.
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Lets at most n callers through at once; the others wait their turn.
class Gate {
 public:
  explicit Gate(int n) : free_(n) {}
  template <class F>
  auto through(F&& f) {
    {
      std::unique_lock lock(mutex_);
      open_.wait(lock, [this] { return free_ > 0; });
      --free_;
    }
    struct Leave {
      Gate& gate;
      ~Leave() {
        {
          std::lock_guard lock(gate.mutex_);
          ++gate.free_;
        }
        gate.open_.notify_one();
      }
    } leave{*this};
    return f();
  }

 private:
  std::mutex mutex_;
  std::condition_variable open_;
  int free_;
};

class Model {
 public:
  // With max_batch 1, at most `forwards` requests' threads run forward at once (as many as the
  // server had threads before connections had a thread each).
  Model(const std::string& dir, int max_batch, int forwards)
      : graph_(ofl::Graph::load(dir)), max_batch_(max_batch), forwards_(forwards) {
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
    if (max_batch_ <= 1) return forwards_.through([&] { return run({&row})[0]; });
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
  Gate forwards_;
  int64_t block_ = 0, vocab_ = 0, batch_ = 1;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Row*> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

// A /v1/completions request, filled in by the Scheduler's thread as its tokens are made.
struct Completion {
  std::vector<int64_t> prompt;
  ofl::Sampling sampling;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int64_t> tokens;         // made so far
  std::string finish_reason;           // "stop" or "length" once finished
  std::string error;                   // why it failed, if it did
  std::atomic<bool> cancelled{false};  // its client left
  bool done() const { return !finish_reason.empty() || !error.empty(); }
};

// Why a request ends unanswered when the server stops (503).
const char* const kStopping = "the server is stopping";

// Continuous batching: one thread drives an ofl::Generator, admitting waiting requests (first
// come, first served) whenever the batch and the token budget have room, and making one token a
// step for every running one; a finished or cancelled request leaves the batch at once.
class Scheduler {
 public:
  Scheduler(const std::string& dir, int max_batch, int64_t max_tokens, int max_waiting)
      : gen_(ofl::Generator::load(dir, max_batch, ofl::Device(), max_tokens)),
        max_waiting_(size_t(max_waiting)),
        worker_([this] { run(); }) {}
  ~Scheduler() {
    stop();
    worker_.join();
  }

  // Ends every request, waiting or running, with "the server is stopping" (their clients are
  // answered so); later ones are refused.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
  }

  // Queues a request; throws BadRequest for a bad one, Unavailable when it could never be
  // admitted under --max-tokens, when --max-waiting requests are waiting already, or when the
  // server is stopping.
  std::shared_ptr<Completion> submit(std::vector<int64_t> prompt, const ofl::Sampling& sampling) {
    if (std::string bad = gen_.invalid(prompt, sampling); !bad.empty()) throw BadRequest(bad);
    if (const int64_t need = gen_.positions_needed(prompt, sampling); need > gen_.max_tokens())
      throw Unavailable("the prompt's " + std::to_string(prompt.size()) + " tokens and " +
                        "max_tokens " + std::to_string(sampling.max_new_tokens) + " need " +
                        std::to_string(need) + " positions of the cache, over the server's " +
                        "--max-tokens " + std::to_string(gen_.max_tokens()));
    auto c = std::make_shared<Completion>();
    c->prompt = std::move(prompt);
    c->sampling = sampling;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) throw Unavailable(kStopping);
      if (waiting_.size() >= max_waiting_)
        throw Unavailable(std::to_string(waiting_.size()) +
                          " requests are waiting for room in the batch (--max-waiting)");
      waiting_.push_back(c);
    }
    ready_.notify_one();
    return c;
  }

  // Safe from any thread: they read only what loading set.
  const ofl::Generator& generator() const { return gen_; }

 private:
  void run() {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !waiting_.empty() || !running_.empty(); });
        if (stopping_) break;
      }
      // A failure of the model ends the running requests with it, and the loop goes on.
      try {
        admit();
        for (auto it = running_.begin(); it != running_.end();)
          if (it->second->cancelled) {
            gen_.cancel(it->first);
            it = running_.erase(it);
          } else {
            ++it;
          }
        if (running_.empty()) continue;
        for (const ofl::Made& m : gen_.step()) {
          const std::shared_ptr<Completion>& c = running_.at(m.id);
          {
            std::lock_guard lock(c->mutex);
            c->tokens.push_back(m.token);
            c->finish_reason = m.finish_reason;
          }
          c->changed.notify_all();
          if (m.finished) running_.erase(m.id);
        }
      } catch (const std::exception& e) {
        fail_running(std::string("generation failed: ") + e.what());
      }
    }
    fail_running(kStopping);
    std::lock_guard lock(mutex_);
    for (const auto& c : waiting_) finish(*c, kStopping);
    waiting_.clear();
  }

  // Waiting requests join the batch, first come first served, while there is room.
  void admit() {
    std::lock_guard lock(mutex_);
    while (!waiting_.empty()) {
      const std::shared_ptr<Completion>& c = waiting_.front();
      if (!c->cancelled) {
        if (!gen_.refusal(c->prompt, c->sampling).empty()) break;  // waits for room
        running_[gen_.add(c->prompt, c->sampling)] = c;
      }
      waiting_.pop_front();
    }
  }

  static void finish(Completion& c, const std::string& error) {
    {
      std::lock_guard lock(c.mutex);
      c.error = error;
    }
    c.changed.notify_all();
  }

  // Ends the running requests with `error`; never throws.
  void fail_running(const std::string& error) noexcept {
    for (const auto& [id, c] : running_) {
      try {
        gen_.cancel(id);
      } catch (const std::exception&) {  // (the slot is lost; the others stay usable)
      }
      finish(*c, error);
    }
    running_.clear();
  }

  ofl::Generator gen_;
  size_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Completion>> waiting_;
  bool stopping_ = false;
  std::map<int64_t, std::shared_ptr<Completion>> running_;  // the worker's own
  std::thread worker_;
};

std::vector<int64_t> tokens_of(const Json& body) {
  if (!body.is_object() || !body.contains("tokens") || !body["tokens"].is_array())
    throw BadRequest("the body needs \"tokens\": a list of token ids");
  std::vector<int64_t> tokens;
  for (const Json& t : body["tokens"]) {
    // (An unsigned one over int64's range would wrap to a negative id.)
    if (!t.is_number_integer() || (t.is_number_unsigned() && t.get<uint64_t>() > INT64_MAX))
      throw BadRequest("\"tokens\" holds " + t.dump() + ", not an id");
    tokens.push_back(t.get<int64_t>());
  }
  return tokens;
}

int64_t argmax(const std::vector<float>& v) {
  return std::max_element(v.begin(), v.end()) - v.begin();
}

// The bodies here nest 2 deep; nlohmann/json recurses once per level when it copies, dumps or
// destroys a value, so a deeper body is refused before it is parsed.
constexpr size_t kMaxJsonDepth = 32;

// Runs `answer` on the request's JSON body; a bad body or request gives 400 with the reason, a
// failure of the model 500.
Json body_of(const httplib::Request& req) {
  if (ofl_examples::json_nesting_depth(req.body, kMaxJsonDepth) > kMaxJsonDepth)
    throw BadRequest("the body nests arrays and objects more than " +
                     std::to_string(kMaxJsonDepth) + " deep");
  Json body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw BadRequest("the body is not JSON");
  return body;
}

// An error's JSON: {"error": reason}, or OpenAI's {"error": {"message": reason, "type": ...}} on
// the routes of its API (its clients show the message from there).
Json error_json(const std::string& reason, int status, bool openai) {
  if (!openai) return {{"error", reason}};
  const char* type = status == 400   ? "invalid_request_error"
                     : status == 503 ? "server_overloaded"
                                     : "server_error";
  return {{"error", {{"message", reason}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
}

// Runs `answer` on the request's JSON body, which either returns the reply or has set the
// response itself (a stream) and returns null; a bad body or request gives 400 with the reason,
// no room 503, a failure of the model 500 (in OpenAI's shape with `openai`).
template <class F>
void handle(const httplib::Request& req, httplib::Response& res, F&& answer, bool openai = false) {
  Json reply;
  try {
    reply = answer(body_of(req));
    if (reply.is_null()) return;
  } catch (const BadRequest& e) {
    res.status = 400;
    reply = error_json(e.what(), 400, openai);
  } catch (const Unavailable& e) {
    res.status = 503;
    reply = error_json(e.what(), 503, openai);
  } catch (const std::exception& e) {
    res.status = 500;
    reply = error_json(e.what(), 500, openai);
  }
  res.set_content(text_of(reply), "application/json");
}

// --- /v1/completions ---

// body[key]: a number in [lo, hi] (default `fallback` when absent or null).
double number_in(const Json& body, const char* key, double fallback, double lo, double hi) {
  if (!body.contains(key) || body[key].is_null()) return fallback;
  const Json& v = body[key];
  if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi))
    throw BadRequest(std::string("\"") + key + "\" is " + v.dump() + ", not a number in [" +
                     Json(lo).dump() + ", " + Json(hi).dump() + "]");
  return v.get<double>();
}

// body[key]: an integer in [lo, hi] (default `fallback` when absent or null).
int64_t integer_in(const Json& body, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  if (!body.contains(key) || body[key].is_null()) return fallback;
  const Json& v = body[key];
  const bool fits = v.is_number_integer() &&
                    !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) &&
                    v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  if (!fits)
    throw BadRequest(std::string("\"") + key + "\" is " + v.dump() + ", not an integer in [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v.get<int64_t>();
}

// A token given as an id, or as text of exactly one token in the saved vocabulary.
int64_t token_of(const Json& v, const ofl::Generator& gen, const char* what) {
  if (v.is_string()) {
    if (!gen.has_vocabulary())
      throw BadRequest(std::string(what) + " " +
                       v.dump(-1, ' ', false, Json::error_handler_t::replace) +
                       " is text, but the model was saved without a vocabulary: give token ids");
    std::vector<int64_t> ids;
    try {
      ids = gen.encode(v.get<std::string>());
    } catch (const ofl::Error& e) {
      throw BadRequest(e.what());
    }
    if (ids.size() != 1) throw BadRequest(std::string(what) + " " + v.dump() + " is not one token");
    return ids[0];
  }
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
    throw BadRequest(std::string(what) + " " + v.dump() + " is not a token id");
  return v.get<int64_t>();
}

// The prompt of a completions body: token ids, or text in the saved vocabulary.
std::vector<int64_t> prompt_of(const Json& body, const ofl::Generator& gen) {
  if (!body.is_object() || !body.contains("prompt"))
    throw BadRequest("the body needs \"prompt\": text, or a list of token ids");
  const Json& p = body["prompt"];
  if (p.is_string()) {
    if (!gen.has_vocabulary())
      throw BadRequest("the model was saved without a vocabulary: give the prompt as token ids");
    try {
      return gen.encode(p.get<std::string>());
    } catch (const ofl::Error& e) {
      throw BadRequest(e.what());
    }
  }
  if (!p.is_array())
    throw BadRequest(std::string("\"prompt\" is ") + p.type_name() + ", not text or token ids");
  std::vector<int64_t> ids;
  for (const Json& t : p) {
    if (t.is_string())
      throw BadRequest("\"prompt\" holds text in a list: give one string or token ids");
    ids.push_back(token_of(t, gen, "\"prompt\" holds"));
  }
  return ids;
}

constexpr size_t kMaxStops = 16;

ofl::Sampling sampling_of(const Json& body, const ofl::Generator& gen) {
  if (body.contains("n") && !(body["n"].is_number_integer() && body["n"].get<int64_t>() == 1))
    throw BadRequest("\"n\" is " + body["n"].dump() + ": one completion a request (n = 1)");
  ofl::Sampling s;
  s.max_new_tokens = integer_in(body, "max_tokens", 16, 1, gen.length() + 1);
  s.temperature = number_in(body, "temperature", 1.0, 0, 100);
  s.top_p = number_in(body, "top_p", 1.0, 0, 1);
  if (s.top_p == 0) throw BadRequest("\"top_p\" is 0: give a probability in (0, 1]");
  s.top_k = integer_in(body, "top_k", 0, 0, gen.vocab_size());
  s.seed = integer_in(body, "seed", 0, INT64_MIN, INT64_MAX);
  if (body.contains("stop") && !body["stop"].is_null()) {
    const Json& stop = body["stop"];
    const Json list = stop.is_array() ? stop : Json::array({stop});
    if (list.size() > kMaxStops)
      throw BadRequest("\"stop\" holds " + std::to_string(list.size()) + " tokens, over " +
                       std::to_string(kMaxStops));
    for (const Json& t : list) s.stop.push_back(token_of(t, gen, "\"stop\" holds"));
  }
  return s;
}

// The choice of a completion (OpenAI's shape, with the token ids beside the text).
Json choice_of(const ofl::Generator& gen, const std::vector<int64_t>& tokens,
               const std::string& finish_reason) {
  return Json{{"index", 0},
              {"text", gen.has_vocabulary() ? gen.decode(tokens) : ""},
              {"tokens", tokens},
              {"logprobs", nullptr},
              {"finish_reason", finish_reason.empty() ? Json(nullptr) : Json(finish_reason)}};
}

std::atomic<int64_t> completion_count{0};

Json completion_head() {
  return Json{{"id", "cmpl-" + std::to_string(completion_count++)},
              {"object", "text_completion"},
              {"created", std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count()},
              {"model", "oneflowlike"}};
}

// Answers a /v1/completions body: the whole completion as JSON, or (stream: true) server-sent
// events, one a token, as the scheduler makes them ("data: {...}\n\n", then "data: [DONE]").
Json complete(Scheduler* scheduler, const Json& body, httplib::Response& res) {
  if (!scheduler)
    throw BadRequest("the model was saved without generation/: save it with save_gpt.py " +
                     std::string("--generation to serve /v1/completions"));
  const ofl::Generator& gen = scheduler->generator();
  const std::vector<int64_t> prompt = prompt_of(body, gen);
  const ofl::Sampling sampling = sampling_of(body, gen);
  const Json stream = body.value("stream", Json(false));
  if (!stream.is_boolean()) throw BadRequest("\"stream\" is " + stream.dump() + ", not a bool");
  std::shared_ptr<Completion> c = scheduler->submit(prompt, sampling);
  Json head = completion_head();
  if (!stream.get<bool>()) {
    std::unique_lock lock(c->mutex);
    c->changed.wait(lock, [&] { return c->done(); });
    if (c->error == kStopping) throw Unavailable(c->error);
    if (!c->error.empty()) throw std::runtime_error(c->error);
    // As OpenAI's: the stop token ends the text but is not in it.
    std::vector<int64_t> shown = c->tokens;
    if (c->finish_reason == "stop") shown.pop_back();
    head["choices"] = Json::array({choice_of(gen, shown, c->finish_reason)});
    head["usage"] = {{"prompt_tokens", prompt.size()},
                     {"completion_tokens", c->tokens.size()},
                     {"total_tokens", prompt.size() + c->tokens.size()}};
    return head;
  }
  auto events = [c, head, &gen, sent = size_t(0)](size_t, httplib::DataSink& sink) mutable {
    std::vector<int64_t> fresh;
    std::string finish, error;
    {
      std::unique_lock lock(c->mutex);
      c->changed.wait(lock, [&] { return c->tokens.size() > sent || c->done(); });
      fresh.assign(c->tokens.begin() + std::ptrdiff_t(sent), c->tokens.end());
      sent = c->tokens.size();
      finish = c->finish_reason;
      error = c->error;
    }
    std::string text;
    for (size_t i = 0; i < fresh.size(); ++i) {
      const bool ends = i + 1 == fresh.size();
      // The stop token's event says "stop" with no text.
      const std::vector<int64_t> shown =
          ends && finish == "stop" ? std::vector<int64_t>{} : std::vector<int64_t>{fresh[i]};
      Json event = head;
      event["choices"] = Json::array({choice_of(gen, shown, ends ? finish : "")});
      text += "data: " + text_of(event) + "\n\n";
    }
    if (!error.empty()) text += "data: " + text_of(error_json(error, 500, true)) + "\n\n";
    const bool last = !finish.empty() || !error.empty();
    if (last) text += "data: [DONE]\n\n";
    if (DeadlineStream::serving) DeadlineStream::serving->restart_write_clock();
    if (!sink.write(text.data(), text.size())) return false;
    if (last) sink.done();
    return true;
  };
  // A client gone mid-stream leaves the batch at the next step.
  res.set_chunked_content_provider("text/event-stream", std::move(events), [c](bool success) {
    if (!success) c->cancelled = true;
  });
  return Json();  // the stream is the answer
}

struct Options {
  std::string dir, host = "127.0.0.1";
  int port = 8000, threads = 16, max_batch = 1, backlog = 1024, max_waiting = 1024;
  int max_connections = 512;
  int64_t max_tokens = 0;
  // httplib's 5 s for each recv() and send(), now for the whole request and the whole answer.
  int64_t read_timeout_ms = 5000, write_timeout_ms = 5000, keep_alive_timeout_ms = 5000;
  int64_t header_timeout_ms = 2000;
  size_t max_body_bytes = 1 << 20;
};

// Parses the command line into `opt`; a return value is the exit status (0 after --help, 2 for
// a bad flag or value, with CLI11's message and usage hint on stderr).
std::optional<int> parse_options(int argc, char** argv, Options& opt) {
  CLI::App app{"Serves a GPT graph saved by nn.Graph.save over HTTP (/v1/health, /v1/logits, " +
                   std::string("/v1/generate, /v1/completions)."),
               "inference_server"};
  app.add_option("GRAPH_DIR", opt.dir, "the saved graph's directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--host", opt.host, "address to listen on")->capture_default_str();
  app.add_option("--port", opt.port, "port to listen on; 0 picks a free one")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--threads", opt.threads,
                 "threads started at once; with --max-batch 1, forwards run at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--max-connections", opt.max_connections,
                 "connections held at once, a thread each; past it, the one waiting longest for "
                 "its request gives way, or 503 when all are being answered")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  app.add_option("--max-batch", opt.max_batch,
                 "rows of one batched forward (1: no batching), and sequences generated at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--max-tokens", opt.max_tokens,
                 "cache positions the running sequences may reserve (0: max-batch x block)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 40))
      ->capture_default_str();
  app.add_option("--max-waiting", opt.max_waiting,
                 "completions waiting for room in the batch; more are answered 503")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-body-bytes", opt.max_body_bytes, "a larger request body is answered 413")
      ->check(CLI::Range(size_t(1), size_t(1) << 30))
      ->capture_default_str();
  app.add_option("--header-timeout-ms", opt.header_timeout_ms,
                 "time to send the request line and headers from the request's first byte")
      ->check(CLI::Range(int64_t(1), int64_t(3600000)))
      ->capture_default_str();
  app.add_option("--read-timeout-ms", opt.read_timeout_ms,
                 "time to send a whole request (line, headers, body) from its first byte")
      ->check(CLI::Range(int64_t(1), int64_t(3600000)))
      ->capture_default_str();
  app.add_option("--write-timeout-ms", opt.write_timeout_ms, "time to take a whole response")
      ->check(CLI::Range(int64_t(1), int64_t(3600000)))
      ->capture_default_str();
  app.add_option("--keep-alive-timeout-ms", opt.keep_alive_timeout_ms,
                 "how long an idle connection keeps its thread")
      ->check(CLI::Range(int64_t(1), int64_t(3600000)))
      ->capture_default_str();
  app.add_option("--backlog", opt.backlog, "connections waiting to be accepted")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (const std::optional<int> status = parse_options(argc, argv, opt)) return *status;
  ConnectionLimits limits{std::chrono::milliseconds(opt.read_timeout_ms),
                          std::chrono::milliseconds(opt.write_timeout_ms),
                          std::chrono::milliseconds(opt.keep_alive_timeout_ms), opt.max_body_bytes};
  limits.header_timeout = std::chrono::milliseconds(opt.header_timeout_ms);
  // SIGTERM and SIGINT stop the server: the handler (which may run on any thread, the
  // library's own included) only writes to a pipe; a thread reading it calls stop().
  static int stop_pipe[2];
  if (pipe(stop_pipe) != 0) return 1;
  struct sigaction on_stop {};
  on_stop.sa_handler = [](int) { (void)!write(stop_pipe[1], "s", 1); };
  sigaction(SIGTERM, &on_stop, nullptr);
  sigaction(SIGINT, &on_stop, nullptr);
  try {
    Model model(opt.dir, opt.max_batch, opt.threads);
    // Generation, when the model was saved for it (save_gpt.py --generation).
    std::unique_ptr<Scheduler> scheduler;
    const std::string generation = opt.dir + "/generation";
    if (std::ifstream(generation + "/generation.json"))
      scheduler =
          std::make_unique<Scheduler>(generation, opt.max_batch, opt.max_tokens, opt.max_waiting);
    else if (opt.max_tokens)
      throw std::runtime_error("--max-tokens: " + generation +
                               " holds no model saved for generation (save_gpt.py --generation)");
    GuardedServer server(limits, size_t(opt.threads), size_t(opt.max_connections));
    server.set_tcp_nodelay(true);  // the headers and the body are two writes: no Nagle wait
    server.Get("/v1/health", [&](const httplib::Request&, httplib::Response& res) {
      Json health{{"status", "ok"},
                  {"block_size", model.block_size()},
                  {"vocab_size", model.vocab_size()},
                  {"generation", scheduler != nullptr}};
      if (scheduler) health["max_tokens"] = scheduler->generator().max_tokens();
      res.set_content(health.dump(), "application/json");
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
    server.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
      handle(
          req, res, [&](const Json& body) { return complete(scheduler.get(), body, res); },
          /*openai=*/true);
    });
    const std::string& host = opt.host;
    const int bound = opt.port == 0                         ? server.bind_to_any_port(host)
                      : server.bind_to_port(host, opt.port) ? opt.port
                                                            : -1;
    if (bound < 0)
      throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(opt.port));
    if (!server.set_backlog(opt.backlog))
      throw std::runtime_error("cannot set a listen backlog of " + std::to_string(opt.backlog) +
                               ": " + std::strerror(errno));
    std::thread stopper([&] {
      char byte;
      while (read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
      }
      if (scheduler) scheduler->stop();  // its waiting and streaming clients are answered
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
