/* Runs the MLP's generated GPU host code (Inputs/mlp-host.mlir through
 * loom-lower-gpu-pipeline) on deterministic inputs and compares it with a
 * double-precision reference of the same model computed here.
 *   mlp_host_main            run, print max relative error, exit 0 if < 1e-3
 *   mlp_host_main --no-check run only (the recording fake driver: the
 *                            numbers are not computed, only calls recorded)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 8, D = 256, H = 1024 };

typedef struct {
  float *alloc, *data;
  int64_t offset, sizes[1], strides[1];
} M1;
typedef struct {
  float *alloc, *data;
  int64_t offset, sizes[2], strides[2];
} M2;

/* The bundle's calling convention (docs/BUNDLE.md): results, context,
 * then one descriptor pointer per argument. */
void loom_entry_mlp(void **args);

static uint64_t state = 42;
static float uniform(void) { /* in [-1, 1) */
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(state >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}
static M1 vec(float *p, int64_t n) {
  M1 m = {p, p, 0, {n}, {1}};
  return m;
}
static M2 mat(float *p, int64_t r, int64_t c) {
  M2 m = {p, p, 0, {r, c}, {c, 1}};
  return m;
}

int main(int argc, char **argv) {
  int check = !(argc > 1 && strcmp(argv[1], "--no-check") == 0);
  float *x = malloc(sizeof(float) * B * D), *w1 = malloc(sizeof(float) * H * D),
        *b1 = malloc(sizeof(float) * H), *w2 = malloc(sizeof(float) * D * H),
        *b2 = malloc(sizeof(float) * D);
  for (int i = 0; i < B * D; ++i)
    x[i] = uniform();
  for (int i = 0; i < H * D; ++i)
    w1[i] = uniform() * 0.108f; /* ~1/sqrt(D) */
  for (int i = 0; i < H; ++i)
    b1[i] = 0.1f * uniform();
  for (int i = 0; i < D * H; ++i)
    w2[i] = uniform() * 0.054f;
  for (int i = 0; i < D; ++i)
    b2[i] = 0.1f * uniform();
  M2 mx = mat(x, B, D), mw1 = mat(w1, H, D), mw2 = mat(w2, D, H), y;
  M1 mb1 = vec(b1, H), mb2 = vec(b2, D);
  void *args[] = {&y, NULL, &mx, &mw1, &mb1, &mw2, &mb2};
  loom_entry_mlp(args);
  if (!check) {
    printf("ran (no check)\n");
    return 0;
  }
  double maxErr = 0, maxRef = 0;
  static double h[H], o[D];
  for (int r = 0; r < B; ++r) {
    for (int j = 0; j < H; ++j) {
      double s = b1[j];
      for (int k = 0; k < D; ++k)
        s += (double)x[r * D + k] * w1[j * D + k];
      h[j] = 0.5 * s * (1 + erf(s / sqrt(2.0)));
    }
    double mean = 0, var = 0;
    for (int j = 0; j < D; ++j) {
      double s = b2[j];
      for (int k = 0; k < H; ++k)
        s += h[k] * w2[j * H + k];
      o[j] = s;
      mean += s / D;
    }
    for (int j = 0; j < D; ++j)
      var += (o[j] - mean) * (o[j] - mean) / D;
    for (int j = 0; j < D; ++j) {
      double ref = (o[j] - mean) / sqrt(var + 1e-5);
      double got = y.data[y.offset + r * y.strides[0] + j * y.strides[1]];
      if (fabs(ref) > maxRef)
        maxRef = fabs(ref);
      if (fabs(got - ref) > maxErr || got != got)
        maxErr = got != got ? INFINITY : fabs(got - ref);
    }
  }
  double rel = maxErr / maxRef;
  printf(
      "mlp on the GPU: max |error| / max |reference| = %.3e (tolerance 1e-3)\n",
      rel);
  return rel < 1e-3 ? 0 : 1;
}
