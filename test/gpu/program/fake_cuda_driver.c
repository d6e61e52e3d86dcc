/* A recording fake of the CUDA driver ABI (what runtime/cuda dlopens; load it
 * with LOOM_CUDA_DRIVER=<this .so>). Device memory is host memory, copies
 * copy, kernels do nothing; every call that the generated host code causes
 * is appended to $LOOM_FAKE_CUDA_LOG (one line each) so that a test can
 * check the call order and sizes. Never evidence of numerics. A launch of a
 * generated quantized matmul (`loom_qmm_*`: arguments (ptr w, ptr x, ptr y,
 * i32 m)) adds a line with its kernel name, the bytes of the allocation each
 * pointer lies in (and its offset there) and m. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef uintptr_t CUdeviceptr;

static void logf_(const char *fmt, ...) {
  const char *path = getenv("LOOM_FAKE_CUDA_LOG");
  FILE *f = path ? fopen(path, "a") : stderr;
  if (!f)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  if (f != stderr)
    fclose(f);
}
static int token;
#define H(p) ((void *)((char *)&token + (p)))

CUresult cuInit(unsigned f) { return 0; }
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return 0;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = "FAKE_ERROR";
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = "fake driver";
  return 0;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
CUresult cuDeviceGet(int *d, int o) {
  *d = o;
  return 0;
}
CUresult cuDeviceGetName(char *n, int len, int d) {
  snprintf(n, len, "fake");
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  *v = attr == 75 ? 9 : attr == 76 ? 0 : attr == 16 ? 132 : 1000;
  return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int d) {
  *b = (size_t)1 << 34;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  *c = H(1);
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
CUresult cuCtxSetCurrent(void *c) { return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
/* Live allocations, to name the buffers a kernel receives. */
enum { kMaxAllocs = 1 << 14 };
static struct {
  uintptr_t p;
  size_t n;
} allocs[kMaxAllocs];
static int numAllocs;
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  *p = (CUdeviceptr)malloc(n ? n : 1);
  if (numAllocs < kMaxAllocs) {
    allocs[numAllocs].p = *p;
    allocs[numAllocs++].n = n;
  }
  /* No kernel runs here: new device memory holds LOOM_FAKE_CUDA_FILL's byte
     (default 0xff, so that an id check's "first bad position" reads -1). */
  const char *fill = getenv("LOOM_FAKE_CUDA_FILL");
  memset((void *)*p, fill ? atoi(fill) : 0xff, n ? n : 1);
  logf_("cuMemAlloc %zu", n);
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  for (int i = 0; i < numAllocs; ++i)
    if (allocs[i].p == p) {
      allocs[i] = allocs[--numAllocs];
      break;
    }
  free((void *)p);
  logf_("cuMemFree");
  return 0;
}
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned f) {
  return cuMemAlloc_v2(p, n);
}
static CUresult copy(const char *what, void *d, const void *s, size_t n) {
  memcpy(d, s, n);
  logf_("%s %zu", what, n);
  return 0;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n,
                              void *st) {
  return copy("cuMemcpyHtoD", (void *)d, s, n);
}
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
  return copy("cuMemcpyDtoH", d, (void *)s, n);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n,
                              void *st) {
  return copy("cuMemcpyDtoD", (void *)d, (void *)s, n);
}
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
  return copy("cuMemcpy", (void *)d, (void *)s, n);
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *s) {
  memset((void *)d, v, n);
  logf_("cuMemsetD8 %zu", n);
  return 0;
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void *s) {
  logf_("cuMemsetD16 %zu", n);
  return 0;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *s) {
  logf_("cuMemsetD32 %zu", n);
  return 0;
}
CUresult cuStreamCreate(void **s, unsigned f) {
  *s = H(2);
  logf_("cuStreamCreate");
  return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
  logf_("cuStreamDestroy");
  return 0;
}
CUresult cuStreamSynchronize(void *s) {
  logf_("cuStreamSynchronize");
  return 0;
}
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) {
  logf_("cuStreamWaitEvent");
  return 0;
}
CUresult cuEventCreate(void **e, unsigned f) {
  *e = H(3);
  return 0;
}
CUresult cuEventRecord(void *e, void *s) { return 0; }
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  *ms = 0;
  return 0;
}
CUresult cuEventDestroy_v2(void *e) { return 0; }
CUresult cuModuleLoadData(void **m, const void *image) {
  *m = H(4);
  logf_("cuModuleLoadData");
  return 0;
}
CUresult cuModuleUnload(void *m) {
  logf_("cuModuleUnload");
  return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  *f = strdup(name); /* the function handle is its name */
  logf_("cuModuleGetFunction %s", name);
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        void *s, void **params, void **extra) {
  logf_("cuLaunchKernel grid %u,%u,%u block %u,%u,%u", gx, gy, gz, bx, by, bz);
  const char *name = (const char *)f;
  if (strncmp(name, "loom_qmm_", 9) == 0) {
    char line[512];
    int at = snprintf(line, sizeof line, "qmatmul %s", name);
    for (int i = 0; i < 3; ++i) {
      uintptr_t v = *(uintptr_t *)params[i];
      size_t bytes = 0, offset = 0;
      for (int j = 0; j < numAllocs; ++j)
        if (v >= allocs[j].p && v < allocs[j].p + allocs[j].n)
          bytes = allocs[j].n, offset = v - allocs[j].p;
      at += snprintf(line + at, sizeof line - at, " %c %zu@%zu", "wxy"[i],
                     bytes, offset);
    }
    logf_("%s m %d", line, *(int32_t *)params[3]);
  }
  return 0;
}
CUresult cuStreamBeginCapture_v2(void *s, int mode) { return 0; }
CUresult cuStreamEndCapture(void *s, void **g) { return 0; }
CUresult cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) {
  return 0;
}
CUresult cuGraphLaunch(void *e, void *s) { return 0; }
CUresult cuGraphExecDestroy(void *e) { return 0; }
CUresult cuGraphDestroy(void *g) { return 0; }
