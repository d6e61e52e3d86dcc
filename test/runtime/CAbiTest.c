/*===- test/runtime/CAbiTest.c - the C ABI from C, through the .so --------===*/
/* abi.h compiles as C99, libloom_runtime.so exports it, and a failing
 * runtime call unwinds through C frames back to the launcher. */
#include "loom/runtime/abi.h"

#include <stdio.h>
#include <string.h>

static int32_t sumEntry(loom_rt_ctx *ctx, void *user) {
  int *bad = (int *)user;
  int64_t r = loom_rt_rank(ctx);
  float v[1000];
  for (int i = 0; i < 1000; ++i)
    v[i] = (float)(r + i);
  /* mesh [2,2]: mask 2 = axis 1 (pairs {0,1} and {2,3}). */
  loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, v, v, 1000, 2);
  int64_t base = loom_rt_coord(ctx, 0) * 2;
  for (int i = 0; i < 1000; ++i)
    if (v[i] != (float)(2 * base + 1 + 2 * i))
      ++*bad;
  return 0;
}

static int32_t abortEntry(loom_rt_ctx *ctx, void *user) {
  (void)user;
  if (loom_rt_rank(ctx) == 1)
    loom_rt_abort(ctx, "abort from C");
  loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
  return 0;
}

int main(void) {
  if (loom_rt_abi_version() != LOOM_RT_ABI_VERSION) {
    fprintf(stderr, "ABI version mismatch: %d\n", (int)loom_rt_abi_version());
    return 1;
  }
  if (loom_rt_dtype_size(LOOM_RT_F64) != 8 ||
      loom_rt_dtype_size(LOOM_RT_BF16) != 2 || loom_rt_dtype_size(-1) != 0) {
    fprintf(stderr, "bad dtype sizes\n");
    return 1;
  }
  int64_t t0 = loom_rt_now_ns();
  if (t0 <= 0 || loom_rt_now_ns() < t0)
    return 1;

  int bad = 0;
  int64_t dims[2] = {2, 2};
  if (loom_rt_run_threads(4, dims, 2, sumEntry, &bad, 30) != 0 || bad) {
    fprintf(stderr, "all_reduce from C failed (bad=%d)\n", bad);
    return 1;
  }
  fprintf(stderr, "(the next job is expected to fail)\n");
  if (loom_rt_run_threads(3, NULL, 0, abortEntry, NULL, 30) == 0) {
    fprintf(stderr, "an aborting job returned 0\n");
    return 1;
  }
  printf("ok\n");
  return 0;
}
