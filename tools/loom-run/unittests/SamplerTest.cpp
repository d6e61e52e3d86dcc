//===- SamplerTest.cpp - sampling stages vs hand-computed distributions ---===//

#include "loom/runtime/Sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace loom::run;

namespace {

std::vector<int32_t> ids(const std::vector<Candidate> &c) {
  std::vector<int32_t> r;
  for (const Candidate &x : c)
    r.push_back(x.id);
  return r;
}

TEST(Sampler, RepeatPenaltyDividesPositiveMultipliesNegative) {
  std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f};
  // Repeated ids count once; out-of-range ids are ignored.
  applyRepeatPenalty(l, {0, 1, 1, 7, -2}, 2.0f);
  EXPECT_FLOAT_EQ(l[0], 1.0f);
  EXPECT_FLOAT_EQ(l[1], -2.0f);
  EXPECT_FLOAT_EQ(l[2], 0.5f);
  EXPECT_FLOAT_EQ(l[3], 3.0f);
}

TEST(Sampler, SortedCandidatesTiesByLowerId) {
  auto c = sortedCandidates({1.0f, 3.0f, 1.0f, 2.0f});
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 3, 0, 2}));
}

TEST(Sampler, SoftmaxWithTemperature) {
  auto c = sortedCandidates({0.0f, std::log(3.0f)});
  softmax(c);
  EXPECT_NEAR(c[0].prob, 0.75, 1e-7); // e^ln3 / (1 + 3)
  EXPECT_NEAR(c[1].prob, 0.25, 1e-7);
  softmax(c, 0.5f); // logits doubled: 9 : 1
  EXPECT_NEAR(c[0].prob, 0.9, 1e-7);
  EXPECT_NEAR(c[1].prob, 0.1, 1e-7);
}

TEST(Sampler, TopK) {
  auto c = sortedCandidates({0.1f, 0.4f, 0.3f, 0.2f});
  topK(c, 2);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 2}));
  topK(c, 0); // off
  EXPECT_EQ(c.size(), 2u);
}

TEST(Sampler, TopP) {
  // Probabilities 0.5, 0.25, 0.125, 0.125.
  std::vector<float> l = {std::log(4.0f), std::log(2.0f), 0.0f, 0.0f};
  auto c = sortedCandidates(l);
  topP(c, 0.75f); // 0.5 + 0.25 reaches 0.75
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1}));
  c = sortedCandidates(l);
  topP(c, 0.76f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1, 2}));
  c = sortedCandidates(l);
  topP(c, 0.1f); // at least one
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0}));
}

TEST(Sampler, MinP) {
  std::vector<float> l = {std::log(4.0f), std::log(2.0f), 0.0f, 0.0f};
  auto c = sortedCandidates(l);
  minP(c, 0.49f); // keep p >= 0.49 * 0.5
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1}));
  c = sortedCandidates(l);
  minP(c, 0.24f); // keep p >= 0.12
  EXPECT_EQ(c.size(), 4u);
}

TEST(Sampler, UniformAndDrawAreFixed) {
  // mt19937_64's 10000th output is fixed by the C++ standard.
  std::mt19937_64 rng(5489u);
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ull);
  std::mt19937_64 a(1);
  double u = uniform01(a);
  EXPECT_GE(u, 0.0);
  EXPECT_LT(u, 1.0);
  std::vector<Candidate> c = {{7, 0, 0.5}, {3, 0, 0.25}, {9, 0, 0.25}};
  EXPECT_EQ(drawFrom(c, 0.0), 7);
  EXPECT_EQ(drawFrom(c, 0.49), 7);
  EXPECT_EQ(drawFrom(c, 0.5), 3);
  EXPECT_EQ(drawFrom(c, 0.74), 3);
  EXPECT_EQ(drawFrom(c, 0.75), 9);
  EXPECT_EQ(drawFrom(c, 0.999999), 9);
}

TEST(Sampler, GreedyIsArgmaxAfterPenalty) {
  SamplingParams p;
  Sampler s(p);
  std::vector<float> l = {1.0f, 5.0f, 4.0f};
  EXPECT_EQ(s.sample(l.data(), l.size()), 1);
  p.repeatPenalty = 2.0f;
  Sampler s2(p);
  s2.accept(1); // 5 / 2 = 2.5 < 4
  EXPECT_EQ(s2.sample(l.data(), l.size()), 2);
  p.repeatLastN = 0; // penalty looks at nothing
  Sampler s3(p);
  s3.accept(1);
  EXPECT_EQ(s3.sample(l.data(), l.size()), 1);
}

// Greedy without a penalty reads the logits in place with a two-pass
// argmax: the same index as the sequential scan "best = i if l[i] >
// l[best] or l[best] is NaN" (first maximum, NaN never wins, all NaN: the
// last index), on ties, NaNs, infinities, signed zeros and odd lengths.
TEST(Sampler, GreedyArgmaxMatchesSequentialScan) {
  auto scan = [](const std::vector<float> &l) {
    size_t best = 0;
    for (size_t i = 1; i < l.size(); ++i)
      if (l[i] > l[best] || std::isnan(l[best]))
        best = i;
    return int32_t(best);
  };
  const float nan = std::nanf(""), inf = INFINITY;
  const float pool[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.5f, nan, inf, -inf};
  Sampler s{SamplingParams()};
  uint32_t x = 12345;
  for (int trial = 0; trial < 3000; ++trial) {
    size_t n = 1 + trial % 37;
    std::vector<float> l(n);
    for (float &v : l) {
      x = x * 1664525u + 1013904223u;
      v = pool[(x >> 16) % 8];
    }
    ASSERT_EQ(s.sample(l.data(), n), scan(l)) << "trial " << trial;
  }
  std::vector<float> allNan(5, nan);
  EXPECT_EQ(s.sample(allNan.data(), 5), 4);
  std::vector<float> big(49152);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = float((i * 7919) % 1000);
  EXPECT_EQ(s.sample(big.data(), big.size()), scan(big));
}

TEST(Sampler, SampledFrequenciesMatchDistribution) {
  // T = 1, top-k 3 of {ln 4, ln 2, ln 1, ln 1 - 10}: 4/7, 2/7, 1/7.
  SamplingParams p;
  p.temperature = 1;
  p.topK = 3;
  p.seed = 42;
  Sampler s(p);
  std::vector<float> l = {std::log(4.0f), std::log(2.0f), 0.0f, -10.0f};
  std::map<int32_t, int> n;
  const int draws = 70000;
  for (int i = 0; i < draws; ++i)
    ++n[s.sample(l.data(), l.size())];
  EXPECT_EQ(n[3], 0);
  EXPECT_NEAR(n[0] / double(draws), 4.0 / 7, 0.01);
  EXPECT_NEAR(n[1] / double(draws), 2.0 / 7, 0.01);
  EXPECT_NEAR(n[2] / double(draws), 1.0 / 7, 0.01);
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.topP = 0.9f;
  p.minP = 0.05f;
  p.seed = 7;
  Sampler a(p), b(p);
  std::vector<float> l = {0.3f, 0.1f, 0.7f, 0.2f, 0.0f, 0.5f};
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(a.sample(l.data(), l.size()), b.sample(l.data(), l.size()));
}

TEST(Sampler, Validation) {
  SamplingParams p;
  EXPECT_EQ(validateSamplingParams(p), "");
  p.temperature = -1;
  EXPECT_NE(validateSamplingParams(p).find("--temp"), std::string::npos);
  p = SamplingParams();
  p.topP = 0;
  EXPECT_NE(validateSamplingParams(p).find("--top-p"), std::string::npos);
  p.topP = 1.5f;
  EXPECT_NE(validateSamplingParams(p).find("--top-p"), std::string::npos);
  p = SamplingParams();
  p.minP = 2;
  EXPECT_NE(validateSamplingParams(p).find("--min-p"), std::string::npos);
  p = SamplingParams();
  p.repeatPenalty = 0;
  EXPECT_NE(validateSamplingParams(p).find("--repeat-penalty"),
            std::string::npos);
}

} // namespace
