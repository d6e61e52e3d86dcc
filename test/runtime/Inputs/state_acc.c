/* A hand-written entry point with runtime-owned state for the executor's
 * unit test (docs/BUNDLE.md calling convention).
 *
 *   entry acc (loom_entry_acc):
 *     inputs  x: f32 [4]; positions: i64 [1];
 *             cache: f32 [?, 4], state kv_cache, ctx_dim 0
 *     outputs y: f32 rank 1 = sum of cache rows 0..p after cache[p] = x
 *             (p = positions[0]); the cache is written in place.
 */
#include <stdint.h>
#include <stdlib.h>

typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} M1f;
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} M2f;
typedef struct {
  int64_t *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} M1i;

void loom_entry_acc(void **args) {
  M1f *res = (M1f *)args[0];
  M1f *x = (M1f *)args[2];
  M1i *pos = (M1i *)args[3];
  M2f *cache = (M2f *)args[4];
  int64_t p = pos->aligned[pos->offset];
  float *c = cache->aligned + cache->offset;
  for (int64_t j = 0; j < 4; ++j)
    c[p * 4 + j] = x->aligned[x->offset + j];
  float *y = (float *)malloc(4 * sizeof(float));
  for (int64_t j = 0; j < 4; ++j) {
    y[j] = 0;
    for (int64_t i = 0; i <= p; ++i)
      y[j] += c[i * 4 + j];
  }
  M1f out = {y, y, 0, {4}, {1}};
  *res = out;
}
