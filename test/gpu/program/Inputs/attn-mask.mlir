// Attention with explicit masks (docs/GPU.md "Fused attention"): 6 query
// heads over 2 KV heads of dimension 8, no causal mask; an additive f32
// mask [S, T] broadcast over heads and a boolean mask [1, 1, S, T], with
// past keys/values concatenated before the new ones (T = 4 + S).
func.func @masked(%q: tensor<1x6x5x8xf32> {loom.name = "q"},
                  %k: tensor<1x2x5x8xf32> {loom.name = "k"},
                  %v: tensor<1x2x5x8xf32> {loom.name = "v"},
                  %pk: tensor<1x2x4x8xf32> {loom.name = "past_key"},
                  %pv: tensor<1x2x4x8xf32> {loom.name = "past_value"},
                  %add: tensor<5x9xf32> {loom.name = "add_mask"},
                  %keep: tensor<1x1x5x9xi1> {loom.name = "keep_mask"})
    -> (tensor<1x6x5x8xf32> {loom.name = "y"}, tensor<1x6x5x8xf32> {loom.name = "z"}) {
  %y, %p:2 = loom.attention %q, %k, %v mask(%add : tensor<5x9xf32>) past(%pk, %pv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) : tensor<1x6x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32> -> tensor<1x6x5x8xf32>, tensor<1x2x9x8xf32>, tensor<1x2x9x8xf32>
  %z, %r:2 = loom.attention %q, %k, %v mask(%keep : tensor<1x1x5x9xi1>) past(%pk, %pv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) : tensor<1x6x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32> -> tensor<1x6x5x8xf32>, tensor<1x2x9x8xf32>, tensor<1x2x9x8xf32>
  return %y, %z : tensor<1x6x5x8xf32>, tensor<1x6x5x8xf32>
}
