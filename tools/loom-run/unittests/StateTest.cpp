//===- StateTest.cpp - KV-cache state: manifest fields, --ctx, positions --===//

#include "loom/runtime/State.h"
#include "ManifestTestUtil.h"
#include "loom/runtime/Manifest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

using namespace loom::run;
using namespace loom::run::test;

namespace {

// An LLM bundle: the "model" object, a tokenizer, a decode entry with two
// state inputs of [1, 2, -1, 4] f32 (32 bytes per position each).
const char *kLlm = R"({
  "format": "loom-bundle", "version": 1, "abi_version": 1,
  "model": {"name": "tiny", "architecture": "llama", "num_layers": 1,
            "num_heads": 4, "num_kv_heads": 2, "head_dim": 4,
            "hidden_size": 16, "vocab_size": 96, "context_length": 128},
  "tokenizer": {"format": "gguf", "file": "/m.gguf"},
  "mesh": {"axes": ["world"], "shape": [1]}, "num_ranks": 1,
  "library": "tiny.so",
  "entries": [{"name": "decode", "symbol": "loom_entry_decode",
    "inputs": [{"name": "tokens", "dtype": "i64", "shape": [1, -1]},
               {"name": "positions", "dtype": "i64", "shape": [-1]},
               {"name": "cache_key_0", "dtype": "f32", "shape": [1, 2, -1, 4],
                "state": "kv_cache", "ctx_dim": 2},
               {"name": "cache_value_0", "dtype": "f32", "shape": [1, 2, -1, 4],
                "state": "kv_cache", "ctx_dim": 2}],
    "outputs": [{"name": "logits", "dtype": "f32", "rank": 2}],
    "weights": []}],
  "ranks": [{"rank": 0, "coords": [0], "ir": "ir/program.mlir",
             "weights": {"decode": []}}]
})";

NpyArray positions(std::vector<int64_t> p) {
  NpyArray a;
  a.descr = "<i8";
  a.itemSize = 8;
  a.shape = {int64_t(p.size())};
  a.data = allocBuffer(int64_t(p.size()) * 8);
  std::memcpy(a.data.get(), p.data(), p.size() * 8);
  return a;
}

TEST(State, ManifestFields) {
  Manifest m = parsed(kLlm);
  EXPECT_EQ(m.model, "tiny");
  EXPECT_TRUE(m.llm.llm);
  EXPECT_EQ(m.llm.contextLength, 128);
  EXPECT_EQ(m.llm.numKvHeads, 2);
  EXPECT_EQ(m.tokenizer.format, "gguf");
  EXPECT_EQ(m.tokenizer.file, "/m.gguf");
  const Entry &e = m.entries[0];
  EXPECT_TRUE(e.inputs[0].state.empty());
  EXPECT_EQ(e.inputs[2].state, "kv_cache");
  EXPECT_EQ(e.inputs[2].ctxDim, 2);
  EXPECT_TRUE(hasState(e));
  EXPECT_EQ(stateBytesPerPosition(e), 64);
}

TEST(State, ManifestRefusals) {
  EXPECT_NE(parseError(
                replaced(kLlm, "\"state\": \"kv_cache\"", "\"state\": \"rng\""))
                .find("unknown state 'rng'"),
            std::string::npos);
  EXPECT_NE(parseError(replaced(kLlm, "\"ctx_dim\": 2", "\"ctx_dim\": 1"))
                .find("ctx_dim: must name a dynamic (-1) dimension"),
            std::string::npos);
  EXPECT_NE(parseError(replaced(kLlm, ", \"context_length\": 128", ""))
                .find("model.context_length: missing"),
            std::string::npos);
  EXPECT_NE(
      parseError(replaced(kLlm, "\"format\": \"gguf\"", "\"format\": \"spm\""))
          .find("tokenizer.format"),
      std::string::npos);
}

TEST(State, ChooseContext) {
  Manifest m = parsed(kLlm);
  const Entry &e = m.entries[0];
  std::string err;
  int64_t ctx = 0;
  // Default: the model's context length ...
  ASSERT_TRUE(chooseContext(m, e, 0, {}, 1, int64_t(1) << 30, ctx, &err));
  EXPECT_EQ(ctx, 128);
  // ... capped to half the memory (64 bytes per position).
  ASSERT_TRUE(chooseContext(m, e, 0, {}, 1, 64 * 20, ctx, &err));
  EXPECT_EQ(ctx, 10);
  ASSERT_TRUE(chooseContext(m, e, 16, {}, 1, int64_t(1) << 30, ctx, &err));
  EXPECT_EQ(ctx, 16);
  EXPECT_FALSE(chooseContext(m, e, 129, {}, 1, int64_t(1) << 30, ctx, &err));
  EXPECT_NE(err.find("beyond the model's context length 128"),
            std::string::npos);
  EXPECT_FALSE(chooseContext(m, e, 100, {}, 2, 64 * 100, ctx, &err));
  EXPECT_NE(err.find("needs"), std::string::npos);
  EXPECT_NE(err.find("at most 50"), std::string::npos);
  // Initial state files fix the context; --ctx must agree.
  NpyArray k;
  k.shape = {1, 2, 24, 4};
  ASSERT_TRUE(
      chooseContext(m, e, 0, {&k, nullptr}, 1, int64_t(1) << 30, ctx, &err));
  EXPECT_EQ(ctx, 24);
  EXPECT_FALSE(
      chooseContext(m, e, 16, {&k, nullptr}, 1, int64_t(1) << 30, ctx, &err));
  EXPECT_NE(err.find("disagrees"), std::string::npos);
}

TEST(State, Positions) {
  Manifest m = parsed(kLlm);
  const Entry &e = m.entries[0];
  std::string err;
  NpyArray ok = positions({4, 5, 6});
  EXPECT_TRUE(checkPositions(e, &ok, 7, &err)) << err;
  EXPECT_FALSE(checkPositions(e, &ok, 6, &err));
  EXPECT_NE(err.find("positions 4..6 do not fit in the KV cache of 6"),
            std::string::npos);
  NpyArray gap = positions({0, 2});
  EXPECT_FALSE(checkPositions(e, &gap, 8, &err));
  EXPECT_NE(err.find("contiguous"), std::string::npos);
  auto z = zeroState(e.inputs[2], 5);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->shape, (std::vector<int64_t>{1, 2, 5, 4}));
  EXPECT_EQ(z->numBytes(), 160);
}

} // namespace
