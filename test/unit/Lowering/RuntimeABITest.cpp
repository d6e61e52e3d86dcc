//===- RuntimeABITest.cpp - the lowering's runtime table vs abi.h ---------===//
//
// Every row of passes/Lowering/RuntimeABI.h must be a function of
// include/loom/runtime/abi.h with the same C signature: the codes are
// derived here from the declarations themselves (decltype, nothing linked).
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/RuntimeABI.h"

#include "loom/runtime/abi.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>

namespace {

template <typename T> constexpr char code() {
  if constexpr (std::is_void_v<T>)
    return 'v';
  else if constexpr (std::is_pointer_v<T>)
    return 'p';
  else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>)
    return 'i';
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>)
    return 'l';
  else if constexpr (std::is_same_v<T, double>)
    return 'd';
  else
    return '?';
}

struct Signature {
  char result;
  std::string args;
};

template <typename R, typename... A> Signature signatureOf(R (*)(A...)) {
  return {code<R>(), std::string{code<A>()...}};
}

#define LOOM_ABI(fn)                                                           \
  { #fn, signatureOf(static_cast <decltype(&fn)>(nullptr)) }

/// The functions of abi.h that generated code may call.
const std::map<std::string, Signature> &declared() {
  static const std::map<std::string, Signature> all = {
      LOOM_ABI(loom_rt_coord),      LOOM_ABI(loom_rt_group_index),
      LOOM_ABI(loom_rt_group_size), LOOM_ABI(loom_rt_rank),
      LOOM_ABI(loom_rt_world_size), LOOM_ABI(loom_rt_all_reduce),
      LOOM_ABI(loom_rt_all_gather), LOOM_ABI(loom_rt_reduce_scatter),
      LOOM_ABI(loom_rt_all_to_all), LOOM_ABI(loom_rt_barrier),
      LOOM_ABI(loom_rt_send),       LOOM_ABI(loom_rt_recv),
      LOOM_ABI(loom_rt_sendrecv),   LOOM_ABI(loom_rt_weight),
      LOOM_ABI(loom_rt_sgemm),      LOOM_ABI(loom_rt_sgemm_batched),
      LOOM_ABI(loom_rt_malloc),     LOOM_ABI(loom_rt_index_error),
      LOOM_ABI(loom_rt_abort),      LOOM_ABI(loom_rt_trace_begin),
      LOOM_ABI(loom_rt_trace_end),  LOOM_ABI(loom_rt_now_ns),
  };
  return all;
}

TEST(RuntimeABITable, EveryRowMatchesAbiH) {
  for (const loom::rt_abi::RuntimeFunction &row :
       loom::rt_abi::kRuntimeFunctions) {
    std::string name(row.name);
    auto it = declared().find(name);
    ASSERT_NE(it, declared().end())
        << name << " is in RuntimeABI.h but not listed from abi.h here";
    EXPECT_EQ(row.result, it->second.result) << name << ": result";
    EXPECT_EQ(std::string(row.args), it->second.args) << name << ": arguments";
  }
}

TEST(RuntimeABITable, LookupFindsEveryRow) {
  for (const loom::rt_abi::RuntimeFunction &row :
       loom::rt_abi::kRuntimeFunctions)
    EXPECT_EQ(loom::rt_abi::lookup(row.name), &row);
  EXPECT_EQ(loom::rt_abi::lookup("loom_rt_no_such_function"), nullptr);
}

} // namespace
