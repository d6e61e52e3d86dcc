//===- Sampler.cpp - next-token sampling for loom-run generation ----------===//

#include "loom/runtime/Sampler.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace loom::run {

std::string validateSamplingParams(const SamplingParams &p) {
  if (!(p.temperature >= 0) || !std::isfinite(p.temperature))
    return "--temp must be >= 0 (0 = greedy), got " +
           std::to_string(p.temperature);
  if (p.topK < 0)
    return "--top-k must be >= 0 (0 = off), got " + std::to_string(p.topK);
  if (!(p.topP > 0 && p.topP <= 1))
    return "--top-p must be in (0, 1] (1 = off), got " + std::to_string(p.topP);
  if (!(p.minP >= 0 && p.minP <= 1))
    return "--min-p must be in [0, 1] (0 = off), got " + std::to_string(p.minP);
  if (!(p.repeatPenalty > 0) || !std::isfinite(p.repeatPenalty))
    return "--repeat-penalty must be > 0 (1 = off), got " +
           std::to_string(p.repeatPenalty);
  if (p.repeatLastN < -1)
    return "--repeat-last-n must be >= -1 (-1 = all, 0 = off), got " +
           std::to_string(p.repeatLastN);
  return "";
}

void applyRepeatPenalty(std::vector<float> &logits,
                        const std::vector<int32_t> &recent, float penalty) {
  if (penalty == 1)
    return;
  std::set<int32_t> seen(recent.begin(), recent.end());
  for (int32_t id : seen) {
    if (id < 0 || size_t(id) >= logits.size())
      continue;
    float &l = logits[size_t(id)];
    l = l > 0 ? l / penalty : l * penalty;
  }
}

std::vector<Candidate> sortedCandidates(const std::vector<float> &logits) {
  std::vector<Candidate> c;
  c.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    c.push_back({int32_t(i), logits[i]});
  std::stable_sort(
      c.begin(), c.end(),
      [](const Candidate &a, const Candidate &b) { return a.logit > b.logit; });
  return c;
}

void softmax(std::vector<Candidate> &c, float temperature) {
  if (c.empty())
    return;
  double mx = c.front().logit;
  for (const Candidate &x : c)
    mx = std::max(mx, double(x.logit));
  double sum = 0;
  for (Candidate &x : c) {
    x.prob = std::exp((double(x.logit) - mx) / double(temperature));
    sum += x.prob;
  }
  for (Candidate &x : c)
    x.prob /= sum;
}

void topK(std::vector<Candidate> &c, int64_t k) {
  if (k > 0 && size_t(k) < c.size())
    c.resize(size_t(k));
}

void topP(std::vector<Candidate> &c, float p) {
  if (p >= 1 || c.empty())
    return;
  softmax(c);
  double cum = 0;
  size_t keep = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    cum += c[i].prob;
    if (cum >= double(p)) {
      keep = i + 1;
      break;
    }
  }
  c.resize(keep);
}

void minP(std::vector<Candidate> &c, float m) {
  if (m <= 0 || c.empty())
    return;
  softmax(c);
  double best = c.front().prob, bound = double(m) * best;
  size_t keep = 1;
  while (keep < c.size() && c[keep].prob >= bound)
    ++keep;
  c.resize(keep);
}

double uniform01(std::mt19937_64 &rng) {
  return double(rng() >> 11) * 0x1.0p-53;
}

int32_t drawFrom(const std::vector<Candidate> &c, double u) {
  double total = 0;
  for (const Candidate &x : c)
    total += x.prob;
  double target = u * total, cum = 0;
  for (const Candidate &x : c) {
    cum += x.prob;
    if (cum > target)
      return x.id;
  }
  return c.back().id;
}

namespace {

/// Greedy: the first maximum (NaN never wins; all NaN: the last index).
/// The answer of the scan "best = i if l[i] > l[best] or l[best] is NaN",
/// in two passes without a carried dependency: the largest non-NaN value
/// (8 independent partial maxima), then the first index holding it.
int32_t argmax(const float *l, size_t vocab) {
  float part[8];
  std::fill(part, part + 8, -INFINITY);
  size_t i = 0;
  for (; i + 8 <= vocab; i += 8)
    for (int k = 0; k < 8; ++k)
      part[k] = l[i + k] > part[k] ? l[i + k] : part[k];
  float m = -INFINITY;
  for (; i < vocab; ++i)
    m = l[i] > m ? l[i] : m;
  for (float x : part)
    m = x > m ? x : m;
  for (i = 0; i < vocab; ++i)
    if (l[i] == m)
      return int32_t(i);
  return int32_t(vocab ? vocab - 1 : 0);
}

} // namespace

int32_t Sampler::sample(const float *logits, size_t vocab) {
  bool penalty = P.repeatPenalty != 1 && P.repeatLastN != 0;
  // Plain greedy reads the logits in place (no copy of the vocabulary per
  // token: generation's hot path).
  if (P.temperature <= 0 && !penalty)
    return argmax(logits, vocab);
  std::vector<float> l(logits, logits + vocab);
  if (penalty) {
    size_t n = P.repeatLastN < 0
                   ? History.size()
                   : std::min(History.size(), size_t(P.repeatLastN));
    std::vector<int32_t> recent(History.end() - ptrdiff_t(n), History.end());
    applyRepeatPenalty(l, recent, P.repeatPenalty);
  }
  if (P.temperature <= 0)
    return argmax(l.data(), vocab);
  std::vector<Candidate> c = sortedCandidates(l);
  topK(c, P.topK);
  topP(c, P.topP);
  minP(c, P.minP);
  softmax(c, P.temperature);
  return drawFrom(c, uniform01(Rng));
}

} // namespace loom::run
