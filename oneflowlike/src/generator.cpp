#include "oneflowlike/generator.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/autograd/grad_mode.h"
#include "oneflowlike/graph.h"
#include "oneflowlike/src/api_util.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/index_ops.h"
#include "ops/join.h"
#include "ops/sampling.h"
#include "ops/shape_ops.h"

namespace ofl {

using api::fail;
using api::guarded;
using api::to_internal;
using Json = nlohmann::json;

namespace {

Tensor wrap(internal::Tensor t) {
  return Tensor(std::make_shared<const internal::Tensor>(std::move(t)));
}

// A (rows,) or (rows, n) tensor of `values` on `device`.
template <class T>
Tensor host_tensor(const std::vector<T>& values, std::vector<int64_t> shape, const Device& device) {
  return Tensor::from_vector(values, std::move(shape)).to(device);
}

// The byte length of the UTF-8 character starting with `lead` (1 for a stray byte).
size_t utf8_length(unsigned char lead) {
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

}  // namespace

Tensor sample_tokens(const Tensor& logits, const Tensor& seeds, const Tensor& steps,
                     const Tensor& temperature, const Tensor& top_k, const Tensor& top_p) {
  return guarded([&] {
    internal::autograd::NoGradGuard no_grad;
    return wrap(internal::sample_tokens(logits.impl(), seeds.impl(), steps.impl(),
                                        temperature.impl(), top_k.impl(), top_p.impl()));
  });
}

// A running sequence: the slot it holds is its index in Impl::running.
struct Sequence {
  int64_t id = 0;
  std::vector<int64_t> prompt;
  Sampling sampling;
  std::vector<int64_t> made;
  int64_t written = 0;  // positions of the cache written: its prompt's, then its tokens'
  // The token the next step feeds: the prompt's next (a prefill a token a step), else its last.
  int64_t next_input() const {
    return written < int64_t(prompt.size()) ? prompt[size_t(written)] : made.back();
  }
  // Whether the step that writes position `written` gives the logits of its next token.
  bool samples() const { return written + 1 >= int64_t(prompt.size()); }
};

struct Generator::Impl {
  std::string dir;
  Device device;
  int64_t length = 0, vocab = 0, n_layer = 0, max_batch = 0, max_tokens = 0;
  // The step graph's batch when it has a fixed one (a global graph): every step runs that many
  // rows, the free slots' on dummy tokens. 0: the running sequences' rows only.
  int64_t fixed_batch = 0;
  std::shared_ptr<internal::BoxingContext> ctx;  // a global graph's world; null for a local one
  // The graphs by the span of the cache they attend to (ascending): the steps', and the
  // prefills' (prompts of up to span tokens), when there are any that take any batch; else
  // prompts are fed a token a step through the steps.
  std::vector<std::pair<int64_t, Graph>> prefills, steps;
  Json graphs;                          // generation.json's "graphs"
  std::vector<internal::Tensor> cache;  // k0, v0, ...: this rank's (slots, length, C) of each
  std::vector<std::string> chars;       // token i's UTF-8 text
  std::map<std::string, int64_t> token_of;
  std::vector<Sequence> running;
  int64_t next_id = 0, reserved = 0;
  Tensor last_logits;

  [[noreturn]] void damaged(const std::string& why) const {
    fail("Generator", dir, "/generation.json: ", why);
  }

  void read_meta() {
    std::ifstream in(dir + "/generation.json");
    if (!in)
      fail("Generator", dir, "/generation.json cannot be read: not a folder saved by ",
           "save_for_generation (examples/char_gpt/model.py)");
    std::stringstream text;
    text << in.rdbuf();
    const Json meta = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!meta.is_object()) damaged("not a JSON object");
    if (meta.value("format", "") != "oneflowlike-generation")
      damaged("\"format\" is not \"oneflowlike-generation\"");
    if (meta.value("format_version", 0) != 1)
      damaged("format_version " + meta.value("format_version", Json()).dump() +
              " (this build reads 1)");
    for (const char* key : {"length", "vocab_size", "n_layer", "n_embd"})
      if (!meta.contains(key) || !meta[key].is_number_integer() || meta[key].get<int64_t>() < 1)
        damaged(std::string("\"") + key + "\" is not a positive integer");
    length = meta["length"].get<int64_t>();
    vocab = meta["vocab_size"].get<int64_t>();
    n_layer = meta["n_layer"].get<int64_t>();
    if (meta.contains("chars")) {
      const Json& c = meta["chars"];
      if (!c.is_array() || int64_t(c.size()) != vocab)
        damaged("\"chars\" is not a list of vocab_size (" + std::to_string(vocab) + ") strings");
      for (const Json& ch : c) {
        if (!ch.is_string() || ch.get<std::string>().empty())
          damaged("\"chars\" holds " + ch.dump() + ", not a character");
        if (!token_of.emplace(ch.get<std::string>(), int64_t(chars.size())).second)
          damaged("\"chars\" holds " + ch.dump() + " twice");
        chars.push_back(ch.get<std::string>());
      }
    }
    graphs = meta.value("graphs", Json());
    if (!graphs.is_object() || !graphs.contains("step"))
      damaged("\"graphs\" does not list the step graphs");
  }

  // generation.json's graphs of one kind, loaded (a prefill's takes span tokens a row).
  std::vector<std::pair<int64_t, Graph>> load_graphs(const char* kind, int64_t cache_tensors,
                                                     const World* world) {
    std::vector<std::pair<int64_t, Graph>> out;
    const Json list = graphs.value(kind, Json::array());
    if (!list.is_array()) damaged(std::string("\"graphs\".\"") + kind + "\" is not a list");
    for (const Json& entry : list) {
      const bool fits = entry.is_array() && entry.size() == 2 && entry[0].is_number_integer() &&
                        entry[1].is_string();
      const int64_t span = fits ? entry[0].get<int64_t>() : 0;
      if (!fits || span < 1 || span > length || (!out.empty() && span <= out.back().first))
        damaged(std::string("\"graphs\".\"") + kind + "\" holds " + entry.dump() +
                ", not [span, folder] with spans rising up to the length");
      const int64_t tokens = std::string(kind) == "prefill" ? span : 1;
      out.emplace_back(span, load_graph(entry[1].get<std::string>(), tokens, cache_tensors, world));
    }
    if ((std::string(kind) == "step" || !out.empty()) &&
        (out.empty() || out.back().first != length))
      damaged(std::string("no ") + kind + " graph spans the whole cache (" +
              std::to_string(length) + " positions)");
    return out;
  }

  // The (span, graph) of the least span of `graphs` that covers `positions`.
  static const std::pair<int64_t, Graph>& covering(
      const std::vector<std::pair<int64_t, Graph>>& graphs, int64_t positions) {
    for (const auto& entry : graphs)
      if (entry.first >= positions) return entry;
    return graphs.back();
  }

  // The graph at dir/name, checked to take (idx, positions, last, k0, v0, ...) and give the
  // logits (-1, V).
  Graph load_graph(const std::string& name, int64_t tokens, int64_t cache_tensors,
                   const World* world) {
    Graph g = world ? Graph::load(dir + "/" + name, *world, device)
                    : Graph::load(dir + "/" + name, device);
    const auto& in = g.input_infos();
    const auto& out = g.output_infos();
    const int64_t b = g.dynamic_batch() || in.empty() || in[0].shape.empty() ? -1 : in[0].shape[0];
    bool fits = int64_t(in.size()) == 3 + cache_tensors && out.size() == 1 &&
                out[0].shape == std::vector<int64_t>{b, vocab} &&
                in[0].shape == std::vector<int64_t>{b, tokens} && in[1].shape == in[0].shape &&
                in[2].shape == std::vector<int64_t>{b};
    for (size_t i = 3; fits && i < in.size(); ++i)
      fits = in[i].shape.size() == 3 && in[i].shape[0] == b && in[i].shape[1] == length &&
             in[i].shape == in[3].shape && in[i].dtype == in[3].dtype;
    if (!fits)
      fail("Generator", dir, "/", name, " is ", g.str(), ", not (idx, positions (B, ", tokens,
           "), last (B,), ", cache_tensors, " cache tensors (B, ", length, ", C)) -> logits (B, ",
           vocab, ")");
    return g;
  }

  std::string invalid(const std::vector<int64_t>& prompt, const Sampling& s) const {
    if (prompt.empty()) return "the prompt is empty";
    for (int64_t t : prompt)
      if (t < 0 || t >= vocab)
        return "token " + std::to_string(t) + " is not in [0, " + std::to_string(vocab) + ")";
    if (int64_t(prompt.size()) > length)
      return "a prompt of " + std::to_string(prompt.size()) + " tokens exceeds the " +
             std::to_string(length) + " positions of the cache";
    if (!(s.temperature >= 0)) return "temperature " + std::to_string(s.temperature) + " < 0";
    if (s.top_k < 0) return "top_k " + std::to_string(s.top_k) + " < 0";
    if (!(s.top_p > 0 && s.top_p <= 1))
      return "top_p " + std::to_string(s.top_p) + " is not in (0, 1]";
    if (s.max_new_tokens < 1) return "max_new_tokens " + std::to_string(s.max_new_tokens) + " < 1";
    for (int64_t t : s.stop)
      if (t < 0 || t >= vocab)
        return "stop token " + std::to_string(t) + " is not in [0, " + std::to_string(vocab) + ")";
    return "";
  }

  // The cache positions a sequence may fill, which it reserves of max_tokens: its prompt and
  // every token but the last (never fed back), within the slot's length.
  int64_t positions_needed(const std::vector<int64_t>& prompt, const Sampling& s) const {
    const int64_t fed_back = std::clamp<int64_t>(s.max_new_tokens - 1, 0, length);
    return std::min<int64_t>(int64_t(prompt.size()) + fed_back, length);
  }

  std::string refusal(const std::vector<int64_t>& prompt, const Sampling& s) const {
    if (std::string bad = invalid(prompt, s); !bad.empty()) return bad;
    if (positions_needed(prompt, s) > max_tokens)
      return "the prompt's " + std::to_string(prompt.size()) + " tokens and max_new_tokens " +
             std::to_string(s.max_new_tokens) + " need " +
             std::to_string(positions_needed(prompt, s)) +
             " positions of the cache, over max_tokens " + std::to_string(max_tokens);
    if (int64_t(running.size()) == max_batch)
      return "all " + std::to_string(max_batch) + " sequences of the batch are running";
    if (reserved + positions_needed(prompt, s) > max_tokens)
      return "the running sequences reserve " + std::to_string(reserved) + " of max_tokens " +
             std::to_string(max_tokens) + ", and this one needs " +
             std::to_string(positions_needed(prompt, s));
    return "";
  }

  // The cache's rows [begin, begin + rows) as the graph's inputs after idx, positions, last.
  std::vector<Tensor> inputs(const Tensor& idx, const Tensor& positions, const Tensor& last,
                             int64_t begin, int64_t rows) const {
    std::vector<Tensor> in{idx, positions, last};
    for (const internal::Tensor& c : cache) in.push_back(wrap(internal::narrow(c, 0, begin, rows)));
    return in;
  }

  // The logits after the prompts of the sequences in slots [begin, end), written into the cache.
  Tensor prefill_rows(int64_t begin, int64_t end) {
    const int64_t rows = end - begin;
    int64_t longest = 0;
    for (int64_t r = begin; r < end; ++r)
      longest = std::max(longest, int64_t(running[size_t(r)].prompt.size()));
    const auto& [T, prefill] = covering(prefills, longest);
    std::vector<int64_t> idx(size_t(rows * T), 0), positions(idx.size()), last;
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<int64_t>& p = running[size_t(begin + r)].prompt;
      std::copy(p.begin(), p.end(), idx.begin() + r * T);
      for (int64_t j = 0; j < T; ++j) positions[size_t(r * T + j)] = j;
      last.push_back(int64_t(p.size()) - 1);
    }
    return prefill.forward(inputs(host_tensor(idx, {rows, T}, device),
                                  host_tensor(positions, {rows, T}, device),
                                  host_tensor(last, {rows}, device), begin, rows))[0];
  }

  // The logits after each of the sequences in slots [0, n) is fed its next input at its
  // position (the fixed batch's other rows a dummy token at position 0 of their free slots).
  Tensor decode_rows(int64_t n) {
    const int64_t rows = fixed_batch ? fixed_batch : n;
    std::vector<int64_t> idx(size_t(rows), 0), positions(size_t(rows), 0);
    int64_t furthest = 0;
    for (int64_t r = 0; r < n; ++r) {
      idx[size_t(r)] = running[size_t(r)].next_input();
      positions[size_t(r)] = running[size_t(r)].written;
      furthest = std::max(furthest, positions[size_t(r)]);
    }
    // Attention reads the cache up to the least saved span past every row's position.
    const Graph& step = covering(steps, furthest + 1).second;
    const std::vector<Tensor> in =
        inputs(host_tensor(idx, {rows, 1}, device), host_tensor(positions, {rows, 1}, device),
               host_tensor(std::vector<int64_t>(size_t(rows), 0), {rows}, device), 0, rows);
    Tensor logits = (ctx ? step.forward_shards(in) : step.forward(in))[0];
    return rows == n ? logits : wrap(internal::narrow(logits.impl(), 0, 0, n));
  }

  std::vector<int64_t> sample(const Tensor& logits) const {
    const int64_t rows = int64_t(running.size());
    std::vector<int64_t> seeds, steps, top_k;
    std::vector<float> temperature, top_p;
    for (const Sequence& s : running) {
      seeds.push_back(s.sampling.seed);
      steps.push_back(int64_t(s.made.size()));
      top_k.push_back(s.sampling.top_k);
      temperature.push_back(float(s.sampling.temperature));
      top_p.push_back(float(s.sampling.top_p));
    }
    const Tensor out =
        sample_tokens(logits, host_tensor(seeds, {rows}, device),
                      host_tensor(steps, {rows}, device), host_tensor(temperature, {rows}, device),
                      host_tensor(top_k, {rows}, device), host_tensor(top_p, {rows}, device));
    return out.to_vector<int64_t>();
  }

  // Slot `from`'s cache rows copied into slot `to`.
  void move_slot(int64_t from, int64_t to) {
    for (internal::Tensor& c : cache) {
      internal::Tensor dst = internal::narrow(c, 0, to, 1);
      internal::copy_(dst, internal::narrow(c, 0, from, 1));
    }
  }

  // Removes running[slot]. A started sequence's slot is taken by the last started one (its cache
  // rows copied), so that the started stay in slots [0, n) and the admitted after them.
  void remove(size_t slot) {
    reserved -= positions_needed(running[slot].prompt, running[slot].sampling);
    size_t last = slot;
    if (running[slot].written)
      while (last + 1 < running.size() && running[last + 1].written) ++last;
    if (slot != last) {
      move_slot(int64_t(last), int64_t(slot));
      running[slot] = std::move(running[last]);
    }
    running.erase(running.begin() + std::ptrdiff_t(last));
  }

  std::vector<Made> step_all() {
    internal::autograd::NoGradGuard no_grad;
    const int64_t n = int64_t(running.size());
    if (n == 0) return {};
    // The sequences admitted since the last step come last (slots [old, n)): one prefill, or
    // without a prefill graph the first token of their prompts.
    int64_t old = 0;
    while (old < n && running[size_t(old)].written) ++old;
    std::vector<bool> samples;
    const bool prefill = !prefills.empty();
    for (const Sequence& s : running) samples.push_back(prefill || s.samples());
    std::vector<Tensor> parts;
    if (!prefill) parts.push_back(decode_rows(n));
    if (prefill && old > 0) parts.push_back(decode_rows(old));
    if (prefill && old < n) parts.push_back(prefill_rows(old, n));
    std::vector<internal::Tensor> impls;
    for (const Tensor& p : parts) impls.push_back(p.impl());
    const Tensor logits = parts.size() == 1 ? parts[0] : wrap(internal::cat(impls, 0));
    const std::vector<int64_t> tokens = sample(logits);
    // What the step wrote into the cache counts once the step has gone through.
    for (int64_t r = 0; r < n; ++r) {
      Sequence& s = running[size_t(r)];
      s.written = prefill && r >= old ? int64_t(s.prompt.size()) : s.written + 1;
    }
    std::vector<int64_t> rows;
    std::vector<Made> made;
    std::vector<size_t> done;
    for (size_t r = 0; r < running.size(); ++r) {
      if (!samples[r]) continue;
      rows.push_back(int64_t(r));
      Sequence& s = running[r];
      s.made.push_back(tokens[r]);
      Made m{s.id, tokens[r], false, ""};
      if (std::find(s.sampling.stop.begin(), s.sampling.stop.end(), tokens[r]) !=
          s.sampling.stop.end())
        m.finish_reason = "stop";
      else if (int64_t(s.made.size()) == s.sampling.max_new_tokens ||
               int64_t(s.prompt.size() + s.made.size()) > length)
        m.finish_reason = "length";
      m.finished = !m.finish_reason.empty();
      if (m.finished) done.push_back(r);
      made.push_back(std::move(m));
    }
    last_logits =
        int64_t(rows.size()) == n
            ? logits
            : wrap(internal::index_select(
                  logits.impl(), 0, host_tensor(rows, {int64_t(rows.size())}, device).impl()));
    // From the highest slot down: a moved sequence is never one still to remove.
    for (auto it = done.rbegin(); it != done.rend(); ++it) remove(*it);
    return made;
  }
};

Generator::Generator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Generator Generator::load(const std::string& dir, int64_t max_batch, const Device& device,
                          int64_t max_tokens) {
  return load_on(dir, nullptr, max_batch, device, max_tokens);
}

Generator Generator::load(const std::string& dir, const World& world, int64_t max_batch,
                          const Device& device, int64_t max_tokens) {
  return load_on(dir, &world, max_batch, device, max_tokens);
}

Generator Generator::load_on(const std::string& dir, const World* world, int64_t max_batch,
                             const Device& device, int64_t max_tokens) {
  return guarded([&] {
    if (max_batch < 1) fail("Generator", "max_batch ", max_batch, " < 1");
    if (max_tokens < 0) fail("Generator", "max_tokens ", max_tokens, " < 0");
    auto impl = std::make_shared<Impl>();
    impl->dir = dir;
    impl->device = device;
    impl->max_batch = max_batch;
    impl->ctx = world ? world->impl() : nullptr;
    impl->read_meta();
    const int64_t n_cache = 2 * impl->n_layer;
    impl->steps = impl->load_graphs("step", n_cache, world);
    const Graph& step = impl->steps.back().second;
    for (const auto& [span, graph] : impl->steps)
      if (graph.dynamic_batch() != step.dynamic_batch() ||
          graph.input_infos()[0].shape != step.input_infos()[0].shape)
        fail("Generator", dir, ": the step graphs take different batches (",
             internal::shape_str(graph.input_infos()[0].shape), " and ",
             internal::shape_str(step.input_infos()[0].shape), ")");
    if (!step.dynamic_batch()) {
      impl->fixed_batch = step.input_infos()[0].shape[0];
      if (max_batch > impl->fixed_batch)
        fail("Generator", dir, ": the step graphs were saved for a batch of ", impl->fixed_batch,
             " sequences: max_batch ", max_batch, " exceeds it");
    }
    // A fixed batch cannot prefill some rows only: prompts are then fed a token a step.
    if (!impl->fixed_batch) impl->prefills = impl->load_graphs("prefill", n_cache, world);
    const int64_t slots = impl->fixed_batch ? impl->fixed_batch : max_batch;
    const TensorInfo& c = step.input_infos()[3];
    for (int64_t i = 0; i < n_cache; ++i) {
      std::vector<int64_t> shape = step.local_shape(3 + size_t(i));
      if (shape.size() != 3)
        fail("Generator", dir, ": this rank holds no shard of the cache (it is outside the ",
             "placement the model was saved on)");
      shape[0] = slots;
      impl->cache.push_back(internal::zeros(shape, to_internal(c.dtype), to_internal(device)));
    }
    impl->max_tokens = max_tokens ? max_tokens : max_batch * impl->length;
    return Generator(std::move(impl));
  });
}

int64_t Generator::add(const std::vector<int64_t>& prompt, const Sampling& sampling) {
  return guarded([&] {
    if (std::string why = impl_->refusal(prompt, sampling); !why.empty()) fail("add", why);
    Sequence s;
    s.id = impl_->next_id++;
    s.prompt = prompt;
    s.sampling = sampling;
    impl_->reserved += impl_->positions_needed(prompt, sampling);
    impl_->running.push_back(std::move(s));
    return impl_->running.back().id;
  });
}

std::string Generator::refusal(const std::vector<int64_t>& prompt, const Sampling& sampling) const {
  return impl_->refusal(prompt, sampling);
}

std::string Generator::invalid(const std::vector<int64_t>& prompt, const Sampling& sampling) const {
  return impl_->invalid(prompt, sampling);
}

int64_t Generator::positions_needed(const std::vector<int64_t>& prompt,
                                    const Sampling& sampling) const {
  return impl_->positions_needed(prompt, sampling);
}

void Generator::cancel(int64_t id) {
  guarded([&] {
    auto& running = impl_->running;
    for (size_t r = 0; r < running.size(); ++r)
      if (running[r].id == id) return impl_->remove(r);
  });
}

std::vector<Made> Generator::step() {
  return guarded([&] { return impl_->step_all(); });
}

Tensor Generator::last_logits() const {
  return impl_->last_logits;
}

int64_t Generator::running() const {
  return int64_t(impl_->running.size());
}

std::vector<std::vector<int64_t>> Generator::generate(
    const std::vector<std::vector<int64_t>>& prompts, const std::vector<Sampling>& sampling) {
  return guarded([&] {
    if (sampling.size() != prompts.size() && sampling.size() != 1)
      fail("generate", prompts.size(), " prompts and ", sampling.size(),
           " samplings: give one per prompt, or one for all");
    if (running()) fail("generate", "the Generator has ", running(), " sequences running");
    auto sampling_of = [&](size_t i) -> const Sampling& {
      return sampling[sampling.size() == 1 ? 0 : i];
    };
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (std::string bad = invalid(prompts[i], sampling_of(i)); !bad.empty())
        fail("generate", "prompt ", i, ": ", bad);
      if (positions_needed(prompts[i], sampling_of(i)) > max_tokens())
        fail("generate", "prompt ", i, ": ", impl_->refusal(prompts[i], sampling_of(i)));
    }
    // More prompts than the batch holds join as earlier ones finish.
    std::map<int64_t, size_t> index;
    std::vector<std::vector<int64_t>> out(prompts.size());
    for (size_t next = 0; next < prompts.size() || running();) {
      while (next < prompts.size() && refusal(prompts[next], sampling_of(next)).empty()) {
        index[add(prompts[next], sampling_of(next))] = next;
        ++next;
      }
      for (const Made& m : step()) out[index.at(m.id)].push_back(m.token);
    }
    return out;
  });
}

int64_t Generator::length() const {
  return impl_->length;
}
int64_t Generator::vocab_size() const {
  return impl_->vocab;
}
int64_t Generator::max_batch() const {
  return impl_->max_batch;
}
int64_t Generator::max_tokens() const {
  return impl_->max_tokens;
}
bool Generator::has_vocabulary() const {
  return !impl_->chars.empty();
}

std::vector<int64_t> Generator::encode(const std::string& text) const {
  return guarded([&] {
    if (!has_vocabulary()) fail("encode", impl_->dir, " was saved without a vocabulary");
    std::vector<int64_t> out;
    for (size_t i = 0; i < text.size();) {
      const size_t n = std::min(utf8_length(static_cast<unsigned char>(text[i])), text.size() - i);
      auto it = impl_->token_of.find(text.substr(i, n));
      if (it == impl_->token_of.end()) {
        Json shown = text.substr(i, n);
        fail("encode", "the character ", shown.dump(-1, ' ', true, Json::error_handler_t::replace),
             " at byte ", i, " is not in the vocabulary");
      }
      out.push_back(it->second);
      i += n;
    }
    return out;
  });
}

std::string Generator::decode(const std::vector<int64_t>& tokens) const {
  return guarded([&] {
    if (!has_vocabulary()) fail("decode", impl_->dir, " was saved without a vocabulary");
    std::string out;
    for (int64_t t : tokens) {
      if (t < 0 || t >= int64_t(impl_->chars.size()))
        fail("decode", "token ", t, " is not in [0, ", impl_->chars.size(), ")");
      out += impl_->chars[size_t(t)];
    }
    return out;
  });
}

}  // namespace ofl
