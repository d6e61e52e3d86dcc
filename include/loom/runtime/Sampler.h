//===- Sampler.h - next-token sampling for loom-run generation --*- C++ -*-===//
//
// Turns one row of logits into a token id: greedy (temperature 0) or sampled
// with llama.cpp's stages and order (docs/LOOM-RUN.md, "Sampling"):
//
//   repetition penalty -> top-k -> top-p -> min-p -> temperature -> draw
//
// The random numbers are fixed by the seed on every platform: std::mt19937_64
// (whose output sequence the C++ standard defines) and our own uniform in
// [0, 1) from its top 53 bits; no implementation-defined distribution.
// Plain C++, no runtime dependency (unit-tested in loom-run-tests).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SAMPLER_H
#define LOOM_RUNTIME_SAMPLER_H

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace loom::run {

struct SamplingParams {
  float temperature = 0;    ///< 0: greedy (argmax)
  int64_t topK = 0;         ///< 0: off
  float topP = 1;           ///< 1: off; (0, 1]
  float minP = 0;           ///< 0: off; [0, 1]
  float repeatPenalty = 1;  ///< 1: off; > 0
  int64_t repeatLastN = 64; ///< tokens the penalty looks back; -1: all
  uint64_t seed = 0;
};

/// Empty when `p` is valid, else a one-line message naming the flag.
std::string validateSamplingParams(const SamplingParams &p);

/// One candidate token after the filtering stages.
struct Candidate {
  int32_t id;
  float logit;
  double prob = 0;
};

/// The stages, exposed for the unit tests. Each works on candidates sorted
/// by descending logit (ties: lower id first) unless said otherwise.

/// llama.cpp's repetition penalty: every distinct id of `recent` that is in
/// range gets logit / penalty when positive, logit * penalty otherwise.
void applyRepeatPenalty(std::vector<float> &logits,
                        const std::vector<int32_t> &recent, float penalty);
/// All ids, sorted by descending logit, ties by id.
std::vector<Candidate> sortedCandidates(const std::vector<float> &logits);
/// Softmax of the candidates' logits divided by `temperature` into `prob`.
void softmax(std::vector<Candidate> &c, float temperature = 1);
/// Keeps the k best (k <= 0 or k >= size: all).
void topK(std::vector<Candidate> &c, int64_t k);
/// Keeps the smallest prefix whose probability (softmax at temperature 1)
/// reaches p (at least one).
void topP(std::vector<Candidate> &c, float p);
/// Keeps the candidates whose probability is >= minP times the best one's.
void minP(std::vector<Candidate> &c, float minP);
/// Uniform double in [0, 1) from the top 53 bits of one mt19937_64 draw.
double uniform01(std::mt19937_64 &rng);
/// The first candidate whose cumulative probability exceeds u * total.
int32_t drawFrom(const std::vector<Candidate> &c, double u);

/// One sequence's sampler (owns its RNG and its token history).
class Sampler {
public:
  explicit Sampler(const SamplingParams &p) : P(p), Rng(p.seed) {}
  /// The next token for `logits` (one row, vocab entries). Does not record
  /// it: call accept() with the token that is actually fed back.
  int32_t sample(const float *logits, size_t vocab);
  /// Records a token of the sequence (prompt or generated) for the penalty.
  void accept(int32_t id) { History.push_back(id); }
  /// Forgets the history (a new prompt); the random stream goes on.
  void clearHistory() { History.clear(); }
  const SamplingParams &params() const { return P; }

private:
  SamplingParams P;
  std::mt19937_64 Rng;
  std::vector<int32_t> History;
};

} // namespace loom::run

#endif // LOOM_RUNTIME_SAMPLER_H
