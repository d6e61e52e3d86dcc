// --gpu-dtype (docs/GPU.md "Activation dtype"): loom-gpu-activation-dtype
// stores what products read and write in f16 (or bf16) and computes
// everything else in f32. A decode-like step: RMS norm (f32 math), a q4_1
// quantized product (f16 activations in and out), a rank-2 product with an
// f16-stored weight (cuBLAS: the weight's widening cast folds away, the
// weight is used as stored) and one with an f32 weight (narrowed per call),
// attention over a KV cache (the cache arguments become f16: the signature
// and the device plan say so) and a residual add in f32. Inputs and outputs
// keep f32.
// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points=interleave=false --loom-gpu-activation-dtype=dtype=f16 --canonicalize --cse | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points=interleave=false --loom-gpu-activation-dtype=dtype=bf16 --canonicalize --cse | FileCheck %s --check-prefix=BF16
// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points=interleave=false --loom-gpu-activation-dtype=dtype=f32 | FileCheck %s --check-prefix=F32
// RUN: loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90 max-dim=64 dtype=f16" | FileCheck %s --check-prefix=FULL
// RUN: loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90 max-dim=64" | FileCheck %s --check-prefix=FULL32
// RUN: not loom-opt %s --split-input-file --loom-gpu-activation-dtype=dtype=f8 2>&1 | FileCheck %s --check-prefix=BAD

// The cache arguments f16, the other inputs and the result f32.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<1x64xf32> {loom.name = "x"}
// CHECK-SAME: %[[CK:[a-z0-9]+]]: tensor<1x2x?x16xf16> {loom.name = "cache_key_0", loom.state = "kv_cache"}
// CHECK-SAME: %[[CV:[a-z0-9]+]]: tensor<1x2x?x16xf16> {loom.name = "cache_value_0", loom.state = "kv_cache"}
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<64xf32> {loom.weight
// CHECK-SAME: %[[WK:[a-z0-9]+]]: tensor<32x64xf16> {loom.weight
// CHECK-SAME: %[[WV:[a-z0-9]+]]: tensor<32x64xf32> {loom.weight
// CHECK-SAME: -> (tensor<1x64xf32> {loom.name = "y"})
// The norm in f32 on the f32 input, narrowed once for the three products.
// CHECK: %[[N:.+]] = loom.rms_norm %[[X]] scale(%[[G]] : tensor<64xf32>) {{.*}} -> tensor<1x64xf32>
// CHECK: %[[NH:.+]] = loom.cast %[[N]] : tensor<1x64xf32> -> tensor<1x64xf16>
// CHECK: %[[Q:.+]] = loom.qmatmul %[[NH]], %{{.+}} : tensor<1x64xf16>, {{.*}} -> tensor<1x64xf16>
// The f16 weight as stored (its widening gone), the f32 one narrowed.
// CHECK: %[[K:.+]] = loom.matmul %[[NH]], %[[WK]] transpose_b : tensor<1x64xf16>, tensor<32x64xf16> -> tensor<1x32xf16>
// CHECK: %[[WVH:.+]] = loom.cast %[[WV]] : tensor<32x64xf32> -> tensor<32x64xf16>
// CHECK: loom.matmul %[[NH]], %[[WVH]] transpose_b : tensor<1x64xf16>, tensor<32x64xf16> -> tensor<1x32xf16>
// Data movement keeps f16; the attention reads and writes the f16 cache.
// CHECK: loom.transpose {{.*}} -> tensor<1x4x1x16xf16>
// CHECK: %[[O:.+]], %{{.+}}:2 = loom.attention {{.*}} cache(%[[CK]], %[[CV]] at {{.*}} : tensor<1x4x1x16xf16>, tensor<1x2x1x16xf16>, tensor<1x2x1x16xf16> -> tensor<1x4x1x16xf16>, tensor<1x2x?x16xf16>, tensor<1x2x?x16xf16>
// CHECK: %[[OR:.+]] = loom.reshape {{.*}} : tensor<1x1x4x16xf16> -> tensor<1x64xf16>
// The residual add in f32.
// CHECK: %[[OW:.+]] = loom.cast %[[OR]] : tensor<1x64xf16> -> tensor<1x64xf32>
// CHECK: %[[Y:.+]] = loom.add %[[OW]], %[[X]] : tensor<1x64xf32>, tensor<1x64xf32> -> tensor<1x64xf32>
// CHECK: return %[[Y]] : tensor<1x64xf32>

// bf16: the quantized product computes in f32 (no bf16 kernels), so its
// result is f32 until the attention narrows the rotated q.
// BF16-LABEL: func.func @step(
// BF16-SAME: tensor<1x2x?x16xbf16> {loom.name = "cache_key_0"
// BF16: loom.qmatmul %{{.+}}, %{{.+}} : tensor<1x64xf32>, {{.*}} -> tensor<1x64xf32>
// BF16: loom.matmul {{.*}} : tensor<1x64xbf16>, tensor<32x64xbf16> -> tensor<1x32xbf16>
// BF16: loom.transpose {{.*}} -> tensor<1x4x1x16xf32>
// BF16: %[[QB:.+]] = loom.cast %{{.+}} : tensor<1x4x1x16xf32> -> tensor<1x4x1x16xbf16>
// BF16: loom.attention %[[QB]], {{.*}} -> tensor<1x4x1x16xbf16>, tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>
// BF16: return {{.*}} : tensor<1x64xf32>

// f32: nothing changes.
// F32-LABEL: func.func @step(
// F32-SAME: tensor<1x2x?x16xf32> {loom.name = "cache_key_0"
// F32: loom.matmul {{.*}} -> tensor<1x32xf32>
// F32: loom.attention {{.*}} -> tensor<1x4x1x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>
// F32: return

// The whole pipeline: the cache at 128 bytes per position instead of 256,
// a smaller workspace (f16 intermediates), the same resident weights (the
// f32 one narrowed per call in the workspace).
// FULL-LABEL: llvm.func internal @step(
// FULL-SAME: loom_gpu_peak_bytes = 20544 : i64, loom_gpu_resident_bytes = 15104 : i64, loom_gpu_state_bytes_per_position = 128 : i64, loom_gpu_upload_bytes = 256 : i64, loom_gpu_workspace_bytes = 5440 : i64
// FULL32-LABEL: llvm.func internal @step(
// FULL32-SAME: loom_gpu_peak_bytes = 24448 : i64, loom_gpu_resident_bytes = 15104 : i64, loom_gpu_state_bytes_per_position = 256 : i64, loom_gpu_upload_bytes = 256 : i64, loom_gpu_workspace_bytes = 9344 : i64

// BAD: --gpu-dtype=f8: unknown; expected f32, f16 or bf16

func.func @step(%x: tensor<1x64xf32> {loom.name = "x"},
                %pos: tensor<1xi64> {loom.name = "positions"},
                %ck: tensor<1x2x?x16xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"},
                %cv: tensor<1x2x?x16xf32> {loom.name = "cache_value_0", loom.state = "kv_cache"})
    -> (tensor<1x64xf32> {loom.name = "y"}) {
  %g = loom.weight "norm" from <"w.bin", offset = 0> : tensor<64xf32>
  %n = loom.rms_norm %x scale(%g : tensor<64xf32>) epsilon = 1.0e-5 : tensor<1x64xf32> -> tensor<1x64xf32>
  %wq = loom.weight "wq" from <"w.bin", offset = 256> : !loom.qtensor<64x64, #loom.quant<q4_1>>
  %q = loom.qmatmul %n, %wq : tensor<1x64xf32>, !loom.qtensor<64x64, #loom.quant<q4_1>> -> tensor<1x64xf32>
  %wk = loom.weight "wk" from <"w.bin", offset = 2816> : tensor<32x64xf16>
  %wkf = loom.cast %wk : tensor<32x64xf16> -> tensor<32x64xf32>
  %k = loom.matmul %n, %wkf transpose_b : tensor<1x64xf32>, tensor<32x64xf32> -> tensor<1x32xf32>
  %wv = loom.weight "wv" from <"w.bin", offset = 6912> : tensor<32x64xf32>
  %v = loom.matmul %n, %wv transpose_b : tensor<1x64xf32>, tensor<32x64xf32> -> tensor<1x32xf32>
  %q4 = loom.reshape %q : tensor<1x64xf32> -> tensor<1x1x4x16xf32>
  %qh = loom.transpose %q4 permutation = [0, 2, 1, 3] : tensor<1x1x4x16xf32> -> tensor<1x4x1x16xf32>
  %k4 = loom.reshape %k : tensor<1x32xf32> -> tensor<1x1x2x16xf32>
  %kh = loom.transpose %k4 permutation = [0, 2, 1, 3] : tensor<1x1x2x16xf32> -> tensor<1x2x1x16xf32>
  %v4 = loom.reshape %v : tensor<1x32xf32> -> tensor<1x1x2x16xf32>
  %vh = loom.transpose %v4 permutation = [0, 2, 1, 3] : tensor<1x1x2x16xf32> -> tensor<1x2x1x16xf32>
  %o, %p:2 = loom.attention %qh, %kh, %vh cache(%ck, %cv at %pos : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1xi64>) causal : tensor<1x4x1x16xf32>, tensor<1x2x1x16xf32>, tensor<1x2x1x16xf32> -> tensor<1x4x1x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>
  %ot = loom.transpose %o permutation = [0, 2, 1, 3] : tensor<1x4x1x16xf32> -> tensor<1x1x4x16xf32>
  %o2 = loom.reshape %ot : tensor<1x1x4x16xf32> -> tensor<1x64xf32>
  %y = loom.add %o2, %x : tensor<1x64xf32>, tensor<1x64xf32> -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}

// -----

// An f16 tensor of the input program (an ONNX float16 model's) is not the
// pass's: it keeps its type and its ops.
// RUN: loom-opt %s --split-input-file --loom-gpu-activation-dtype=dtype=f16 | FileCheck %s --check-prefix=OWN
// OWN-LABEL: func.func @own_f16(
// OWN: %[[E:.+]] = loom.exp %arg0 : tensor<4xf16>
// OWN: loom.add %[[E]], %arg0 : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
func.func @own_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  %e = loom.exp %x : tensor<4xf16>
  %y = loom.add %e, %x : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

// A cache whose attention is not fused (here fused-attention=false) stays
// f32: a narrow cache would be written through a widened copy, and the
// writes lost.
// RUN: loom-opt %s --split-input-file --loom-gpu-activation-dtype="dtype=f16 fused-attention=false" | FileCheck %s --check-prefix=UNFUSED
// UNFUSED-LABEL: func.func @unfused_cache(
// UNFUSED-SAME: %arg3: tensor<1x2x?x16xf32>
// UNFUSED: loom.attention {{.*}} -> tensor<1x4x1x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>
func.func @unfused_cache(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x1x16xf32>,
                         %v: tensor<1x2x1x16xf32>,
                         %ck: tensor<1x2x?x16xf32> {loom.state = "kv_cache"},
                         %cv: tensor<1x2x?x16xf32> {loom.state = "kv_cache"},
                         %pos: tensor<1xi64>) -> tensor<1x4x1x16xf32> {
  %o, %p:2 = loom.attention %q, %k, %v cache(%ck, %cv at %pos : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1xi64>) causal : tensor<1x4x1x16xf32>, tensor<1x2x1x16xf32>, tensor<1x2x1x16xf32> -> tensor<1x4x1x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

// A product whose result is only returned (an LM head's logits) stays f32:
// a narrow result would be widened into a second, f32 copy of the largest
// tensor of a prefill.
// RUN: loom-opt %s --split-input-file --loom-gpu-activation-dtype=dtype=f16 | FileCheck %s --check-prefix=HEAD
// HEAD-LABEL: func.func @head(
// HEAD: loom.qmatmul %arg0, %arg1 : tensor<1x?x64xf32>, {{.*}} -> tensor<1x?x96xf32>
// HEAD-NOT: loom.cast
// HEAD: return
func.func @head(%x: tensor<1x?x64xf32>, %w: !loom.qtensor<96x64, #loom.quant<q4_1>>) -> tensor<1x?x96xf32> {
  %y = loom.qmatmul %x, %w : tensor<1x?x64xf32>, !loom.qtensor<96x64, #loom.quant<q4_1>> -> tensor<1x?x96xf32>
  return %y : tensor<1x?x96xf32>
}
