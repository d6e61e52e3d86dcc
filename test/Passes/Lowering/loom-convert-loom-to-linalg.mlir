// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --enable-var-scope

// Elementwise ops with broadcasting become one linalg.generic whose maps
// broadcast the bias; the dynamic size comes from the input.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias
// CHECK: %[[D:.+]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x8xf32>
// CHECK: tensor.empty(%[[D]]) : tensor<?x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
func.func @bias(%x: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = loom.add %x, %b : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A matmul is a generic with a reduction over K after a zero fill; with
// transpose_b the weight is read as (n, k).
// CHECK-DAG: #[[$A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$B:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[$A]], #[[$B]], #[[$C]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %0 = loom.matmul %x, %w transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// A collective is checked and stays on tensors, with its mesh: it becomes a
// runtime call on buffers in loom-bufferize (loom-bufferize.mlir).
// CHECK: loom.mesh @mesh
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%{{[^:]+}}: !llvm.ptr, %[[X:[^:]+]]: tensor<4x8xf32>
// CHECK-NEXT: %[[R:.+]] = loom.all_reduce %[[X]] on @mesh axes = ["tp"] : tensor<4x8xf32>
// CHECK-NEXT: return %[[R]]
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_reduce(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Send and recv stay too, in order.
// CHECK-LABEL: func.func @ring
// CHECK: loom.send
// CHECK: loom.recv
loom.mesh @mesh = <pp = 4>
func.func @ring(%x: tensor<8xf32>) -> tensor<8xf32> {
  loom.send %x to @mesh axes = ["pp"] shift = 1 channel = 3 : tensor<8xf32>
  %0 = loom.recv from @mesh axes = ["pp"] shift = -1 channel = 3 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Attention in f32: both products are batched GEMMs in the runtime; with
// 9 query heads on 3 KV heads, head h reads KV head h / 3 (group = 3).
// CHECK-LABEL: func.func @attention
// CHECK-DAG: %[[H:.+]] = arith.constant 9 : i64
// CHECK-DAG: %[[G:.+]] = arith.constant 3 : i64
// CHECK: call @loom_rt_sgemm_batched(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[H]], %[[G]],
// CHECK: math.exp
// CHECK: call @loom_rt_sgemm_batched
func.func @attention(%q: tensor<1x9x4x8xf32>, %k: tensor<1x3x4x8xf32>, %v: tensor<1x3x4x8xf32>) -> tensor<1x9x4x8xf32> {
  %0 = loom.attention %q, %k, %v causal : tensor<1x9x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32> -> tensor<1x9x4x8xf32>
  return %0 : tensor<1x9x4x8xf32>
}

// -----

// GGUF blocks travel as their bytes (8 rows of 2 Q4_0 blocks of 18 bytes);
// loom.qmatmul calls a generated vector kernel (one per scheme and K) that
// unpacks the blocks in registers: f16 scale from two bytes, nibbles,
// multiply-adds, a horizontal sum per output (test/Passes/Quantize for the
// dequantize + GEMM fallback).
// CHECK-LABEL: func.func @qmatmul
// CHECK-SAME: tensor<8x36xi8>
// CHECK: call @__loom_qmm_q4_0_b32_zero_point_f16_k64(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x64xf32>, memref<?x36xi8>, memref<?x?xf32>) -> ()
// CHECK: func.func private @__loom_qmm_q4_0_b32_zero_point_f16_k64
// CHECK: vector.bitcast %{{.*}} : vector<2xi8> to vector<1xf16>
// CHECK: arith.shrui %{{.*}} : vector<16xi8>
// CHECK: vector.fma
// CHECK: vector.reduction <add>
func.func @qmatmul(%x: tensor<?x64xf32>, %w: !loom.qtensor<8x64, #loom.quant<q4_0>>) -> tensor<?x8xf32> {
  %0 = loom.qmatmul %x, %w : tensor<?x64xf32>, !loom.qtensor<8x64, #loom.quant<q4_0>> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise (ElementwisePatterns.cpp)
//===----------------------------------------------------------------------===//

// A unary op is one generic with the scalar formula in its body: GELU's
// tanh form, and integer negation as 0 - x.
// CHECK-LABEL: func.func @unary
// CHECK: linalg.generic
// CHECK: arith.constant 4.471500e-02 : f32
// CHECK: math.tanh
// CHECK: linalg.generic
// CHECK: %[[Z:.+]] = arith.constant 0 : i32
// CHECK: arith.subi %[[Z]], %{{.*}} : i32
func.func @unary(%x: tensor<2x4xf32>, %i: tensor<4xi32>) -> (tensor<2x4xf32>, tensor<4xi32>) {
  %0 = loom.gelu %x approximate = tanh : tensor<2x4xf32>
  %1 = loom.neg %i : tensor<4xi32>
  return %0, %1 : tensor<2x4xf32>, tensor<4xi32>
}

// -----

// Compare and select broadcast their operands like the binary ops; float
// `lt` is an ordered compare.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @compare_select
// CHECK: %[[C:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]]
// CHECK: arith.cmpf olt
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$ROW]], #[[$ID]]], {{.*}} ins(%[[C]], %{{.*}}, %{{.*}} : tensor<2x4xi1>, tensor<2x4xf32>, tensor<4xf32>)
// CHECK: arith.select
func.func @compare_select(%a: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = loom.compare lt, %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xi1>
  %1 = loom.select %0, %a, %b : tensor<2x4xi1>, tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// A constant is an arith.constant; broadcast reads dimension 0 of a size-1
// input at 0; a cast truncates in the body.
// CHECK-DAG: #[[$BC:.+]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @cast_broadcast
// CHECK: %[[CST:.+]] = arith.constant dense<1.000000e+00> : tensor<1x4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[CST]] : tensor<1x4xf32>, tensor<1x4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$BC]], #{{.*}}], {{.*}} outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @cast_broadcast(%x: tensor<1x4xf32>) -> tensor<8x4xf16> {
  %c = loom.constant dense<1.0> : tensor<1x4xf32>
  %0 = loom.add %x, %c : tensor<1x4xf32>, tensor<1x4xf32> -> tensor<1x4xf32>
  %1 = loom.broadcast %0 : tensor<1x4xf32> -> tensor<8x4xf32>
  %2 = loom.cast %1 : tensor<8x4xf32> -> tensor<8x4xf16>
  return %2 : tensor<8x4xf16>
}

// -----

//===----------------------------------------------------------------------===//
// Contractions, reductions and norms (ContractionPatterns.cpp)
//===----------------------------------------------------------------------===//

// Softmax: max-reduce, exp(x - max), sum-reduce, divide.
// CHECK-LABEL: func.func @softmax
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: linalg.generic
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.divf
func.func @softmax(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = loom.softmax %x axis = -1 : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// A mean is a sum divided by the reduced size; keep_dims re-expands.
// CHECK-LABEL: func.func @reduce_mean
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: arith.sitofp
// CHECK: linalg.generic
// CHECK: arith.divf
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [%{{.*}}, 1] : tensor<?xf32> into tensor<?x1xf32>
func.func @reduce_mean(%x: tensor<?x16xf32>) -> tensor<?x1xf32> {
  %0 = loom.reduce mean %x axes = [1] keep_dims : tensor<?x16xf32> -> tensor<?x1xf32>
  return %0 : tensor<?x1xf32>
}

// -----

// rms_norm: a sum of squares, then x * rsqrt(ss / n + eps) * scale.
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x16xf32>, %[[W:[^:]+]]: tensor<16xf32>
// CHECK: %[[SS:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[SS]], %[[W]] :
// CHECK: math.rsqrt
func.func @rms_norm(%x: tensor<?x16xf32>, %w: tensor<16xf32>) -> tensor<?x16xf32> {
  %0 = loom.rms_norm %x scale(%w : tensor<16xf32>) epsilon = 1.0e-5 : tensor<?x16xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// layer_norm centres first, then reduces the squares of the centred values.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: %[[CEN:.+]] = linalg.generic {{.*}} ins(%{{.*}}, %[[SUM]] :
// CHECK: arith.subf
// CHECK: %[[SQ:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[CEN]] :
// CHECK: linalg.generic {{.*}} ins(%[[CEN]], %[[SQ]], %{{.*}}, %{{.*}} :
// CHECK: math.rsqrt
func.func @layer_norm(%x: tensor<?x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<?x16xf32> {
  %0 = loom.layer_norm %x scale(%w : tensor<16xf32>) bias(%b : tensor<16xf32>) axis = -1 epsilon = 1.0e-5 : tensor<?x16xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// A large f32 matmul calls the runtime's GEMM (trans_b = 1) in a
// loom_cpu.kernel: it reads the operands and writes its destination (a
// tensor.empty), the call on their buffers (bufferized by loom-bufferize).
// CHECK: func.func private @loom_rt_sgemm(!llvm.ptr, i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: func.func @matmul_gemm
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[X:[^:]+]]: tensor<?x256xf32>, %[[W:[^:]+]]: tensor<512x256xf32>
// CHECK-DAG: %[[TB:.+]] = arith.constant 1 : i32
// CHECK: %[[E:.+]] = tensor.empty(%{{.*}}) : tensor<?x512xf32>
// CHECK: %[[R:.+]] = loom_cpu.kernel ins(%[[X]], %[[W]] : tensor<?x256xf32>, tensor<512x256xf32>) outs(%[[E]] : tensor<?x512xf32>)
// CHECK-NEXT: ^bb0(%[[MX:.+]]: memref<?x256xf32>, %[[MW:.+]]: memref<512x256xf32>, %[[MC:.+]]: memref<?x512xf32>):
// CHECK: memref.extract_aligned_pointer_as_index %[[MX]]
// CHECK: memref.extract_aligned_pointer_as_index %[[MW]]
// CHECK: memref.extract_aligned_pointer_as_index %[[MC]]
// CHECK: call @loom_rt_sgemm(%[[CTX]], %{{.*}}, %[[TB]],
// CHECK: } -> tensor<?x512xf32>
// CHECK: return %[[R]]
func.func @matmul_gemm(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>) -> tensor<?x512xf32> {
  %0 = loom.matmul %x, %w transpose_b : tensor<?x256xf32>, tensor<512x256xf32> -> tensor<?x512xf32>
  return %0 : tensor<?x512xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Data movement (DataMovementPatterns.cpp)
//===----------------------------------------------------------------------===//

// A reshape that splits the last dimension is one expand_shape (the
// dynamic size from the input); a transpose is linalg.transpose.
// CHECK-LABEL: func.func @reshape_transpose
// CHECK: %[[E:.+]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [1, %{{.*}}, 9, 64] : tensor<1x?x576xf32> into tensor<1x?x9x64xf32>
// CHECK: linalg.transpose ins(%[[E]] : tensor<1x?x9x64xf32>) outs(%{{.*}} : tensor<1x9x?x64xf32>) permutation = [0, 2, 1, 3]
func.func @reshape_transpose(%s: tensor<1x?x576xf32>) -> tensor<1x9x?x64xf32> {
  %0 = loom.reshape %s : tensor<1x?x576xf32> -> tensor<1x?x9x64xf32>
  %1 = loom.transpose %0 permutation = [0, 2, 1, 3] : tensor<1x?x9x64xf32> -> tensor<1x9x?x64xf32>
  return %1 : tensor<1x9x?x64xf32>
}

// -----

// concat inserts each input at its offset; a strided slice is one
// extract_slice.
// CHECK-LABEL: func.func @concat_slice
// CHECK: %[[A:.+]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, %{{.*}}] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x8xf32>
// CHECK: %[[B:.+]] = tensor.insert_slice %{{.*}} into %[[A]][0, %{{.*}}] [2, 5] [1, 1] : tensor<2x5xf32> into tensor<2x8xf32>
// CHECK: tensor.extract_slice %[[B]][0, 0] [2, 4] [1, 2] : tensor<2x8xf32> to tensor<2x4xf32>
func.func @concat_slice(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x4xf32> {
  %0 = loom.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  %1 = loom.slice %0 starts = [0, 0] limits = [2, 8] steps = [1, 2] : tensor<2x8xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// gather: run-time indices are checked first, as an embedding's ids
// (ONNX Gather: [-8, 8) of the gathered dimension), naming the input; then
// a generic over the result reading the indices, where a negative index
// counts from the end.
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}("loom.gather\00")
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}("i\00")
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[X:[^:]+]]: tensor<8x4xf32>, %[[I:[^:]+]]: tensor<3xi64>
// CHECK: %[[N:.+]] = arith.constant 8 : index
// CHECK: %[[HI:.+]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[LO:.+]] = arith.subi %{{.+}}, %[[HI]] : i64
// CHECK: scf.for
// CHECK: %[[ID:.+]] = tensor.extract %[[I]]
// CHECK: arith.cmpi uge
// CHECK: scf.if
// CHECK: func.call @loom_rt_index_error(%[[CTX]], %{{.+}}, %[[ID]], %[[LO]], %[[HI]], %{{.+}})
// CHECK: linalg.generic {{.*}} ins(%[[I]] : tensor<3xi64>) outs(%{{.*}} : tensor<3x4xf32>)
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK: tensor.extract %[[X]]
func.func @gather(%x: tensor<8x4xf32>, %i: tensor<3xi64> {loom.name = "i"}) -> tensor<3x4xf32> {
  %0 = loom.gather %x, %i axis = 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Constant indices along a static dimension are checked at compile time
// (in range here: no run-time check); along a run-time dimension (the last
// position of a sequence, as a decode step takes it) they are checked when
// the program runs, against the run-time size.
// CHECK-LABEL: func.func @gather_constant
// CHECK-NOT: loom_rt_index_error
// CHECK: linalg.generic
// CHECK-LABEL: func.func @gather_last
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[X:[^:]+]]: tensor<1x?x4xf32>
// CHECK: %[[N:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<1x?x4xf32>
// CHECK: %[[HI:.+]] = arith.index_cast %[[N]] : index to i64
// CHECK: scf.if
// CHECK: func.call @loom_rt_index_error(%[[CTX]], %{{.+}}, %{{.+}}, %{{.+}}, %[[HI]], %{{.+}})
// CHECK: linalg.generic
func.func @gather_constant(%x: tensor<8x4xf32>) -> tensor<3x4xf32> {
  %i = loom.constant dense<[0, -1, 7]> : tensor<3xi64>
  %0 = loom.gather %x, %i axis = 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
func.func @gather_last(%x: tensor<1x?x4xf32>) -> tensor<1x1x4xf32> {
  %i = loom.constant dense<[-1]> : tensor<1xi64>
  %0 = loom.gather %x, %i axis = 1 : tensor<1x?x4xf32>, tensor<1xi64> -> tensor<1x1x4xf32>
  return %0 : tensor<1x1x4xf32>
}

// -----

// An embedding checks every id first (loom_rt_index_error names the input
// and the op), then gathers rows of the table (an outlined weight).
// CHECK: func.func private @loom_rt_index_error(!llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}("loom.embedding\00")
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}("input0\00")
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[IDS:[^:]+]]: tensor<1x?xi64>, %[[T:[^:]+]]: tensor<100x16xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.extract %[[IDS]]
// CHECK: arith.cmpi uge
// CHECK: scf.if
// CHECK: func.call @loom_rt_index_error(%[[CTX]],
// CHECK: linalg.generic {{.*}} ins(%[[IDS]] : tensor<1x?xi64>) outs(%{{.*}} : tensor<1x?x16xf32>)
// CHECK: tensor.extract %[[T]]
func.func @embedding(%ids: tensor<1x?xi64>) -> tensor<1x?x16xf32> {
  %t = loom.weight "table" : tensor<100x16xf32>
  %0 = loom.embedding %t, %ids : tensor<100x16xf32>, tensor<1x?xi64> -> tensor<1x?x16xf32>
  return %0 : tensor<1x?x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Rotary (AttentionPatterns.cpp; attention above)
//===----------------------------------------------------------------------===//

// The table is one generic with two results (cos, sin of position times
// theta^(-2i/dim)); rotary reads both at [s, i] and the partner element.
// CHECK-LABEL: func.func @rotary
// CHECK: %[[CS:.+]]:2 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK: math.exp
// CHECK: math.cos
// CHECK: math.sin
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK: tensor.extract %[[CS]]#0
// CHECK: tensor.extract %[[CS]]#1
func.func @rotary(%pos: tensor<?xi64>, %q: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %cos, %sin = loom.rotary_table %pos theta = 1.0e4 dim = 8 : tensor<?xi64> -> tensor<?x4xf32>
  %0 = loom.rotary %q, %cos, %sin style = half : tensor<1x2x?x8xf32>, tensor<?x4xf32> -> tensor<1x2x?x8xf32>
  return %0 : tensor<1x2x?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Quantized (QuantizedPatterns.cpp; qmatmul above)
//===----------------------------------------------------------------------===//

// The !loom.qtensor argument becomes its bytes (4 rows of 2 Q8_0 blocks of
// 34 bytes); dequantize reads the f16 scale and the int8 value per element.
// CHECK-LABEL: func.func @dequantize
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x68xi8>
// CHECK-NOT: loom.qtensor
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4x64xf32>)
// CHECK: tensor.extract %[[W]]
// CHECK: arith.bitcast %{{.*}} : i16 to f16
// CHECK: arith.sitofp
func.func @dequantize() -> tensor<4x64xf32> {
  %w = loom.weight "w" : !loom.qtensor<4x64, #loom.quant<q8_0>>
  %0 = loom.dequantize %w : !loom.qtensor<4x64, #loom.quant<q8_0>> -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Collectives (CollectivePatterns.cpp; all_reduce, send, recv above): they
// stay for loom-bufferize
//===----------------------------------------------------------------------===//

// all_gather and reduce_scatter stay (loom-bufferize.mlir lowers them).
// CHECK-LABEL: func.func @gather_scatter
// CHECK: loom.all_gather %{{.+}} gather_dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
// CHECK: loom.reduce_scatter %{{.+}} scatter_dim = 0 : tensor<64x64xf32> -> tensor<16x64xf32>
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @gather_scatter(%z: tensor<8x16xf32>, %y: tensor<64x64xf32>) -> (tensor<8x64xf32>, tensor<16x64xf32>) {
  %0 = loom.all_gather %z on @mesh axes = ["tp"] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  %1 = loom.reduce_scatter %y on @mesh axes = ["tp"] scatter_dim = 0 : tensor<64x64xf32> -> tensor<16x64xf32>
  return %0, %1 : tensor<8x64xf32>, tensor<16x64xf32>
}

// -----

// all_to_all: split dim 0 into [p, 8/p] blocks, exchange them in the
// contiguous form (block j of dimension 0 to member j), then move the
// received blocks next to the concat dimension and merge.
// CHECK-LABEL: func.func @all_to_all
// CHECK: %[[E:.+]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [4, 2, 16] : tensor<8x16xf32> into tensor<4x2x16xf32>
// CHECK: %[[X:.+]] = linalg.transpose ins(%[[E]] {{.*}} permutation = [0, 1, 2]
// CHECK: %[[A:.+]] = loom.all_to_all %[[X]] on @mesh axes = ["tp"] split_dim = 0 concat_dim = 0 : tensor<4x2x16xf32> -> tensor<4x2x16xf32>
// CHECK: linalg.transpose ins(%[[A]] {{.*}} permutation = [1, 0, 2]
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : tensor<2x4x16xf32> into tensor<2x64xf32>
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all(%x: tensor<8x16xf32>) -> tensor<2x64xf32> {
  %0 = loom.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// loom.shard is an annotation: its input is the result; the mesh is gone.
// CHECK-NOT: loom.mesh
// CHECK-LABEL: func.func @shard
// CHECK-SAME: (%{{[^:]+}}: !llvm.ptr, %[[X:[^:]+]]: tensor<8x64xf32>
// CHECK-NEXT: return %[[X]] : tensor<8x64xf32>
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @shard(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %0 = loom.shard %x to <@mesh, [{dp, tp}, {}]> : tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// -----

// Every binary op of the elementwise family is one linalg.generic whose body
// is its scalar op: the float forms.
// CHECK-LABEL: func.func @binary_float
// CHECK: linalg.generic
// CHECK: %[[R:.+]] = arith.subf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: linalg.generic
// CHECK: %[[R:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: linalg.generic
// CHECK: %[[R:.+]] = arith.divf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: linalg.generic
// CHECK: %[[R:.+]] = math.powf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: linalg.generic
// CHECK: %[[R:.+]] = arith.maximumf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: linalg.generic
// CHECK: %[[R:.+]] = arith.minimumf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
func.func @binary_float(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = loom.sub %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = loom.mul %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %2 = loom.div %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %3 = loom.pow %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %4 = loom.max %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %5 = loom.min %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The integer forms are signed (numpy on int tensors); and/or/not act on i1.
// CHECK-LABEL: func.func @binary_int
// CHECK: %[[R:.+]] = arith.subi %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = arith.muli %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = arith.divsi %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = arith.maxsi %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = arith.minsi %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = math.absi %{{.+}} : i32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = arith.andi %{{.+}}, %{{.+}} : i1
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = arith.ori %{{.+}}, %{{.+}} : i1
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = arith.xori %{{.+}}, %{{.+}} : i1
// CHECK-NEXT: linalg.yield %[[R]]
func.func @binary_int(%a: tensor<4xi32>, %b: tensor<4xi32>, %p: tensor<4xi1>, %q: tensor<4xi1>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = loom.sub %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %1 = loom.mul %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %2 = loom.div %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %3 = loom.max %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %4 = loom.min %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %5 = loom.abs %a : tensor<4xi32>
  %6 = loom.and %p, %q : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  %7 = loom.or %p, %q : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  %8 = loom.not %p : tensor<4xi1>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// The float unary ops: one generic each, on the math op (reciprocal is
// 1 / x; silu is x * sigmoid(x), sigmoid as 1 / (1 + exp(-x))).
// CHECK-LABEL: func.func @unary_float
// CHECK: %[[R:.+]] = math.absf %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = math.log %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = math.sqrt %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = math.rsqrt %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = arith.divf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = math.sin %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = math.cos %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: %[[R:.+]] = math.erf %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: ^bb0(%[[X:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK: %[[N:.+]] = arith.negf %[[X]] : f32
// CHECK-NEXT: %[[E:.+]] = math.exp %[[N]] : f32
// CHECK-NEXT: %[[D:.+]] = arith.addf %{{.+}}, %[[E]] : f32
// CHECK-NEXT: %[[S:.+]] = arith.divf %{{.+}}, %[[D]] : f32
// CHECK-NEXT: %[[R:.+]] = arith.mulf %[[X]], %[[S]] : f32
// CHECK-NEXT: linalg.yield %[[R]]
func.func @unary_float(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = loom.abs %x : tensor<4xf32>
  %1 = loom.log %x : tensor<4xf32>
  %2 = loom.sqrt %x : tensor<4xf32>
  %3 = loom.rsqrt %x : tensor<4xf32>
  %4 = loom.reciprocal %x : tensor<4xf32>
  %5 = loom.sin %x : tensor<4xf32>
  %6 = loom.cos %x : tensor<4xf32>
  %7 = loom.erf %x : tensor<4xf32>
  %8 = loom.silu %x : tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The activations: one generic each; tanh is the math op, sigmoid
// 1 / (1 + exp(-x)), relu max(x, 0).
// CHECK-LABEL: func.func @unary_activations
// CHECK: %[[R:.+]] = math.tanh %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: ^bb0(%[[X:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK: %[[N:.+]] = arith.negf %[[X]] : f32
// CHECK-NEXT: %[[E:.+]] = math.exp %[[N]] : f32
// CHECK-NEXT: %[[D:.+]] = arith.addf %{{.+}}, %[[E]] : f32
// CHECK-NEXT: %[[S:.+]] = arith.divf %{{.+}}, %[[D]] : f32
// CHECK-NEXT: linalg.yield %[[S]]
// CHECK: ^bb0(%[[X:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK: %[[R:.+]] = arith.maximumf %[[X]], %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
func.func @unary_activations(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = loom.tanh %x : tensor<4xf32>
  %1 = loom.sigmoid %x : tensor<4xf32>
  %2 = loom.relu %x : tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
