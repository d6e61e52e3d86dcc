// RUN: loom-opt %s --verify-roundtrip | FileCheck %s
// RUN: loom-opt %s --verify-roundtrip | loom-opt | FileCheck %s
// RUN: loom-opt %s --verify-roundtrip --mlir-print-op-generic | loom-opt | FileCheck %s

// The module's loom.target: LLVM's CPU name and the features of
// include/loom/runtime/CpuFeatures.h the code may use (docs/DIALECT.md).

// CHECK: module attributes {loom.target = #loom.cpu_target<cpu = "x86-64-v3", features = ["sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "movbe"]>}
module attributes {loom.target = #loom.cpu_target<cpu = "x86-64-v3", features = ["sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "movbe"]>} {
  // CHECK: func.func private @portable() attributes {target = #loom.cpu_target<cpu = "x86-64-v2", features = []>}
  func.func private @portable() attributes {target = #loom.cpu_target<cpu = "x86-64-v2", features = []>}
}
