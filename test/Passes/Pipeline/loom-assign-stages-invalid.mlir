// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-plan-sharding --loom-assign-stages

// Two layers cannot fill four stages.
// expected-error @+1 {{more pipeline stages than layers: 'pp=4' asks for 4 stages but the model has 2 decoder layers (each stage needs at least one); use pp <= 2}}
module {
  loom.mesh @mesh = <pp = 4>
  func.func @f(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
    %m0 = loom.matmul %x, %w0 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h0 = loom.add %x, %m0 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
    %m1 = loom.matmul %h0, %w1 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h1 = loom.add %h0, %m1 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %wh = loom.weight "head" : tensor<64x64xf32>
    %y = loom.matmul %h1, %wh : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    return %y : tensor<8x64xf32>
  }
}

// -----

// No weight names a layer: nothing to stage.
// expected-error @+1 {{cannot stage this model over 'pp=2': no weight name carries a decoder layer index}}
module {
  loom.mesh @mesh = <pp = 2>
  func.func @f(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %w = loom.weight "proj" : tensor<64x64xf32>
    %y = loom.matmul %x, %w : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    return %y : tensor<8x64xf32>
  }
}

// -----

// A pin outside the stages.
module {
  loom.mesh @mesh = <pp = 2>
  func.func @f(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
    %m0 = loom.matmul %x, %w0 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h0 = loom.add %x, %m0 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
    // expected-error @+1 {{loom.stage = 2 but the mesh's 'pp' axis has 2 stages (0-1); pin a stage in that range}}
    %p = loom.gelu %x {loom.stage = #loom.stage<2>} : tensor<8x64xf32>
    %m1 = loom.matmul %h0, %w1 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h1 = loom.add %h0, %m1 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %w2 = loom.weight "layers.2.w" : tensor<64x64xf32>
    %m2 = loom.matmul %h1, %w2 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h2 = loom.add %h1, %m2 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %wh = loom.weight "head" : tensor<64x64xf32>
    %y = loom.matmul %h2, %wh : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    return %y : tensor<8x64xf32>
  }
}

// -----

// Two pins in one layer disagree.
module {
  loom.mesh @mesh = <pp = 2>
  func.func @f(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
    %m0 = loom.matmul %x, %w0 {loom.stage = #loom.stage<0>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %w0b = loom.weight "layers.0.v" : tensor<64x64xf32>
    // expected-error @+1 {{loom.stage = 1 but layer 0 is pinned to stage 0 at}}
    %m0b = loom.matmul %m0, %w0b {loom.stage = #loom.stage<1>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
    %m1 = loom.matmul %m0b, %w1 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    return %m1 : tensor<8x64xf32>
  }
}

// -----

// Pins out of order: layer 0 in stage 1, layer 1 in stage 0.
// expected-error @+1 {{the loom.stage pins cannot be met: stages hold consecutive layers in order}}
module {
  loom.mesh @mesh = <pp = 2>
  func.func @f(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
    %m0 = loom.matmul %x, %w0 {loom.stage = #loom.stage<1>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
    %m1 = loom.matmul %m0, %w1 {loom.stage = #loom.stage<0>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    return %m1 : tensor<8x64xf32>
  }
}

// -----

// The planner never splits a tensor over the pipeline axis.
module {
  loom.mesh @mesh = <pp = 2, tp = 2>
  func.func @f(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
    // expected-error @+1 {{uses the pipeline axis 'pp', which stages layers and never splits a tensor; remove 'pp' from it}}
    %m0 = loom.matmul %x, %w0 {loom.sharding = #loom.sharding<@mesh, [{}, {pp}]>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    return %m0 : tensor<8x64xf32>
  }
}
