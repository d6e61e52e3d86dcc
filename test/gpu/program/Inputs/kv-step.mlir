// A decode-like step with a device-resident KV cache (docs/GPU.md "KV cache
// on the device"): one key cache of 2 KV heads x head dim 8 whose context
// (dimension 2) is chosen at load; the new row `k` is written into the
// cache at positions[0] and the output is the previous row of the updated
// cache (position max(p0 - 1, 0)) plus `k` and a weight. Every shape is
// static but the cache's context.
func.func @step(%k: tensor<1x2x1x8xf32> {loom.name = "k"},
                %pos: tensor<1xi64> {loom.name = "positions"},
                %cache: tensor<1x2x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"})
    -> (tensor<1x2x1x8xf32> {loom.name = "y"}) {
  %w = loom.weight "w" from <"w.bin", offset = 0> : tensor<1x2x1x8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tensor.extract %pos[%c0] : tensor<1xi64>
  %p0 = arith.index_cast %p : i64 to index
  %u = tensor.insert_slice %k into %cache[0, 0, %p0, 0] [1, 2, 1, 8] [1, 1, 1, 1] : tensor<1x2x1x8xf32> into tensor<1x2x?x8xf32>
  %back = arith.subi %p0, %c1 : index
  %prev = arith.maxsi %back, %c0 : index
  %r = tensor.extract_slice %u[0, 0, %prev, 0] [1, 2, 1, 8] [1, 1, 1, 1] : tensor<1x2x?x8xf32> to tensor<1x2x1x8xf32>
  %s = loom.add %r, %k : tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  %y = loom.add %s, %w : tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  return %y : tensor<1x2x1x8xf32>
}
