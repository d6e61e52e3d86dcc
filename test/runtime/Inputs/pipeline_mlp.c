/* Hand-written stage entries of a synthetic MLP chain for the pipeline tests
 * (contract B of docs/BUNDLE.md "pipeline", BUNDLE.md calling convention).
 * The chain: h_0 = x; h_{l+1} = relu(h_l W_l) + h_l / 2 for l < L total
 * layers (W: f32 [layers, H, H]); y = h_L + x + bias.
 *
 *   loom_entry_full  (the unsplit function, 1 rank):
 *       inputs x [B, H], bias [B, H]; weight W [L, H, H]; output y [B, H]
 *   loom_entry_first (stage 0): input x; weight W [Ls, H, H] (its layers);
 *       outputs h, skip (= x)
 *   loom_entry_mid   (stages 1..p-2): inputs h (boundary 0), skip
 *       (boundary 1); weight W; outputs h, skip (returned as the input
 *       itself: a pass-through boundary the runtime must copy)
 *   loom_entry_last  (stage p-1): inputs h, skip (boundaries), bias;
 *       weight W; output y
 *
 * $LOOM_TEST_STAGE_SLEEP_US=N makes every call also sleep N us (a fixed
 * compute time: the bubble test on a loaded machine).
 * $LOOM_TEST_EXIT_RANK=R: rank R's process exits (_exit(3)) there instead.
 * $LOOM_TEST_ABORT_RANK=R: rank R fails (loom_rt_abort) at its second
 * call, mid-schedule (calls are counted per rank for the library's lifetime:
 * use it with one bundle directory per test: each is its own dlopen).
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
  int64_t offset, sizes[3], strides[3];
} M3f;

static void pause_if_asked(void) {
  const char *s = getenv("LOOM_TEST_STAGE_SLEEP_US");
  if (s && *s)
    usleep((useconds_t)atol(s));
}

/* $LOOM_TEST_ABORT_RANK=R: rank R fails its 2nd call (mid-schedule). */
static int64_t Calls[256]; /* per rank (threads share the library) */

static void abort_if_asked(loom_rt_ctx *ctx) {
  const char *s = getenv("LOOM_TEST_ABORT_RANK");
  int64_t r = loom_rt_rank(ctx) & 255;
  const char *e = getenv("LOOM_TEST_EXIT_RANK");
  if (s && *s && loom_rt_rank(ctx) == atol(s) && ++Calls[r] == 2)
    loom_rt_abort(ctx, "stage gives up on purpose (mid-schedule)");
  if (e && *e && loom_rt_rank(ctx) == atol(e) && ++Calls[r] == 2)
    _exit(3); /* the process dies without a word (one rank per process) */
}

static float *copy2(const M2f *a) {
  int64_t b = a->sizes[0], h = a->sizes[1];
  float *o = (float *)malloc(sizeof(float) * (size_t)(b * h + 1));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < h; ++j)
      o[i * h + j] =
          a->aligned[a->offset + i * a->strides[0] + j * a->strides[1]];
  return o;
}

/* $LOOM_TEST_GROUP_MASK=M: after its layers every stage all-reduces h
 * (max: the ranks of a group hold equal values, so h is unchanged) over the
 * axes of M, as tensor-parallel code inside a stage does while the other
 * stages send and receive boundaries. */
static void group_collective(loom_rt_ctx *ctx, float *h, int64_t n) {
  const char *s = getenv("LOOM_TEST_GROUP_MASK");
  if (s && *s)
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_MAX, h, h, n,
                       (uint64_t)atol(s));
}

/* h <- relu(h W_l) + h / 2 for each layer of W (contiguous). */
static void layers(loom_rt_ctx *ctx, float *h, int64_t b, int64_t n,
                   const M3f *w) {
  int64_t nl = w->sizes[0];
  float *t = (float *)malloc(sizeof(float) * (size_t)(b * n + 1));
  for (int64_t l = 0; l < nl; ++l) {
    const float *wl = w->aligned + w->offset + l * n * n;
    loom_rt_sgemm(ctx, 0, 0, b, n, n, h, wl, t);
    for (int64_t i = 0; i < b * n; ++i)
      h[i] = (t[i] > 0 ? t[i] : 0) + 0.5f * h[i];
  }
  free(t);
}

static M2f desc2(float *p, int64_t b, int64_t n) {
  M2f d = {p, p, 0, {b, n}, {n, 1}};
  return d;
}

void loom_entry_full(void **args) {
  M2f *res = (M2f *)args[0];
  loom_rt_ctx *ctx = (loom_rt_ctx *)args[1];
  M2f *x = (M2f *)args[2];
  M2f *bias = (M2f *)args[3];
  M3f *w = (M3f *)args[4];
  int64_t b = x->sizes[0], n = x->sizes[1];
  float *h = copy2(x);
  layers(ctx, h, b, n, w);
  float *xs = copy2(x);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < n; ++j)
      h[i * n + j] +=
          xs[i * n + j] + bias->aligned[bias->offset + i * bias->strides[0] +
                                        j * bias->strides[1]];
  free(xs);
  *res = desc2(h, b, n);
}

struct Two {
  M2f h, skip;
};

void loom_entry_first(void **args) {
  struct Two *res = (struct Two *)args[0];
  loom_rt_ctx *ctx = (loom_rt_ctx *)args[1];
  M2f *x = (M2f *)args[2];
  M3f *w = (M3f *)args[3];
  int64_t b = x->sizes[0], n = x->sizes[1];
  abort_if_asked(ctx);
  pause_if_asked();
  float *h = copy2(x);
  layers(ctx, h, b, n, w);
  group_collective(ctx, h, b * n);
  res->h = desc2(h, b, n);
  res->skip = desc2(copy2(x), b, n);
}

void loom_entry_mid(void **args) {
  struct Two *res = (struct Two *)args[0];
  loom_rt_ctx *ctx = (loom_rt_ctx *)args[1];
  M2f *hin = (M2f *)args[2];
  M2f *skip = (M2f *)args[3];
  M3f *w = (M3f *)args[4];
  int64_t b = hin->sizes[0], n = hin->sizes[1];
  abort_if_asked(ctx);
  pause_if_asked();
  float *h = copy2(hin);
  layers(ctx, h, b, n, w);
  group_collective(ctx, h, b * n);
  res->h = desc2(h, b, n);
  res->skip = *skip; /* the received buffer itself */
}

void loom_entry_last(void **args) {
  M2f *res = (M2f *)args[0];
  loom_rt_ctx *ctx = (loom_rt_ctx *)args[1];
  M2f *hin = (M2f *)args[2];
  M2f *skip = (M2f *)args[3];
  M2f *bias = (M2f *)args[4];
  M3f *w = (M3f *)args[5];
  int64_t b = hin->sizes[0], n = hin->sizes[1];
  abort_if_asked(ctx);
  pause_if_asked();
  float *h = copy2(hin);
  layers(ctx, h, b, n, w);
  group_collective(ctx, h, b * n);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < n; ++j)
      h[i * n + j] += skip->aligned[skip->offset + i * skip->strides[0] +
                                    j * skip->strides[1]] +
                      bias->aligned[bias->offset + i * bias->strides[0] +
                                    j * bias->strides[1]];
  *res = desc2(h, b, n);
}
