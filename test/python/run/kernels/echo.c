/* Entry `main`: out = copy of input x (any dtype, rank RANK, element size
 * ESIZE bytes); compiled once per (RANK, ESIZE). Honors the input strides. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *allocated, *aligned;
  int64_t offset;
  int64_t dims[2 * RANK + 1]; /* sizes[RANK], strides[RANK] (+1: RANK 0) */
} Desc;

void loom_entry_main(void **args) {
  Desc *out = (Desc *)args[0];
  Desc *x = (Desc *)args[2];
  int64_t n = 1;
  for (int d = 0; d < RANK; ++d)
    n *= x->dims[d];
  char *buf = (char *)malloc((size_t)(n * ESIZE + 1));
  /* Row-major walk of the strided input. */
  int64_t idx[RANK + 1];
  memset(idx, 0, sizeof(idx));
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = x->offset;
    for (int d = 0; d < RANK; ++d)
      off += idx[d] * x->dims[RANK + d];
    memcpy(buf + i * ESIZE, x->aligned + off * ESIZE, ESIZE);
    for (int d = RANK - 1; d >= 0; --d) {
      if (++idx[d] < x->dims[d])
        break;
      idx[d] = 0;
    }
  }
  out->allocated = buf;
  out->aligned = buf;
  out->offset = 0;
  for (int d = 0; d < RANK; ++d) {
    out->dims[d] = x->dims[d];
    out->dims[RANK + d] = 1;
    for (int e = d + 1; e < RANK; ++e)
      out->dims[RANK + d] *= x->dims[e];
  }
}
