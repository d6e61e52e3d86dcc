/* Tensor-parallel MLP, Megatron style, as generated code would do it:
 *   rank r holds W1[:, cols_r] (column shard) and W2[rows_r, :] (row shard);
 *   y = all_reduce_sum(relu(x @ W1_r) @ W2_r) over every mesh axis.
 * inputs x: f32 [?, D]; weights w1: f32 [D, H/p], w2: f32 [H/p, D];
 * outputs y: f32 rank 2; gathered: f32 rank 2 = all_gather of this rank's
 * hidden activations along dim 1 ([n, H]). */
#include <stdint.h>
#include <stdlib.h>

#include "loom/runtime/abi.h"

typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} M2;

struct Results {
  M2 y, gathered;
};

#define AT(m, i, j)                                                            \
  ((m)->aligned[(m)->offset + (i) * (m)->strides[0] + (j) * (m)->strides[1]])

void loom_entry_main(void **args) {
  struct Results *res = (struct Results *)args[0];
  loom_rt_ctx *ctx = (loom_rt_ctx *)args[1];
  M2 *x = (M2 *)args[2], *w1 = (M2 *)args[3], *w2 = (M2 *)args[4];
  int64_t n = x->sizes[0], d = x->sizes[1], h = w1->sizes[1];
  int64_t p = loom_rt_world_size(ctx);
  float *hid = (float *)malloc(sizeof(float) * (size_t)(n * h + 1));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < h; ++k) {
      float s = 0;
      for (int64_t j = 0; j < d; ++j)
        s += AT(x, i, j) * AT(w1, j, k);
      hid[i * h + k] = s > 0 ? s : 0;
    }
  float *y = (float *)malloc(sizeof(float) * (size_t)(n * d + 1));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      float s = 0;
      for (int64_t k = 0; k < h; ++k)
        s += hid[i * h + k] * AT(w2, k, j);
      y[i * d + j] = s;
    }
  loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, y, y, n * d,
                     LOOM_RT_ALL_AXES);
  /* Gather along dim 1: outer = n, inner = h. out is [n][p][h]. */
  float *g = (float *)malloc(sizeof(float) * (size_t)(n * p * h + 1));
  loom_rt_all_gather(ctx, LOOM_RT_F32, hid, g, n, h, LOOM_RT_ALL_AXES);
  free(hid);
  M2 yo = {y, y, 0, {n, d}, {d, 1}};
  M2 go = {g, g, 0, {n, p * h}, {p * h, 1}};
  res->y = yo;
  res->gathered = go;
}
