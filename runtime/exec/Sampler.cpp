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

int32_t Sampler::sample(const float *logits, size_t vocab) {
  std::vector<float> l(logits, logits + vocab);
  if (P.repeatPenalty != 1 && P.repeatLastN != 0) {
    size_t n = P.repeatLastN < 0
                   ? History.size()
                   : std::min(History.size(), size_t(P.repeatLastN));
    std::vector<int32_t> recent(History.end() - ptrdiff_t(n), History.end());
    applyRepeatPenalty(l, recent, P.repeatPenalty);
  }
  if (P.temperature <= 0) {
    // Greedy: the first maximum (NaN never wins).
    size_t best = 0;
    for (size_t i = 1; i < vocab; ++i)
      if (l[i] > l[best] || std::isnan(l[best]))
        best = i;
    return int32_t(best);
  }
  std::vector<Candidate> c = sortedCandidates(l);
  topK(c, P.topK);
  topP(c, P.topP);
  minP(c, P.minP);
  softmax(c, P.temperature);
  return drawFrom(c, uniform01(Rng));
}

} // namespace loom::run
