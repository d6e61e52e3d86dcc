/* Entry `main` with a 0-d input and several dtypes (BUNDLE.md convention).
 *   inputs  a: f64 []         (0-d)
 *           b: i32 [?]        (dynamic)
 *           f: i1  [?]        (one byte per element)
 *           h: bf16 [2]       (raw bf16 bits; stored as u16)
 *   outputs out: f64 rank 1   out[i] = f[i] ? a * b[i] : -1
 *           sum: i64 rank 0   all-reduce (sum) of sum(b) over all ranks
 *           h2: bf16 rank 1   h with every value doubled, in bf16
 *           n: u8 rank 1      [len(b), rank]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loom/runtime/abi.h"

typedef struct {
  double *allocated, *aligned;
  int64_t offset;
} M0d;
typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} M1;
typedef struct {
  int64_t *allocated, *aligned;
  int64_t offset;
} M0i;

struct Results {
  M1 out;
  M0i sum;
  M1 h2;
  M1 n;
};

static float bf16ToF32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f32ToBf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16); /* exact for the doubled test values */
}

void loom_entry_main(void **args) {
  struct Results *res = (struct Results *)args[0];
  loom_rt_ctx *ctx = (loom_rt_ctx *)args[1];
  M0d *a = (M0d *)args[2];
  M1 *b = (M1 *)args[3];
  M1 *f = (M1 *)args[4];
  M1 *h = (M1 *)args[5];
  double av = a->aligned[a->offset];
  int64_t n = b->sizes[0];
  if (f->sizes[0] != n)
    loom_rt_abort(ctx, "b and f differ in length");
  const int32_t *bv = (const int32_t *)b->aligned + b->offset;
  const uint8_t *fv = (const uint8_t *)f->aligned + f->offset;
  double *out = (double *)malloc(sizeof(double) * (size_t)(n + 1));
  int64_t s = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = fv[i * f->strides[0]] ? av * bv[i * b->strides[0]] : -1.0;
    s += bv[i * b->strides[0]];
  }
  int64_t *sum = (int64_t *)malloc(sizeof(int64_t));
  loom_rt_all_reduce(ctx, LOOM_RT_I64, LOOM_RT_SUM, &s, sum, 1,
                     LOOM_RT_ALL_AXES);
  const uint16_t *hv = (const uint16_t *)h->aligned + h->offset;
  uint16_t *h2 = (uint16_t *)malloc(2 * sizeof(uint16_t));
  for (int i = 0; i < 2; ++i)
    h2[i] = f32ToBf16(2.0f * bf16ToF32(hv[i * h->strides[0]]));
  uint8_t *nv = (uint8_t *)malloc(2);
  nv[0] = (uint8_t)n;
  nv[1] = (uint8_t)loom_rt_rank(ctx);

  M1 o = {out, out, 0, {n}, {1}};
  res->out = o;
  M0i so = {sum, sum, 0};
  res->sum = so;
  M1 ho = {h2, h2, 0, {2}, {1}};
  res->h2 = ho;
  M1 no = {nv, nv, 0, {2}, {1}};
  res->n = no;
}
