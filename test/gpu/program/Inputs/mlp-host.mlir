// The demo MLP (examples/mlp) with a batch of 8 and its weights as
// arguments, for the host programs of test/gpu/program/CMakeLists.txt.
func.func @mlp(%x: tensor<8x256xf32>, %w1: tensor<1024x256xf32>, %b1: tensor<1024xf32>, %w2: tensor<256x1024xf32>, %b2: tensor<256xf32>) -> tensor<8x256xf32> {
  %0 = loom.matmul %x, %w1 transpose_b : tensor<8x256xf32>, tensor<1024x256xf32> -> tensor<8x1024xf32>
  %1 = loom.add %0, %b1 : tensor<8x1024xf32>, tensor<1024xf32> -> tensor<8x1024xf32>
  %2 = loom.gelu %1 : tensor<8x1024xf32>
  %3 = loom.matmul %2, %w2 transpose_b : tensor<8x1024xf32>, tensor<256x1024xf32> -> tensor<8x256xf32>
  %4 = loom.add %3, %b2 : tensor<8x256xf32>, tensor<256xf32> -> tensor<8x256xf32>
  %5 = loom.layer_norm %4 axis = -1 epsilon = 1.0e-5 : tensor<8x256xf32> -> tensor<8x256xf32>
  return %5 : tensor<8x256xf32>
}
