//===- runtime/cuda/CudaDeviceOps.cpp - device work of the device comms ---===//
//
// CudaDeviceOps: the DeviceOps of DeviceComm.h on a CUDA device through
// cuda.h (copies, a stream per rank, scratch memory), and the reduction
// kernel as PTX text generated here for each (dtype, op), loaded with the
// driver's JIT on first use (so no toolkit is needed where it runs).
//
// Why a generated kernel and not cuBLAS axpy in rank order: axpy has no
// max/min/prod, and for f16/bf16 it rounds after every member, while abi.h
// (and the CPU backends) accumulate in f32 and round once. The kernel reads
// the p sources of an element in member order 0..p-1 and applies the
// operation with round-to-nearest and no contraction (add.rn/mul.rn), the
// same arithmetic as runtime/DType.cpp's reduceElements, so sums are
// bitwise those of the threads backend. Pointer classification (device or
// host buffer) is the driver's cuPointerGetAttribute.
//
//===----------------------------------------------------------------------===//

#include "DeviceComm.h"

#include "../DType.h"
#include "Device.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <sstream>

namespace loom::rt {
namespace {

/// How a dtype is loaded into the accumulator, combined and stored.
struct TypeCode {
  const char *acc;    ///< accumulator register ("%f1", "%r8", ...)
  const char *other;  ///< second operand register
  const char *opType; ///< PTX type of the operation (f32, s32, ...)
  std::function<std::string(const char *reg, const char *addr)> load;
  std::function<std::string(const char *addr, const char *reg)> store;
};

std::string plainLoad(const char *ty, const char *reg, const char *addr) {
  return std::string("  ld.") + ty + " " + reg + ", [" + addr + "];\n";
}
std::string plainStore(const char *ty, const char *addr, const char *reg) {
  return std::string("  st.") + ty + " [" + addr + "], " + reg + ";\n";
}

/// A type loaded as `ld` and stored as `st` straight into its registers.
TypeCode plain(const char *acc, const char *other, const char *opType,
               const char *ld, const char *st) {
  return {acc, other, opType,
          [ld](const char *r, const char *a) { return plainLoad(ld, r, a); },
          [st](const char *a, const char *r) { return plainStore(st, a, r); }};
}

TypeCode typeCode(int32_t dtype) {
  switch (dtype) {
  case LOOM_RT_F32:
    return plain("%f1", "%f2", "f32", "f32", "f32");
  case LOOM_RT_F64:
    return plain("%fd1", "%fd2", "f64", "f64", "f64");
  case LOOM_RT_I32:
    return plain("%r8", "%r9", "s32", "s32", "s32");
  case LOOM_RT_I64:
    return plain("%rd20", "%rd21", "s64", "s64", "s64");
  case LOOM_RT_I8:
    // Sign-extended into 32 bits: sums and products wrap to the same low
    // byte, max/min compare the signed values.
    return plain("%r8", "%r9", "s32", "s8", "u8");
  case LOOM_RT_U8:
    return plain("%r8", "%r9", "u32", "u8", "u8");
  case LOOM_RT_F16:
    return {"%f1", "%f2", "f32",
            [](const char *r, const char *a) {
              return plainLoad("b16", "%h1", a) + "  cvt.f32.f16 " + r +
                     ", %h1;\n";
            },
            [](const char *a, const char *r) {
              return std::string("  cvt.rn.f16.f32 %h1, ") + r + ";\n" +
                     plainStore("b16", a, "%h1");
            }};
  default: // LOOM_RT_BF16
    // Widening is a shift; narrowing rounds to nearest even with integer
    // arithmetic and keeps NaNs quiet (DType.h's floatToBf16), which needs
    // no sm_80 conversion instruction.
    return {"%f1", "%f2", "f32",
            [](const char *r, const char *a) {
              return plainLoad("b16", "%h1", a) +
                     "  cvt.u32.u16 %r10, %h1;\n"
                     "  shl.b32 %r10, %r10, 16;\n"
                     "  mov.b32 " +
                     r + ", %r10;\n";
            },
            [](const char *a, const char *r) {
              return std::string("  mov.b32 %r10, ") + r +
                     ";\n"
                     "  and.b32 %r11, %r10, 2147483647;\n"
                     "  setp.gt.u32 %p3, %r11, 2139095040;\n"
                     "  shr.u32 %r12, %r10, 16;\n"
                     "  and.b32 %r13, %r12, 1;\n"
                     "  add.u32 %r13, %r13, 32767;\n"
                     "  add.u32 %r13, %r10, %r13;\n"
                     "  shr.u32 %r13, %r13, 16;\n"
                     "  or.b32 %r12, %r12, 64;\n"
                     "  selp.b32 %r13, %r12, %r13, %p3;\n"
                     "  cvt.u16.u32 %h1, %r13;\n" +
                     plainStore("b16", a, "%h1");
            }};
  }
}

std::string combine(int32_t op, const TypeCode &t) {
  std::string ty = t.opType;
  bool fp = ty[0] == 'f';
  std::string a = t.acc, b = t.other;
  switch (op) {
  case LOOM_RT_SUM:
    return "  add" + std::string(fp ? ".rn." : ".") + ty + " " + a + ", " + a +
           ", " + b + ";\n";
  case LOOM_RT_PROD:
    return "  mul" + std::string(fp ? ".rn." : ".lo.") + ty + " " + a + ", " +
           a + ", " + b + ";\n";
  case LOOM_RT_MAX:
    return "  max." + ty + " " + a + ", " + a + ", " + b + ";\n";
  default:
    return "  min." + ty + " " + a + ", " + a + ", " + b + ";\n";
  }
}

/// Launch geometry of the reduction: 256 threads, grid-stride loop.
constexpr uint32_t kThreads = 256;
constexpr uint32_t kMaxBlocks = 4096;

std::string cudaError(const char *what) {
  return std::string(what) + ": " + loom_cuda_last_error();
}

/// cuPointerGetAttribute from the driver cuda.h loaded (the same library,
/// found again with RTLD_NOLOAD), or null.
using PointerAttrFn = int (*)(void *, int, unsigned long long);
PointerAttrFn pointerAttr() {
  static std::once_flag once;
  static PointerAttrFn fn = nullptr;
  std::call_once(once, [] {
    const char *env = std::getenv("LOOM_CUDA_DRIVER");
    void *lib = dlopen(env && *env ? env : "libcuda.so.1",
                       RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (lib)
      fn = reinterpret_cast<PointerAttrFn>(dlsym(lib, "cuPointerGetAttribute"));
  });
  return fn;
}

} // namespace

std::string reduceKernelPtx(int32_t dtype, int32_t op) {
  TypeCode t = typeCode(dtype);
  int64_t es = dtypeSize(dtype);
  std::ostringstream s;
  s << "// loom_reduce: " << dtypeName(dtype) << " " << reduceOpName(op)
    << " (runtime/cuda/CudaDeviceOps.cpp)\n"
       ".version 7.0\n.target sm_70\n.address_size 64\n\n"
       ".visible .entry loom_reduce(.param .u64 srcs, .param .u32 np,\n"
       "    .param .u64 out, .param .u64 rows, .param .u64 cols,\n"
       "    .param .u64 sstride, .param .u64 dstride)\n{\n"
       "  .reg .pred %p<4>;\n  .reg .b16 %h<2>;\n  .reg .b32 %r<16>;\n"
       "  .reg .b64 %rd<24>;\n  .reg .f32 %f<3>;\n  .reg .f64 %fd<3>;\n"
       "  ld.param.u64 %rd1, [srcs];\n  ld.param.u32 %r1, [np];\n"
       "  ld.param.u64 %rd2, [out];\n  ld.param.u64 %rd3, [rows];\n"
       "  ld.param.u64 %rd4, [cols];\n  ld.param.u64 %rd5, [sstride];\n"
       "  ld.param.u64 %rd6, [dstride];\n"
       "  mul.lo.u64 %rd7, %rd3, %rd4;\n"
       "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n"
       "  mov.u32 %r4, %tid.x;\n  mov.u32 %r5, %nctaid.x;\n"
       "  mul.wide.u32 %rd8, %r2, %r3;\n  cvt.u64.u32 %rd9, %r4;\n"
       "  add.u64 %rd8, %rd8, %rd9;\n  mul.wide.u32 %rd10, %r5, %r3;\n"
       "ELEM:\n"
       "  setp.ge.u64 %p1, %rd8, %rd7;\n  @%p1 bra DONE;\n"
       // Row r, column c, then the element offsets in source and output.
       "  div.u64 %rd11, %rd8, %rd4;\n  mul.lo.u64 %rd12, %rd11, %rd4;\n"
       "  sub.u64 %rd12, %rd8, %rd12;\n"
       "  mad.lo.u64 %rd13, %rd11, %rd5, %rd12;\n"
       "  mad.lo.u64 %rd14, %rd11, %rd6, %rd12;\n"
       "  mul.lo.u64 %rd13, %rd13, "
    << es << ";\n  mul.lo.u64 %rd14, %rd14, " << es
    << ";\n"
       // Member 0 starts the accumulator.
       "  ld.u64 %rd15, [%rd1];\n  add.u64 %rd16, %rd15, %rd13;\n"
    << t.load(t.acc, "%rd16")
    << "  mov.u32 %r6, 1;\n"
       "MEMBER:\n"
       "  setp.ge.u32 %p2, %r6, %r1;\n  @%p2 bra STORE;\n"
       "  mul.wide.u32 %rd17, %r6, 8;\n  add.u64 %rd17, %rd1, %rd17;\n"
       "  ld.u64 %rd15, [%rd17];\n  add.u64 %rd16, %rd15, %rd13;\n"
    << t.load(t.other, "%rd16") << combine(op, t)
    << "  add.u32 %r6, %r6, 1;\n  bra MEMBER;\n"
       "STORE:\n"
       "  add.u64 %rd18, %rd2, %rd14;\n"
    << t.store("%rd18", t.acc)
    << "  add.u64 %rd8, %rd8, %rd10;\n  bra ELEM;\n"
       "DONE:\n  ret;\n}\n";
  return s.str();
}

std::unique_ptr<CudaDeviceOps> CudaDeviceOps::create(int ordinal,
                                                     std::string *err) {
  std::unique_ptr<CudaDeviceOps> ops(new CudaDeviceOps());
  if (loom_cuda_open(ordinal, &ops->Dev)) {
    *err = loom_cuda_last_error();
    return nullptr;
  }
  if (loom_cuda_stream_create(ops->Dev, &ops->Stream)) {
    *err = cudaError("cannot create the rank's stream");
    return nullptr;
  }
  return ops;
}

CudaDeviceOps::~CudaDeviceOps() {
  if (!Dev)
    return;
  for (auto &k : Kernels)
    loom_cuda_module_unload(k.second);
  if (Scratch)
    loom_cuda_free(Dev, Scratch);
  if (Table)
    loom_cuda_free(Dev, Table);
  if (Stream)
    loom_cuda_stream_destroy(Dev, Stream);
  loom_cuda_close(Dev);
}

bool CudaDeviceOps::isDevice(const void *p) {
  PointerAttrFn fn = pointerAttr();
  if (!fn)
    return false;
  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2) is CU_MEMORYTYPE_DEVICE (2) for
  // cuMemAlloc'd memory; host memory the driver does not know is an error.
  // The device's context current on this (rank) thread first.
  Dev->drv->cuCtxSetCurrent(Dev->ctx);
  unsigned type = 0;
  return fn(&type, 2, reinterpret_cast<uintptr_t>(p)) == 0 && type == 2;
}

bool CudaDeviceOps::copy(void *dst, const void *src, int64_t bytes,
                         std::string *err) {
  if (loom_cuda_copy_device(Dev, reinterpret_cast<uintptr_t>(dst),
                            reinterpret_cast<uintptr_t>(src), bytes, Stream)) {
    *err = loom_cuda_last_error();
    return false;
  }
  return true;
}

bool CudaDeviceOps::sync(std::string *err) {
  if (loom_cuda_stream_sync(Dev, Stream)) {
    *err = loom_cuda_last_error();
    return false;
  }
  return true;
}

void *CudaDeviceOps::scratch(int64_t bytes, std::string *err) {
  if (bytes > ScratchBytes) {
    if (Scratch &&
        (loom_cuda_stream_sync(Dev, Stream) || loom_cuda_free(Dev, Scratch))) {
      *err = loom_cuda_last_error();
      return nullptr;
    }
    Scratch = 0;
    ScratchBytes = 0;
    if (loom_cuda_malloc(Dev, bytes, &Scratch)) {
      *err = cudaError("scratch for a collective") +
             " (a collective needs its size again on the device)";
      return nullptr;
    }
    ScratchBytes = bytes;
  }
  return reinterpret_cast<void *>(Scratch);
}

bool CudaDeviceOps::reduce(int32_t dtype, int32_t op, const void *const *srcs,
                           int p, void *out, int64_t rows, int64_t cols,
                           int64_t srcStride, int64_t dstStride,
                           std::string *err) {
  if (rows * cols == 0)
    return true;
  loom_cuda_module *&mod = Kernels[{dtype, op}];
  if (!mod) {
    std::string ptx = reduceKernelPtx(dtype, op);
    if (loom_cuda_module_load(Dev, ptx.c_str(), int64_t(ptx.size()) + 1,
                              &mod)) {
      *err = cudaError("the reduction kernel (PTX, JIT by the driver)");
      return false;
    }
  }
  // The source addresses go to the device as a table (the upload waits
  // for the stream, so the previous table is no longer read).
  int64_t tableBytes = int64_t(p) * 8;
  if (tableBytes > TableBytes) {
    if (Table)
      loom_cuda_free(Dev, Table);
    Table = 0;
    TableBytes = 0;
    if (loom_cuda_malloc(Dev, tableBytes, &Table)) {
      *err = loom_cuda_last_error();
      return false;
    }
    TableBytes = tableBytes;
  }
  if (loom_cuda_copy_to_device(Dev, Table, srcs, tableBytes, Stream)) {
    *err = loom_cuda_last_error();
    return false;
  }
  uint64_t table = Table, outPtr = reinterpret_cast<uintptr_t>(out);
  uint32_t np = uint32_t(p);
  uint64_t r = uint64_t(rows), c = uint64_t(cols), ss = uint64_t(srcStride),
           ds = uint64_t(dstStride);
  void *params[] = {&table, &np, &outPtr, &r, &c, &ss, &ds};
  uint64_t blocks = std::min<uint64_t>(
      kMaxBlocks, (uint64_t(rows * cols) + kThreads - 1) / kThreads);
  uint32_t grid[3] = {uint32_t(blocks), 1, 1}, block[3] = {kThreads, 1, 1};
  if (loom_cuda_launch(mod, "loom_reduce", grid, block, 0, Stream, params)) {
    *err = loom_cuda_last_error();
    return false;
  }
  return true;
}

} // namespace loom::rt
