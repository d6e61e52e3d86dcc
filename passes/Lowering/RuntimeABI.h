//===- RuntimeABI.h - runtime functions called by generated code -*- C++
//-*-===//
//
// The one table of `loom_rt_*` functions that the lowering calls, with their
// C signatures in a compact code: one letter for the result and one per
// argument, 'v' void, 'p' pointer, 'i' int32_t, 'l' int64_t or uint64_t,
// 'd' double. It mirrors include/loom/runtime/abi.h; test/unit/Lowering/
// RuntimeABITest.cpp compares every entry with the declaration in abi.h.
// Plain C++ (no MLIR): the lowering turns a code into a FunctionType.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_LOWERING_RUNTIMEABI_H
#define LOOM_PASSES_LOWERING_RUNTIMEABI_H

#include <string_view>

namespace loom::rt_abi {

struct RuntimeFunction {
  std::string_view name;
  char result;           ///< 'v', 'p', 'i', 'l' or 'd'
  std::string_view args; ///< one letter per argument
};

/// Every runtime function the lowering may call (add a row when a pattern
/// calls a new one; the test checks it against abi.h).
inline constexpr RuntimeFunction kRuntimeFunctions[] = {
    // Mesh coordinates: (ctx, axis) and (ctx, axes_mask).
    {"loom_rt_coord", 'l', "pi"},
    {"loom_rt_group_index", 'l', "pl"},
    // Collectives: (ctx, dtype, [op,] in, out, sizes..., axes_mask).
    {"loom_rt_all_reduce", 'v', "piippll"},
    {"loom_rt_all_gather", 'v', "pipplll"},
    {"loom_rt_reduce_scatter", 'v', "piipplll"},
    {"loom_rt_all_to_all", 'v', "pippll"},
    // Point to point: (ctx, dtype, buf, count, peer, tag).
    {"loom_rt_send", 'v', "piplll"},
    {"loom_rt_recv", 'v', "piplll"},
    // GEMMs: (ctx, trans_a, trans_b, [batch, heads, group,] m, n, k, a, b, c).
    {"loom_rt_sgemm", 'v', "piilllppp"},
    {"loom_rt_sgemm_batched", 'v',
     "pii"
     "llllll"
     "ppp"},
    // Checks: (ctx, input name, index, lo, hi, op name).
    {"loom_rt_index_error", 'v', "pplllp"},
    // Failure: (ctx, message).
    {"loom_rt_abort", 'v', "pp"},
};

/// The row of `name`, or null.
constexpr const RuntimeFunction *lookup(std::string_view name) {
  for (const RuntimeFunction &f : kRuntimeFunctions)
    if (f.name == name)
      return &f;
  return nullptr;
}

} // namespace loom::rt_abi

#endif // LOOM_PASSES_LOWERING_RUNTIMEABI_H
