/* A toy LLM `decode` entry with the calling convention of contract B
 * (docs/BUNDLE.md): it writes the keys/values of its S new tokens IN PLACE
 * into the runtime-owned caches at positions[0]..positions[0]+S-1 and
 * returns the logits of the last position, computed by single-query
 * attention over cache positions [0, positions[0]+S): the logits depend on
 * everything in the cache. toy_reference() in test_generate_toy.py is the
 * same math in numpy on the whole sequence.
 *
 * inputs:  tokens i64 [B, S], positions i64 [S],
 *          cache_key, cache_value f32 [B, HL, ctx, D] (state)
 * weights: emb f32 [V, HL*D] (this rank's heads), wout f32 [HL*D, VL]
 * output:  logits f32 [B, VL]
 * -DMP_MASK=m: the heads are split over the mesh axes in m: the partial
 * logits are summed over that group. -DVOCAB_SPLIT: heads whole, wout split
 * by columns: each rank returns its VL = V/p columns (loom-run gathers). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "loom/runtime/abi.h"

#ifndef MP_MASK
#define MP_MASK 0
#endif

typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[4], strides[4];
} M4;
typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} M2;
typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} M1;

void loom_entry_decode(void **args) {
  M2 *res = (M2 *)args[0];
  loom_rt_ctx *ctx = (loom_rt_ctx *)args[1];
  M2 *tok = (M2 *)args[2];
  M1 *pos = (M1 *)args[3];
  M4 *ck = (M4 *)args[4], *cv = (M4 *)args[5];
  M2 *emb = (M2 *)args[6], *wout = (M2 *)args[7];
  int64_t B = tok->sizes[0], S = tok->sizes[1];
  int64_t HL = ck->sizes[1], C = ck->sizes[2], D = ck->sizes[3];
  int64_t F = HL * D, VL = wout->sizes[1];
  const int64_t *t = (const int64_t *)tok->aligned;
  const int64_t *p = (const int64_t *)pos->aligned;
  float *K = (float *)ck->aligned, *Vc = (float *)cv->aligned;
  const float *E = (const float *)emb->aligned,
              *W = (const float *)wout->aligned;
  int64_t p0 = p[0], last = p0 + S - 1;
  if (last >= C)
    loom_rt_abort(ctx, "toy decode: position beyond the cache");
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i) {
      int64_t id = t[b * S + i], q = p0 + i;
      for (int64_t h = 0; h < HL; ++h)
        for (int64_t d = 0; d < D; ++d) {
          float e = E[id * F + h * D + d];
          int64_t at = ((b * HL + h) * C + q) * D + d;
          K[at] = e * (1.0f + 0.5f * sinf(0.3f * (float)q + (float)d));
          Vc[at] = e * cosf(0.05f * (float)q) + 0.01f * (float)d;
        }
    }
  float *out = (float *)malloc(sizeof(float) * (size_t)(B * VL));
  float *feat = (float *)malloc(sizeof(float) * (size_t)F);
  float *sc = (float *)malloc(sizeof(float) * (size_t)(last + 1));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < HL; ++h) {
      const float *qv = &K[((b * HL + h) * C + last) * D];
      float mx = -1e30f, sum = 0;
      for (int64_t j = 0; j <= last; ++j) {
        float s = 0;
        for (int64_t d = 0; d < D; ++d)
          s += qv[d] * K[((b * HL + h) * C + j) * D + d];
        sc[j] = s / sqrtf((float)D);
        if (sc[j] > mx)
          mx = sc[j];
      }
      for (int64_t j = 0; j <= last; ++j) {
        sc[j] = expf(sc[j] - mx);
        sum += sc[j];
      }
      for (int64_t d = 0; d < D; ++d) {
        float o = 0;
        for (int64_t j = 0; j <= last; ++j)
          o += sc[j] * Vc[((b * HL + h) * C + j) * D + d];
        feat[h * D + d] = o / sum;
      }
    }
    for (int64_t c = 0; c < VL; ++c) {
      float s = 0;
      for (int64_t f = 0; f < F; ++f)
        s += feat[f] * W[f * VL + c];
      out[b * VL + c] = s;
    }
  }
#ifndef VOCAB_SPLIT
  loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, out, out, B * VL, MP_MASK);
#endif
  free(feat);
  free(sc);
  M2 r = {out, out, 0, {B, VL}, {VL, 1}};
  *res = r;
}
