//===- bench/allreduce/Decode.h - decode-step collectives -------*- C++ -*-===//
//
// The collectives of one decode step of SmolLM2-135M (hidden 576, 3 kv heads
// of 64) split over n tensor-parallel ranks, as loomc plans them (per layer:
// all_gathers of the q/k/v projections and of the residual, a reduce_scatter
// of the FFN output; the all-reduce form of a Megatron plan), plus the token
// agreement of the generation loop. Shared by BenchThreads.cpp and
// BenchMpi.cpp; no runtime or MPI header.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_BENCH_ALLREDUCE_DECODE_H
#define LOOM_BENCH_ALLREDUCE_DECODE_H

#include <cstdint>

namespace loom::bench {

struct DecodeCall {
  enum Kind { AllReduce, AllGather, ReduceScatter, Barrier } kind;
  const char *name;
  int64_t total; ///< elements of the full (gathered / reduced) vector
  bool i64;      ///< int64 elements (else f32)
};

inline constexpr DecodeCall kDecodeCalls[] = {
    {DecodeCall::AllReduce, "all_reduce_f32x576", 576, false},
    {DecodeCall::AllGather, "all_gather_f32x576", 576, false},
    {DecodeCall::AllGather, "all_gather_f32x192", 192, false},
    {DecodeCall::ReduceScatter, "reduce_scatter_f32x576", 576, false},
    {DecodeCall::AllGather, "all_gather_i64x1_per_rank", 0, true},
    {DecodeCall::Barrier, "barrier", 0, false},
};

/// Elements each rank contributes to `c` on n ranks (all_gather: its
/// piece, at least 1; reduce_scatter and all_reduce: the whole vector).
inline int64_t elemsPerRank(const DecodeCall &c, int n) {
  if (c.kind == DecodeCall::AllGather)
    return c.total ? c.total / n : 1;
  return c.total;
}

} // namespace loom::bench

#endif
