/* A recording fake of the CUDA driver ABI (what runtime/cuda dlopens; load it
 * with LOOM_CUDA_DRIVER=<this .so>). Device memory is host memory, copies
 * copy, kernels do nothing; every call that the generated host code causes
 * is appended to $LOOM_FAKE_CUDA_LOG (one line each) so that a test can
 * check the call order and sizes. Never evidence of numerics. A launch of a
 * generated quantized matmul (`loom_qmm_*`: arguments (ptr w, ptr x, ptr y,
 * i32 m)) adds a line with its kernel name, the bytes of the allocation each
 * pointer lies in (and its offset there) and m. Every launch of a kernel of
 * a loaded cubin (an ELF image, alone or in a fatbin, whose .nv.info.<name>
 * sections give each kernel's parameters) adds
 * `args <name> a<n>:<bytes>@<offset> ...`: each 8-byte parameter that
 * points into a live allocation, n counting allocations from 1, so that a
 * test can tell that two kernels read the same allocation. */
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
  int serial;
} allocs[kMaxAllocs];
static int numAllocs, allocSerial;
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  *p = (CUdeviceptr)malloc(n ? n : 1);
  ++allocSerial;
  if (numAllocs < kMaxAllocs) {
    allocs[numAllocs].p = *p;
    allocs[numAllocs].serial = allocSerial;
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
/* The kernels' parameters, read from the loaded cubins: per kernel the
   size of each parameter by ordinal. */
enum { kMaxKernels = 512, kMaxParams = 128 };
static struct {
  char name[128];
  int module; /* kernels of different modules may share a name */
  int n;
  unsigned char size[kMaxParams];
} kernels[kMaxKernels];
static int numKernels;
static uint64_t rd(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}
static int numModules;
/* A cubin (ELF64, EM_CUDA) at e, of module `module`; returns its size (0:
   not one). */
static size_t readCubin(const unsigned char *e, int module) {
  if (!(e[0] == 0x7f && e[1] == 'E' && e[2] == 'L' && e[3] == 'F') ||
      e[4] != 2 || rd(e + 18, 2) != 190)
    return 0;
  uint64_t shoff = rd(e + 40, 8);
  unsigned shentsize = rd(e + 58, 2), shnum = rd(e + 60, 2),
           shstrndx = rd(e + 62, 2);
  const unsigned char *strs = e + rd(e + shoff + shstrndx * shentsize + 24, 8);
  for (unsigned i = 0; i < shnum; ++i) {
    const unsigned char *sh = e + shoff + i * shentsize;
    const char *name = (const char *)strs + rd(sh, 4);
    if (strncmp(name, ".nv.info.", 9) != 0 || numKernels == kMaxKernels)
      continue;
    int k = numKernels;
    for (int j = 0; j < numKernels; ++j)
      if (kernels[j].module == module && strcmp(kernels[j].name, name + 9) == 0)
        k = j;
    if (k < numKernels)
      continue; /* the same kernel for another chip */
    snprintf(kernels[k].name, sizeof kernels[k].name, "%s", name + 9);
    kernels[k].module = module;
    kernels[k].n = 0;
    /* Attributes: format, id, then a 2-byte value or (format 4) a 2-byte
       size and that many bytes; EIATTR_KPARAM_INFO (0x17): index (4),
       ordinal (2), offset (2), flags whose top 14 bits are the size. */
    const unsigned char *a = e + rd(sh + 24, 8), *end = a + rd(sh + 32, 8);
    while (a + 4 <= end) {
      unsigned len = a[0] == 4 ? rd(a + 2, 2) : 0;
      if (a[0] == 4 && a[1] == 0x17 && len >= 12) {
        unsigned ordinal = rd(a + 8, 2);
        unsigned size = rd(a + 12, 4) >> 18;
        if (ordinal < kMaxParams) {
          kernels[k].size[ordinal] = size;
          if ((int)ordinal >= kernels[k].n)
            kernels[k].n = ordinal + 1;
        }
      }
      a += 4 + len;
    }
    ++numKernels;
  }
  return shoff + (size_t)shnum * shentsize;
}
/* Module handles: H(kModuleBase + number); a function handle is its name,
   then (after the NUL) its module's number. */
enum { kModuleBase = 1000 };
CUresult cuModuleLoadData(void **m, const void *image) {
  int module = numModules++;
  *m = H(kModuleBase + module);
  logf_("cuModuleLoadData");
  const unsigned char *p = image;
  if (p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba) {
    /* A fatbin: its (uncompressed) cubins lie in the 16 + size bytes. */
    const unsigned char *end = p + 16 + rd(p + 8, 8);
    for (const unsigned char *q = p + 16; q + 64 <= end;) {
      size_t n = readCubin(q, module);
      q += n ? n : 1;
    }
  } else if (p[0] == 0x7f) {
    readCubin(p, module);
  }
  return 0;
}
CUresult cuModuleUnload(void *m) {
  logf_("cuModuleUnload");
  return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  size_t len = strlen(name);
  int module = (int)((char *)m - (char *)H(kModuleBase));
  char *h = malloc(len + 1 + sizeof module);
  memcpy(h, name, len + 1);
  memcpy(h + len + 1, &module, sizeof module);
  *f = h;
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
  int module;
  memcpy(&module, name + strlen(name) + 1, sizeof module);
  for (int k = 0; k < numKernels; ++k) {
    if (kernels[k].module != module || strcmp(kernels[k].name, name) != 0)
      continue;
    char line[4096];
    int at = snprintf(line, sizeof line, "args %s", name);
    for (int i = 0; i < kernels[k].n && at < (int)sizeof line - 64; ++i) {
      if (kernels[k].size[i] != 8)
        continue;
      uintptr_t v = *(uintptr_t *)params[i];
      for (int j = 0; j < numAllocs; ++j)
        if (v >= allocs[j].p && v < allocs[j].p + allocs[j].n)
          at += snprintf(line + at, sizeof line - at, " a%d:%zu@%zu",
                         allocs[j].serial, allocs[j].n,
                         (size_t)(v - allocs[j].p));
    }
    logf_("%s", line);
    break;
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
