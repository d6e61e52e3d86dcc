// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-plan-sharding

loom.mesh @mesh = <tp = 2>
func.func @softmax_axis(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{dimension 1 of result #0 cannot be split over 'tp': 'loom.softmax' reads that dimension whole}}
  %y = loom.softmax %x axis = 1 {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>} : tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

loom.mesh @mesh = <tp = 4>
func.func @kv_heads(%q: tensor<1x8x8x16xf32>, %kv: tensor<1x2x8x16xf32>) -> tensor<1x8x8x16xf32> {
  // 8 query heads divide over 4, but their 2 KV heads do not.
  // expected-error @+1 {{dimension 1 of result #0 cannot be split over 'tp': size 2 does not divide over a group of 4}}
  %o = loom.attention %q, %kv, %kv causal {loom.sharding = #loom.sharding<@mesh, [{}, {tp}, {}, {}]>} : tensor<1x8x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x8x8x16xf32>
  return %o : tensor<1x8x8x16xf32>
}

// -----

loom.mesh @mesh = <tp = 2>
func.func @partial(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{result #0 cannot be partial over 'tp'}}
  %y = loom.relu %x {loom.sharding = #loom.sharding<@mesh, [{}, {}], partial = {tp}>} : tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}


// -----

// A candidate that is not a strategy of the op names the candidate, the
// rule that offered it and the reason.
loom.mesh @mesh = <tp = 2>
func.func @bad_candidate(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{candidate #1 of sharding rule 'split_softmax': dimension 1 of result #0 cannot be split over 'tp': 'loom.softmax' reads that dimension whole}}
  %y = loom.softmax %x axis = 1 {loom.sharding_candidates = [#loom.sharding<@mesh, [{tp}, {}]>, #loom.sharding<@mesh, [{}, {tp}]>], loom.sharding_rule = "split_softmax"} : tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

loom.mesh @mesh = <tp = 2>
func.func @both(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'loom.sharding_candidates': give 'loom.sharding' (one sharding) or 'loom.sharding_candidates', not both}}
  %y = loom.relu %x {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>, loom.sharding_candidates = [#loom.sharding<@mesh, [{tp}, {}]>]} : tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
