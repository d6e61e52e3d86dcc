// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg --verify-diagnostics

// Loom's int4/int8 blocks with an integer zero point have no CPU lowering
// (symmetric and min do): the error names the argument and what to use.
// expected-error @+1 {{mode zero_point has no CPU kernel (use symmetric or min)}}
func.func @q(%x: tensor<2x64xf32>, %w: !loom.qtensor<8x64, #loom.quant<int4, block = 32, mode = zero_point, scale = f16>>) -> tensor<2x8xf32> {
  %0 = loom.qmatmul %x, %w : tensor<2x64xf32>, !loom.qtensor<8x64, #loom.quant<int4, block = 32, mode = zero_point, scale = f16>> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A reshape whose dynamic sizes cannot be inferred is rejected clearly.
func.func @r(%x: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{cannot lower this reshape: its dynamic sizes cannot be inferred}}
  %0 = loom.reshape %x : tensor<?x?xf32> -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// A quantize at run time has no CPU lowering: refused by name.
func.func @quantize(%f: tensor<64x128xf32>) -> tensor<64x128xf32> {
  // expected-error @+1 {{loom.quantize is not lowered to CPU code yet}}
  %0 = loom.quantize %f : tensor<64x128xf32> -> !loom.qtensor<64x128, #loom.quant<int4>>
  %1 = loom.dequantize %0 : !loom.qtensor<64x128, #loom.quant<int4>> -> tensor<64x128xf32>
  return %1 : tensor<64x128xf32>
}

// -----

// A collective needs the runtime context of an entry point.
loom.mesh @mesh = <tp = 2>
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{collectives lower only inside entry points}}
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A recv needs a static shape.
loom.mesh @mesh = <pp = 2>
func.func @recv(%n: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{loom.recv needs a static shape to lower}}
  %0 = loom.recv from @mesh axes = ["pp"] shift = -1 channel = 0 : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A broadcast from size 1 to a dynamic size needs that size (given as an
// operand): it is not taken to be 1.
func.func @bcast(%x: tensor<1x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{cannot lower this broadcast: the size of dynamic result dimension 0 is not known}}
  %0 = loom.broadcast %x : tensor<1x4xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Two dynamic dims in the same place are not assumed to be the same
// ([S*B, E] -> [S, B, E] without sizes).
func.func @merge(%x: tensor<?x64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{cannot lower this reshape: its dynamic sizes cannot be inferred}}
  %0 = loom.reshape %x : tensor<?x64xf32> -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

// A gather's constant index out of range of a static dimension is an error
// at compile time (ONNX Gather: [-8, 8) here), naming the index and bound.
func.func @gather_bad_constant(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  %i = loom.constant dense<[-8, 8]> : tensor<2xi64>
  // expected-error @+1 {{'loom.gather' op constant index 8 (position 1) is out of range [-8, 8) of dimension 1 of the input}}
  %0 = loom.gather %x, %i axis = 1 : tensor<4x8xf32>, tensor<2xi64> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
