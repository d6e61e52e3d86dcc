/* A hand-written "generated" entry point for loom-run tests (BUNDLE.md
 * calling convention).
 *
 *   entry main (loom_entry_main):
 *     inputs  x: f32 [?, 4]
 *     weights w: f32 [4]
 *     outputs y: f32 rank 2   y = all_reduce_sum over all axes of (x + w)
 *             r: i64 rank 0   this rank's global rank
 *   entry twice (loom_entry_twice):
 *     inputs  x: f32 [?, 4];  outputs y: f32 rank 2 = 2 * x (no weights)
 *
 * Variants (compile-time):
 *   -DABORT_RANK=k     rank k calls loom_rt_abort before the all-reduce
 *   -DSLOW_RANK=k      rank k sleeps 4 s before the all-reduce (timeout)
 *   -DTRANSPOSED_OUT   y is returned as a transposed (strided) view
 *   -DMEMREFCOPY       x is copied with memrefCopy (resolved from loom-run)
 *   -DALIAS_WEIGHT     also returns the weight itself as output y (must not
 *                      be freed by loom-run)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/runtime/abi.h"

typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} M2f;
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} M1f;
typedef struct {
  int64_t *allocated, *aligned;
  int64_t offset;
} M0i;
typedef struct {
  int64_t rank;
  void *descriptor;
} Unranked;

void memrefCopy(int64_t elemSize, Unranked *src, Unranked *dst);

struct MainResults {
  M2f y;
  M0i r;
};

void loom_entry_main(void **args) {
  struct MainResults *res = (struct MainResults *)args[0];
  loom_rt_ctx *ctx = (loom_rt_ctx *)args[1];
  M2f *x = (M2f *)args[2];
  M1f *w = (M1f *)args[3];
  int64_t n = x->sizes[0], m = x->sizes[1];
  int64_t rank = loom_rt_rank(ctx);
  if (w->aligned != (const float *)loom_rt_weight(ctx, 0))
    loom_rt_abort(ctx, "weight descriptor and loom_rt_weight(0) disagree");

  float *xs = x->aligned + x->offset;
  int64_t xs0 = x->strides[0], xs1 = x->strides[1];
#ifdef MEMREFCOPY
  /* Copy x (viewed transposed, so the copy is strided) into a [m][n]
   * buffer, then read it back transposed. */
  float *t = (float *)malloc(sizeof(float) * (size_t)(n * m + 1));
  M2f src = {x->allocated, x->aligned, x->offset, {m, n}, {xs1, xs0}};
  M2f dst = {t, t, 0, {m, n}, {n, 1}};
  Unranked us = {2, &src}, ud = {2, &dst};
  memrefCopy(sizeof(float), &us, &ud);
  xs = t;
  xs0 = 1;
  xs1 = n;
#endif

  float *y = (float *)malloc(sizeof(float) * (size_t)(n * m + 1));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      y[i * m + j] =
          xs[i * xs0 + j * xs1] + w->aligned[w->offset + j * w->strides[0]];
#ifdef MEMREFCOPY
  free(t);
#endif

#ifdef ABORT_RANK
  if (rank == ABORT_RANK)
    loom_rt_abort(ctx, "rank gives up on purpose");
#endif
#ifdef SLOW_RANK
  if (rank == SLOW_RANK)
    usleep(4000000);
#endif
  loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, y, y, n * m,
                     LOOM_RT_ALL_AXES);

#ifdef TRANSPOSED_OUT
  /* Store y^T in memory and return a [n, m] view with strides [1, n]. */
  float *yt = (float *)malloc(sizeof(float) * (size_t)(n * m + 1));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      yt[j * n + i] = y[i * m + j];
  free(y);
  M2f out = {yt, yt, 0, {n, m}, {1, n}};
#else
  M2f out = {y, y, 0, {n, m}, {m, 1}};
#endif
#ifdef ALIAS_WEIGHT
  /* Return the weight (as a [1, m] view) instead: loom-run must not free
   * it, but must still free the result that is dropped here. */
  free(out.allocated);
  M2f wv = {w->allocated, w->aligned, w->offset, {1, m}, {m, 1}};
  out = wv;
#endif
  res->y = out;
  int64_t *r = (int64_t *)malloc(sizeof(int64_t));
  *r = rank;
  M0i rd = {r, r, 0};
  res->r = rd;
}

void loom_entry_twice(void **args) {
  M2f *res = (M2f *)args[0];
  M2f *x = (M2f *)args[2];
  int64_t n = x->sizes[0], m = x->sizes[1];
  float *y = (float *)malloc(sizeof(float) * (size_t)(n * m + 1));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      y[i * m + j] =
          2 * x->aligned[x->offset + i * x->strides[0] + j * x->strides[1]];
  M2f out = {y, y, 0, {n, m}, {m, 1}};
  *res = out;
}
