// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-approximate-math | FileCheck %s

// f32 transcendental functions become polynomials (no libm call left), and
// the float arithmetic is marked reassoc/contract/afn (never nnan/ninf:
// masks rely on -inf).
// CHECK-LABEL: func.func @transcendental
// CHECK-NOT: math.tanh
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: arith.mulf {{.*}} fastmath<reassoc,contract,afn>
// CHECK: return
func.func @transcendental(%x: f32) -> (f32, f32, f32) {
  %0 = math.tanh %x : f32
  %1 = math.exp %x : f32
  %2 = math.erf %x : f32
  return %0, %1, %2 : f32, f32, f32
}

// -----

// Casts keep their rounding: only arithmetic gets the flags.
// CHECK-LABEL: func.func @arith_and_casts
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc,contract,afn> : f32
// CHECK-NEXT: arith.maximumf %{{.+}}, %{{.+}} fastmath<reassoc,contract,afn> : f32
// CHECK-NEXT: arith.truncf %{{.+}} : f32 to f16
// CHECK-NEXT: arith.extf %{{.+}} : f16 to f32
func.func @arith_and_casts(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  %1 = arith.maximumf %0, %b : f32
  %2 = arith.truncf %1 : f32 to f16
  %3 = arith.extf %2 : f16 to f32
  return %3 : f32
}
