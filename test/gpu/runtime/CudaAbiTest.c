/* include/loom/runtime/cuda.h compiles as C and links; without a GPU the
 * device count is a clear error. Exit 0 either way, 1 on a wrong message. */
#include "loom/runtime/cuda.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  int32_t n = 0;
  if (loom_cuda_abi_version() != LOOM_CUDA_ABI_VERSION)
    return 1;
  if (loom_cuda_device_count(&n) != 0) {
    const char *e = loom_cuda_last_error();
    printf("%s\n", e);
    return strncmp(e, "no CUDA device: ", 16) == 0 ? 0 : 1;
  }
  printf("%d CUDA device(s)\n", n);
  return 0;
}
