// Generation from C++: a model saved for it from Python (the example GPT's
// save_for_generation), decoded incrementally with a KV cache of one slot per sequence, and the
// framework's own sampling op, so that a request gets the tokens Python's Decoder gives it.
//
//   ofl::Generator gen = ofl::Generator::load("saved_for_generation", /*max_batch=*/8);
//   int64_t id = gen.add({1, 2, 3}, {.temperature = 0.8, .top_k = 10, .seed = 7});
//   while (gen.running())
//     for (const ofl::Made& m : gen.step()) std::cout << m.id << ": " << m.token << "\n";
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oneflowlike/distributed.h"
#include "oneflowlike/tensor.h"

namespace ofl {

// How a sequence's tokens are chosen and when it ends.
struct Sampling {
  double temperature = 0;  // 0: greedy (the most likely token)
  int64_t top_k = 0;       // sample from the k most likely tokens only (0: all)
  double top_p = 1;        // ...then from the fewest of those whose probability reaches top_p
  int64_t seed = 0;        // token i is drawn at Philox counter i under this key
  int64_t max_new_tokens = 16;
  std::vector<int64_t> stop = {};  // tokens that end the sequence (the stop token is returned)
};

// A token made for a sequence at one step; `finished` when it is the sequence's last, with the
// reason: "stop" (a stop token), "length" (max_new_tokens, or the cache is full).
struct Made {
  int64_t id = 0;
  int64_t token = 0;
  bool finished = false;
  std::string finish_reason;
};

// One token id per row of logits (B, V): greedy where temperature <= 0, else drawn at that
// temperature from the top_k largest logits (0: all), cut to the fewest whose probability reaches
// top_p, with the Philox draw (steps[r], seeds[r]): what flow.sample_tokens gives in Python.
// seeds, steps, top_k: int64 (B,); temperature, top_p: float32 (B,). Returns int64 (B,).
Tensor sample_tokens(const Tensor& logits, const Tensor& seeds, const Tensor& steps,
                     const Tensor& temperature, const Tensor& top_k, const Tensor& top_p);

// Decodes up to max_batch sequences at once, continuously: add() a sequence at any time, and
// each step() makes one token for every sequence (the new ones' first from their prompt, in one
// prefill). A finished sequence leaves at once and its slot is reused. Not thread-safe: one
// thread drives a Generator (a server's scheduler); the others hand it requests.
class Generator {
 public:
  // Reads dir/generation.json and the two graphs beside it (dir/prefill, dir/step), and
  // allocates the cache: max_batch slots of length() positions per layer. A sequence is admitted
  // while its prompt plus max_new_tokens, with those of the sequences running, stay within
  // max_tokens (0: max_batch * length()). Throws naming the file and entry for a missing or
  // damaged folder.
  static Generator load(const std::string& dir, int64_t max_batch, const Device& device = Device(),
                        int64_t max_tokens = 0);
  // A model saved over placements (tensor parallel), on every rank of `world`: each rank holds
  // its shards of the weights and of the cache. Every rank makes the same calls (add, step,
  // cancel) in the same order, and every rank gets every token. Its step graph has a fixed batch
  // (max_batch at most that) and no prefill: a prompt is fed a token a step.
  static Generator load(const std::string& dir, const World& world, int64_t max_batch,
                        const Device& device = Device(), int64_t max_tokens = 0);

  // Admits a sequence and returns its id; its prefill runs at the next step(). Throws when
  // refusal() gives a reason.
  int64_t add(const std::vector<int64_t>& prompt, const Sampling& sampling = {});
  // Why add() would refuse this sequence now ("" when it would admit it): invalid(), more cache
  // positions than max_tokens, a full batch, or the running sequences' reservations.
  std::string refusal(const std::vector<int64_t>& prompt, const Sampling& sampling) const;
  // Why the request itself is bad ("" when it is not): an empty prompt, a token outside the
  // vocabulary, a prompt longer than length(), a negative temperature or top_k, top_p outside
  // (0, 1], max_new_tokens < 1, a stop token outside the vocabulary.
  std::string invalid(const std::vector<int64_t>& prompt, const Sampling& sampling) const;
  // The cache positions the sequence may fill (its prompt and its tokens but the last, at most
  // length()): what it reserves of max_tokens.
  int64_t positions_needed(const std::vector<int64_t>& prompt, const Sampling& sampling) const;
  // Drops a sequence (its client left); unknown ids are ignored.
  void cancel(int64_t id);

  // One token for every running sequence (but one still being fed its prompt a token a step).
  std::vector<Made> step();
  // The logits the last step() sampled from, (rows, V), one row per Made it returned.
  Tensor last_logits() const;
  int64_t running() const;

  // Generates for every prompt until all have finished, max_batch at a time (the others join as
  // earlier ones finish); returns each one's tokens. Throws, running nothing, for a prompt
  // invalid() or over max_tokens.
  std::vector<std::vector<int64_t>> generate(const std::vector<std::vector<int64_t>>& prompts,
                                             const std::vector<Sampling>& sampling);

  int64_t length() const;  // positions in a slot: a prompt and its tokens fit in length() + 1
  int64_t vocab_size() const;
  int64_t max_batch() const;
  int64_t max_tokens() const;
  // The saved vocabulary (token i is the i-th character, as UTF-8), empty when none was saved;
  // encode() throws naming a character outside it.
  bool has_vocabulary() const;
  std::vector<int64_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int64_t>& tokens) const;

 private:
  struct Impl;
  explicit Generator(std::shared_ptr<Impl> impl);
  static Generator load_on(const std::string& dir, const World* world, int64_t max_batch,
                           const Device& device, int64_t max_tokens);
  std::shared_ptr<Impl> impl_;
};

}  // namespace ofl
