//===- LlmHyperParams.cpp - Transformer hyper-parameter checks ------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/LlmHyperParams.h"

#include <cmath>
#include <cstdio>

using namespace loom::fmt;

namespace {

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

std::string show(const KeyedValue<int64_t> &v) {
  return v.key + " = " + std::to_string(v.value);
}

HyperParamViolation violation(const std::string &key, std::string what) {
  return {key, std::move(what)};
}

/// An integer count in [1, hi].
std::optional<HyperParamViolation> count(const KeyedValue<int64_t> &v,
                                         int64_t hi) {
  if (v.key.empty() || (v.value >= 1 && v.value <= hi))
    return std::nullopt;
  return violation(v.key, show(v) + ": must be an integer >= 1 and <= " +
                              std::to_string(hi));
}

/// A finite real in (0, hi].
std::optional<HyperParamViolation> positive(const KeyedValue<double> &v,
                                            double hi) {
  if (v.key.empty() || (std::isfinite(v.value) && v.value > 0 && v.value <= hi))
    return std::nullopt;
  return violation(v.key,
                   v.key + " = " + num(v.value) +
                       ": must be a finite number > 0 and <= " + num(hi));
}

} // namespace

std::optional<HyperParamViolation>
loom::fmt::checkLlmHyperParams(const LlmHyperParams &p) {
  constexpr int64_t kMaxSize = int64_t(1) << 20;
  constexpr int64_t kMaxCount = int64_t(1) << 14;
  for (auto [v, hi] : {std::pair{&p.hidden, kMaxSize},
                       {&p.layers, kMaxCount},
                       {&p.heads, kMaxCount},
                       {&p.kvHeads, kMaxCount},
                       {&p.ffn, kMaxSize},
                       {&p.vocab, int64_t(1) << 24},
                       {&p.context, int64_t(1) << 30},
                       {&p.headDim, int64_t(1) << 16},
                       {&p.ropeDim, int64_t(1) << 16}})
    if (auto e = count(*v, hi))
      return e;
  if (auto e = positive(p.normEps, 1.0))
    return e;
  if (auto e = positive(p.ropeTheta, 1e12))
    return e;

  // The consistency of the attention shape (a check of a vocabulary
  // alone, as the GGUF importer makes, has no heads).
  if (p.heads.key.empty())
    return std::nullopt;
  int64_t headDim = p.headDim.value;
  if (p.headDim.key.empty()) {
    if (p.hidden.value % p.heads.value)
      return violation(p.heads.key,
                       show(p.heads) + ": must divide " + show(p.hidden) +
                           (p.headDimName.empty() ? std::string()
                                                  : " (or the file must give " +
                                                        p.headDimName + ")"));
    headDim = p.hidden.value / p.heads.value;
  }
  if (!p.kvHeads.key.empty() && p.heads.value % p.kvHeads.value)
    return violation(p.kvHeads.key,
                     show(p.kvHeads) + ": must divide " + show(p.heads));
  if (!p.ropeDim.key.empty() &&
      (p.ropeDim.value % 2 || p.ropeDim.value > headDim))
    return violation(p.ropeDim.key,
                     show(p.ropeDim) +
                         ": must be even and <= the head dimension " +
                         std::to_string(headDim));
  return std::nullopt;
}
