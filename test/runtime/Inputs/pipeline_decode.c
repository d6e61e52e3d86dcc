/* A toy language model's `decode`, whole and split into two pipeline stages
 * (docs/BUNDLE.md "pipeline"), for the pipelined generation test. Each
 * layer l writes its input rows into its KV cache at their positions and
 * mixes in the mean of the cache up to each position:
 *   h = E[tokens];  per layer: cache_l[b, 0, pos, :] = h;
 *                   h = h / 2 + mean(cache_l[b, 0, 0..pos, :]) W_l
 *   logits = h[:, last, :] E^T
 * so the tokens depend on every layer's cache (each stage owns its own).
 *
 *   loom_entry_decode_full: tokens [B, ?] i64, positions [?] i64,
 *       cache0, cache1 f32 [B, 1, ?, D] (kv_cache); weights E [V, D],
 *       W0, W1 [D, D]; output logits [B, V]
 *   loom_entry_decode_s0: tokens, positions, cache0; E, W0; output h
 *       [B, ?, D]
 *   loom_entry_decode_s1: h (boundary 0), positions, cache1; E, W1;
 *       output logits
 * $LOOM_TEST_STAGE_SLEEP_US=N: every stage call also sleeps N us (a fixed
 * compute time, to measure how busy the stages are).
 */

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "loom/runtime/abi.h"

static void pause_if_asked(void) {
  const char *s = getenv("LOOM_TEST_STAGE_SLEEP_US");
  if (s && *s)
    usleep((useconds_t)atol(s));
}

typedef struct {
  int64_t *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} M2i;
typedef struct {
  int64_t *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} M1i;
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} M2f;
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[3], strides[3];
} M3f;
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[4], strides[4];
} M4f;

static float *embed(const M2i *tok, const M2f *e, int64_t *b_, int64_t *s_,
                    int64_t *d_) {
  int64_t b = tok->sizes[0], s = tok->sizes[1], d = e->sizes[1];
  float *h = (float *)malloc(sizeof(float) * (size_t)(b * s * d + 1));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < s; ++j) {
      int64_t t =
          tok->aligned[tok->offset + i * tok->strides[0] + j * tok->strides[1]];
      for (int64_t k = 0; k < d; ++k)
        h[(i * s + j) * d + k] =
            e->aligned[e->offset + t * e->strides[0] + k * e->strides[1]];
    }
  *b_ = b;
  *s_ = s;
  *d_ = d;
  return h;
}

static void layer(float *h, int64_t b, int64_t s, int64_t d, const M1i *pos,
                  M4f *cache, const M2f *w) {
  float *mean = (float *)malloc(sizeof(float) * (size_t)(d + 1));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < s; ++j) {
      int64_t p = pos->aligned[pos->offset + j * pos->strides[0]];
      float *row = h + (i * s + j) * d;
      for (int64_t k = 0; k < d; ++k)
        cache->aligned[cache->offset + i * cache->strides[0] +
                       p * cache->strides[2] + k * cache->strides[3]] = row[k];
      for (int64_t k = 0; k < d; ++k) {
        float acc = 0;
        for (int64_t t = 0; t <= p; ++t)
          acc += cache->aligned[cache->offset + i * cache->strides[0] +
                                t * cache->strides[2] + k * cache->strides[3]];
        mean[k] = acc / (float)(p + 1);
      }
      for (int64_t k = 0; k < d; ++k) {
        float acc = 0;
        for (int64_t q = 0; q < d; ++q)
          acc += mean[q] *
                 w->aligned[w->offset + q * w->strides[0] + k * w->strides[1]];
        row[k] = 0.5f * row[k] + acc;
      }
    }
  free(mean);
}

static M2f head(const float *h, int64_t b, int64_t s, int64_t d, const M2f *e) {
  int64_t v = e->sizes[0];
  float *lg = (float *)malloc(sizeof(float) * (size_t)(b * v + 1));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < v; ++t) {
      float acc = 0;
      for (int64_t k = 0; k < d; ++k)
        acc += h[(i * s + s - 1) * d + k] *
               e->aligned[e->offset + t * e->strides[0] + k * e->strides[1]];
      lg[i * v + t] = acc;
    }
  M2f out = {lg, lg, 0, {b, v}, {v, 1}};
  return out;
}

void loom_entry_decode_full(void **args) {
  M2f *res = (M2f *)args[0];
  M2i *tok = (M2i *)args[2];
  M1i *pos = (M1i *)args[3];
  M4f *c0 = (M4f *)args[4], *c1 = (M4f *)args[5];
  M2f *e = (M2f *)args[6], *w0 = (M2f *)args[7], *w1 = (M2f *)args[8];
  int64_t b, s, d;
  float *h = embed(tok, e, &b, &s, &d);
  layer(h, b, s, d, pos, c0, w0);
  layer(h, b, s, d, pos, c1, w1);
  *res = head(h, b, s, d, e);
  free(h);
}

void loom_entry_decode_s0(void **args) {
  M3f *res = (M3f *)args[0];
  M2i *tok = (M2i *)args[2];
  M1i *pos = (M1i *)args[3];
  M4f *c0 = (M4f *)args[4];
  M2f *e = (M2f *)args[5], *w0 = (M2f *)args[6];
  int64_t b, s, d;
  pause_if_asked();
  float *h = embed(tok, e, &b, &s, &d);
  layer(h, b, s, d, pos, c0, w0);
  M3f out = {h, h, 0, {b, s, d}, {s * d, d, 1}};
  *res = out;
}

void loom_entry_decode_s1(void **args) {
  M2f *res = (M2f *)args[0];
  M3f *hin = (M3f *)args[2];
  M1i *pos = (M1i *)args[3];
  M4f *c1 = (M4f *)args[4];
  M2f *e = (M2f *)args[5], *w1 = (M2f *)args[6];
  int64_t b = hin->sizes[0], s = hin->sizes[1], d = hin->sizes[2];
  pause_if_asked();
  float *h = (float *)malloc(sizeof(float) * (size_t)(b * s * d + 1));
  for (int64_t i = 0; i < b * s * d; ++i)
    h[i] = hin->aligned[hin->offset + i]; /* contiguous from the runtime */
  layer(h, b, s, d, pos, c1, w1);
  *res = head(h, b, s, d, e);
  free(h);
}
