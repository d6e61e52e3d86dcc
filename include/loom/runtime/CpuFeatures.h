//===- loom/runtime/CpuFeatures.h - x86 features a bundle records -*- C++
//-*-===//
//
// The x86 features that `loomc` records in a bundle's manifest ("target":
// the features its code may use, docs/BUNDLE.md) and that loom-run checks
// on the host before dlopen (a missing one would be SIGILL with no
// message). One list for both sides: X(llvm_name, gcc_cpu_supports_name);
// the first is how LLVM's subtarget names the feature (and what the
// manifest says), the second what __builtin_cpu_supports takes. Features
// outside this list are not recorded (every x86-64 CPU has them, or LLVM
// does not use them for the code Loom generates). No LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CPUFEATURES_H
#define LOOM_RUNTIME_CPUFEATURES_H

#define LOOM_X86_CPU_FEATURES(X)                                               \
  X("sse3", "sse3")                                                            \
  X("ssse3", "ssse3")                                                          \
  X("sse4.1", "sse4.1")                                                        \
  X("sse4.2", "sse4.2")                                                        \
  X("popcnt", "popcnt")                                                        \
  X("avx", "avx")                                                              \
  X("avx2", "avx2")                                                            \
  X("fma", "fma")                                                              \
  X("f16c", "f16c")                                                            \
  X("bmi", "bmi")                                                              \
  X("bmi2", "bmi2")                                                            \
  X("lzcnt", "lzcnt")                                                          \
  X("movbe", "movbe")                                                          \
  X("aes", "aes")                                                              \
  X("pclmul", "pclmul")                                                        \
  X("gfni", "gfni")                                                            \
  X("vpclmulqdq", "vpclmulqdq")                                                \
  X("avxvnni", "avxvnni")                                                      \
  X("avx512f", "avx512f")                                                      \
  X("avx512cd", "avx512cd")                                                    \
  X("avx512bw", "avx512bw")                                                    \
  X("avx512dq", "avx512dq")                                                    \
  X("avx512vl", "avx512vl")                                                    \
  X("avx512vnni", "avx512vnni")                                                \
  X("avx512bf16", "avx512bf16")                                                \
  X("avx512fp16", "avx512fp16")                                                \
  X("avx512ifma", "avx512ifma")                                                \
  X("avx512vbmi", "avx512vbmi")                                                \
  X("avx512vbmi2", "avx512vbmi2")                                              \
  X("avx512bitalg", "avx512bitalg")                                            \
  X("avx512vpopcntdq", "avx512vpopcntdq")

#endif // LOOM_RUNTIME_CPUFEATURES_H
