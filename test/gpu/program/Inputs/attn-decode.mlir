// A decode step's attention over a device-resident KV cache (docs/GPU.md
// "KV cache on the device"): 4 query heads over 2 KV heads of dimension 8,
// S new rows (a run-time size) written at positions[0] into caches whose
// context is chosen at load; the scores span rows [0, positions[0] + S) of
// the cache, at most the cache's rows, so the memory plan bounds them by the
// compile-time bound of the run-time sizes (loomc --gpu-max-tokens).
func.func @decode(%q: tensor<1x4x?x8xf32> {loom.name = "q"},
                  %k: tensor<1x2x?x8xf32> {loom.name = "k"},
                  %v: tensor<1x2x?x8xf32> {loom.name = "v"},
                  %pos: tensor<?xi64> {loom.name = "positions"},
                  %ck: tensor<1x2x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"},
                  %cv: tensor<1x2x?x8xf32> {loom.name = "cache_value_0", loom.state = "kv_cache"})
    -> (tensor<1x4x?x8xf32> {loom.name = "y"}) {
  %o, %p:2 = loom.attention %q, %k, %v cache(%ck, %cv at %pos : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?xi64>) causal : tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}
