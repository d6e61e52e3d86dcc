/*===- loom/runtime/cuda.h - CUDA device, cuBLAS and NCCL C ABI -*- C -*-===*
 *
 * The CUDA side of the Loom runtime (built with LOOM_ENABLE_CUDA into
 * libloom_runtime_cuda). Pure C, no CUDA, LLVM or MLIR header: the CUDA
 * driver (libcuda.so.1), cuBLAS and NCCL are loaded with dlopen on first
 * use, so a binary linked against this library starts on a machine without
 * a GPU, a driver or the toolkit, and every call then fails with a clear
 * message ("no CUDA device: ...") instead of crashing.
 *
 * Conventions:
 *  - Functions returning int32_t return 0 on success and -1 on failure; the
 *    message of the last failure of the calling thread is
 *    loom_cuda_last_error(). Messages name the call and say what to do.
 *  - Device memory is a loom_cuda_ptr (a CUdeviceptr); streams, modules and
 *    graphs are opaque handles. Stream 0 is the default (legacy) stream.
 *  - The mgpu* functions at the end are the host-side ABI that MLIR's
 *    gpu-to-llvm emits (what libmlir_cuda_runtime.so provides upstream,
 *    which Debian does not ship). Like the rest of the Loom runtime ABI they
 *    either succeed or do not return: a failure prints
 *    "loom-cuda: <call> failed: <reason>" and calls the fatal handler
 *    (default: none), then ends the process with _Exit(1).
 *
 * See docs/GPU.md.
 *===----------------------------------------------------------------------===*/
#ifndef LOOM_RUNTIME_CUDA_H
#define LOOM_RUNTIME_CUDA_H

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_CUDA_ABI_VERSION 2

/* The device name (cuDeviceGetName) of the emulating CUDA driver that runs
   bundles compiled with `loomc --target=cuda --gpu-emulate` on the CPU
   (test/gpu/emu; docs/GPU.md "Emulation on the CPU"). Its kernel images are
   "LOOMEMU1\0<gpu.module>\0": the kernels are host functions
   `__loom_emu_<module>__<kernel>(void **params, int64_t ctx[12])` of the
   library holding the image, ctx = thread ids x y z, block ids, block
   sizes, grid sizes. */
#define LOOM_CUDA_EMULATOR_NAME "loom-cuda-emulator"

#if defined(__GNUC__)
#define LOOM_CUDA_EXPORT __attribute__((visibility("default")))
#else
#define LOOM_CUDA_EXPORT
#endif

/* Launch geometry of the generated qmatmul kernels (lib/Target/GpuTarget;
 * the compiler and the runtime share these numbers). */
#define LOOM_CUDA_QMM_GEMV_MAX_BATCH 8      /* <base>_gemv1 .. _gemv8 */
#define LOOM_CUDA_QMM_GEMV_THREADS 128      /* 4 warps */
#define LOOM_CUDA_QMM_GEMV_ROWS_PER_BLOCK 8 /* 2 rows per warp */
#define LOOM_CUDA_QMM_TILED_THREADS 256     /* <base>_tiled */
#define LOOM_CUDA_QMM_TILE 64               /* 64x64 outputs per block */

typedef uint64_t loom_cuda_ptr; /* device address (CUdeviceptr) */
typedef void *loom_cuda_stream; /* CUstream; NULL = default stream */
typedef struct loom_cuda_device loom_cuda_device;
typedef struct loom_cuda_module loom_cuda_module;
typedef struct loom_cuda_graph loom_cuda_graph;
typedef struct loom_cuda_event loom_cuda_event;
typedef struct loom_cuda_nccl loom_cuda_nccl;

LOOM_CUDA_EXPORT int32_t loom_cuda_abi_version(void);
/* Message of the calling thread's last failure ("" if none). */
LOOM_CUDA_EXPORT const char *loom_cuda_last_error(void);

/* --- Devices ---------------------------------------------------------------
 * The driver is $LOOM_CUDA_DRIVER if set, else libcuda.so.1. A missing
 * driver, cuInit failing or zero devices all fail with "no CUDA device: ..".
 */
LOOM_CUDA_EXPORT int32_t loom_cuda_device_count(int32_t *count);

typedef struct loom_cuda_device_info {
  char name[128];
  int32_t sm; /* compute capability major*10 + minor, e.g. 90 */
  int32_t multiprocessors;
  int64_t total_memory;   /* bytes */
  double peak_bandwidth;  /* bytes/s from memory clock and bus width */
  int32_t driver_version; /* e.g. 13000 */
} loom_cuda_device_info;

/* Opens device `ordinal` (its primary context, current on the caller's
 * thread; every later call makes it current again). */
LOOM_CUDA_EXPORT int32_t loom_cuda_open(int32_t ordinal,
                                        loom_cuda_device **out);
LOOM_CUDA_EXPORT void loom_cuda_close(loom_cuda_device *dev);
/* The device's free bytes now (cuMemGetInfo: what other processes and
 * this one have not allocated); its total memory when the driver has no
 * cuMemGetInfo. */
LOOM_CUDA_EXPORT int32_t loom_cuda_free_memory(loom_cuda_device *dev,
                                               int64_t *free_bytes);
LOOM_CUDA_EXPORT int32_t loom_cuda_info(loom_cuda_device *dev,
                                        loom_cuda_device_info *info);

/* --- Memory and streams ----------------------------------------------------
 */
LOOM_CUDA_EXPORT int32_t loom_cuda_malloc(loom_cuda_device *dev, int64_t bytes,
                                          loom_cuda_ptr *out);
LOOM_CUDA_EXPORT int32_t loom_cuda_free(loom_cuda_device *dev,
                                        loom_cuda_ptr ptr);
/* Copies on `stream` (asynchronous with respect to the host for device to
 * device; host copies wait for the stream). */
LOOM_CUDA_EXPORT int32_t loom_cuda_copy_to_device(loom_cuda_device *dev,
                                                  loom_cuda_ptr dst,
                                                  const void *src,
                                                  int64_t bytes,
                                                  loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_copy_to_host(loom_cuda_device *dev,
                                                void *dst, loom_cuda_ptr src,
                                                int64_t bytes,
                                                loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_copy_device(loom_cuda_device *dev,
                                               loom_cuda_ptr dst,
                                               loom_cuda_ptr src, int64_t bytes,
                                               loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_memset(loom_cuda_device *dev,
                                          loom_cuda_ptr dst, uint8_t value,
                                          int64_t bytes,
                                          loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_stream_create(loom_cuda_device *dev,
                                                 loom_cuda_stream *out);
LOOM_CUDA_EXPORT int32_t loom_cuda_stream_destroy(loom_cuda_device *dev,
                                                  loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_stream_sync(loom_cuda_device *dev,
                                               loom_cuda_stream stream);

/* Events, for timing: elapsed milliseconds between two recorded events. */
LOOM_CUDA_EXPORT int32_t loom_cuda_event_create(loom_cuda_device *dev,
                                                loom_cuda_event **out);
LOOM_CUDA_EXPORT int32_t loom_cuda_event_record(loom_cuda_event *ev,
                                                loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_event_elapsed_ms(loom_cuda_event *start,
                                                    loom_cuda_event *end,
                                                    float *ms);
LOOM_CUDA_EXPORT void loom_cuda_event_destroy(loom_cuda_event *ev);

/* --- Modules and kernels ----------------------------------------------------
 * A cubin (or PTX/fatbin image) made by the compiler. A cubin whose ELF
 * header names another architecture than the device's fails before the
 * driver sees it: "cubin is for sm_80 but device 0 (...) is sm_90: ...".
 */
LOOM_CUDA_EXPORT int32_t loom_cuda_module_load(loom_cuda_device *dev,
                                               const void *image, int64_t size,
                                               loom_cuda_module **out);
LOOM_CUDA_EXPORT int32_t loom_cuda_module_load_file(loom_cuda_device *dev,
                                                    const char *path,
                                                    loom_cuda_module **out);
LOOM_CUDA_EXPORT void loom_cuda_module_unload(loom_cuda_module *mod);
/* Launches `kernel` with the cuLaunchKernel parameter array `params`. */
LOOM_CUDA_EXPORT int32_t
loom_cuda_launch(loom_cuda_module *mod, const char *kernel,
                 const uint32_t grid[3], const uint32_t block[3],
                 uint32_t shared_bytes, loom_cuda_stream stream, void **params);
/* y[m, n] = x[m, k] * dequant(w)[n, k] with the generated kernels of
 * `base` (loom.gpu_kernel): <base>_gemv<m> for m <= 8, else <base>_tiled,
 * with their launch geometry. x and y must be 16-byte aligned (the kernels
 * read activations as 16-byte vectors; allocations are 256-byte aligned). */
LOOM_CUDA_EXPORT int32_t loom_cuda_qmatmul(loom_cuda_module *mod,
                                           const char *base, loom_cuda_ptr w,
                                           loom_cuda_ptr x, loom_cuda_ptr y,
                                           int64_t m, int64_t n,
                                           loom_cuda_stream stream);

/* The SM (major*10 + minor) a cubin was built for, from its ELF header; -1
 * if `image` is not a CUDA ELF (PTX text, a fatbin). */
LOOM_CUDA_EXPORT int32_t loom_cuda_cubin_sm(const void *image, int64_t size);
/* 0 if a cubin for `cubin_sm` runs on a device of `device_sm` (same major,
 * minor not above the device's), else -1 with the reason. */
LOOM_CUDA_EXPORT int32_t loom_cuda_check_arch(int32_t cubin_sm,
                                              int32_t device_sm);

/* --- CUDA graphs (decode) ---------------------------------------------------
 * Capture the work issued on `stream` (not the default stream) between
 * begin and end, then replay it with one launch per decode step. */
LOOM_CUDA_EXPORT int32_t loom_cuda_graph_begin(loom_cuda_device *dev,
                                               loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_graph_end(loom_cuda_device *dev,
                                             loom_cuda_stream stream,
                                             loom_cuda_graph **out);
LOOM_CUDA_EXPORT int32_t loom_cuda_graph_launch(loom_cuda_graph *graph,
                                                loom_cuda_stream stream);
LOOM_CUDA_EXPORT void loom_cuda_graph_destroy(loom_cuda_graph *graph);

/* --- cuBLAS (libcublas.so.13/.12, loaded on first use) ----------------------
 * Row-major c[m, n] = a[m, k] x b[k, n] (trans_a: a stored [k, m]; trans_b:
 * b stored [n, k], as nn.Linear weights are), f32 accumulation; dtype is
 * LOOM_RT_F16, LOOM_RT_BF16 or LOOM_RT_F32 (abi.h) for a, b and c. m = 1 is
 * the fp16 GEMV baseline of bench/gpu. */
LOOM_CUDA_EXPORT int32_t loom_cuda_gemm(loom_cuda_device *dev, int32_t dtype,
                                        int32_t trans_a, int32_t trans_b,
                                        int64_t m, int64_t n, int64_t k,
                                        loom_cuda_ptr a, loom_cuda_ptr b,
                                        loom_cuda_ptr c,
                                        loom_cuda_stream stream);

/* --- NCCL communicator (libnccl.so.2, loaded on first use) ------------------
 * One communicator per process (rank) over device buffers. Bootstrap:
 *  - loom_cuda_nccl_init_env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
 *    (torchrun's variables); rank 0 creates the NCCL id and serves it over
 *    TCP at MASTER_ADDR:MASTER_PORT; the others connect (retrying until
 *    `timeout_s`, <= 0: 60 s).
 *  - loom_cuda_nccl_init_mpi: MPI_COMM_WORLD's rank and size, the id by
 *    MPI_Bcast (only when the runtime was built with MPI).
 *  - loom_cuda_nccl_init_id: rank, size and an id exchanged by the caller.
 * dtype/op are abi.h's loom_rt_dtype / loom_rt_reduce_op (U8 and I32/I64,
 * F16/BF16/F32/F64; I8 too). Shapes as the loom_rt_* collectives of abi.h
 * (over the whole world): all_gather in [count] -> out [world][count],
 * reduce_scatter in [world][count] -> out [count]. */
#define LOOM_CUDA_NCCL_ID_BYTES 128
LOOM_CUDA_EXPORT int32_t
loom_cuda_nccl_unique_id(uint8_t id[LOOM_CUDA_NCCL_ID_BYTES]);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_init_id(
    loom_cuda_device *dev, int32_t rank, int32_t world,
    const uint8_t id[LOOM_CUDA_NCCL_ID_BYTES], loom_cuda_nccl **out);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_init_env(loom_cuda_device *dev,
                                                 double timeout_s,
                                                 loom_cuda_nccl **out);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_init_mpi(loom_cuda_device *dev,
                                                 loom_cuda_nccl **out);
LOOM_CUDA_EXPORT void loom_cuda_nccl_destroy(loom_cuda_nccl *comm);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_rank(loom_cuda_nccl *comm);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_world(loom_cuda_nccl *comm);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_all_reduce(
    loom_cuda_nccl *comm, int32_t dtype, int32_t op, loom_cuda_ptr in,
    loom_cuda_ptr out, int64_t count, loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_all_gather(
    loom_cuda_nccl *comm, int32_t dtype, loom_cuda_ptr in, loom_cuda_ptr out,
    int64_t count, loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_reduce_scatter(
    loom_cuda_nccl *comm, int32_t dtype, int32_t op, loom_cuda_ptr in,
    loom_cuda_ptr out, int64_t count, loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_broadcast(
    loom_cuda_nccl *comm, int32_t dtype, loom_cuda_ptr in, loom_cuda_ptr out,
    int64_t count, int32_t root, loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_send(loom_cuda_nccl *comm,
                                             int32_t dtype, loom_cuda_ptr buf,
                                             int64_t count, int32_t peer,
                                             loom_cuda_stream stream);
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_recv(loom_cuda_nccl *comm,
                                             int32_t dtype, loom_cuda_ptr buf,
                                             int64_t count, int32_t peer,
                                             loom_cuda_stream stream);

/* ncclGroupStart (begin != 0) / ncclGroupEnd: the sends and receives
 * between them are issued together (an all-to-all, a sendrecv). */
LOOM_CUDA_EXPORT int32_t loom_cuda_nccl_group(loom_cuda_nccl *comm,
                                              int32_t begin);
/* The TCP rendezvous of loom_cuda_nccl_init_env, on its own (tests, other
 * bootstraps): rank 0 sends `id` to every other rank, which receive it. */
LOOM_CUDA_EXPORT int32_t loom_cuda_tcp_exchange_id(
    int32_t rank, int32_t world, const char *addr, int32_t port,
    double timeout_s, uint8_t id[LOOM_CUDA_NCCL_ID_BYTES]);

/* --- mgpu* wrappers for MLIR's gpu-to-llvm host code ------------------------
 * Device: mgpuSetDefaultDevice(n), default 0. Fatal on failure. */
typedef void (*loom_cuda_fatal_fn)(const char *message);
/* Sets a function called with the message before the process ends (a
 * handler may also not return, e.g. longjmp or throw); NULL: none. Returns
 * the previous one. */
LOOM_CUDA_EXPORT loom_cuda_fatal_fn
loom_cuda_set_fatal_handler(loom_cuda_fatal_fn fn);

LOOM_CUDA_EXPORT void mgpuSetDefaultDevice(int32_t device);
LOOM_CUDA_EXPORT void *mgpuModuleLoad(void *data, size_t size);
LOOM_CUDA_EXPORT void *mgpuModuleLoadJIT(void *data, int opt_level);
LOOM_CUDA_EXPORT void mgpuModuleUnload(void *module);
LOOM_CUDA_EXPORT void *mgpuModuleGetFunction(void *module, const char *name);
LOOM_CUDA_EXPORT void mgpuLaunchKernel(void *function, intptr_t grid_x,
                                       intptr_t grid_y, intptr_t grid_z,
                                       intptr_t block_x, intptr_t block_y,
                                       intptr_t block_z, int32_t smem,
                                       void *stream, void **params,
                                       void **extra, size_t param_count);
LOOM_CUDA_EXPORT void *mgpuStreamCreate(void);
LOOM_CUDA_EXPORT void mgpuStreamDestroy(void *stream);
LOOM_CUDA_EXPORT void mgpuStreamSynchronize(void *stream);
LOOM_CUDA_EXPORT void mgpuStreamWaitEvent(void *stream, void *event);
LOOM_CUDA_EXPORT void *mgpuEventCreate(void);
LOOM_CUDA_EXPORT void mgpuEventDestroy(void *event);
LOOM_CUDA_EXPORT void mgpuEventSynchronize(void *event);
LOOM_CUDA_EXPORT void mgpuEventRecord(void *event, void *stream);
LOOM_CUDA_EXPORT void *mgpuMemAlloc(uint64_t bytes, void *stream,
                                    bool is_host_shared);
LOOM_CUDA_EXPORT void mgpuMemFree(void *ptr, void *stream);
LOOM_CUDA_EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes,
                                 void *stream);
LOOM_CUDA_EXPORT void mgpuMemset32(void *dst, uint32_t value, size_t count,
                                   void *stream);
LOOM_CUDA_EXPORT void mgpuMemset16(void *dst, unsigned short value,
                                   size_t count, void *stream);
/* loom_cuda_gemm on the default device and `stream` (a stream of the mgpu*
 * functions), for generated host code (passes/Gpu: loom-gpu-matmuls-to-cublas):
 * fatal on failure like the mgpu* functions. Pointers are device addresses. */
/* A device copy of `bytes` at `host` that stays for the process: uploaded
 * (synchronously) on the first call for that address and size, the same
 * device address on every later one. What the GPU host program passes its
 * weights and constants through, so that they are uploaded once, not per
 * call (the host memory must not change while the copy is in use).
 * Fatal on failure like the mgpu* functions. */
LOOM_CUDA_EXPORT void *loom_cuda_mgpu_resident(void *host, int64_t bytes);
/* Bytes held by loom_cuda_mgpu_resident's copies. */
LOOM_CUDA_EXPORT int64_t loom_cuda_mgpu_resident_bytes(void);
/* Frees every resident copy (a bundle closed; no program may run). */
LOOM_CUDA_EXPORT void loom_cuda_mgpu_release_resident(void);
/* State buffers (KV caches: entry arguments with loom.state) on the
 * device for as long as the bundle is loaded. loom_cuda_mgpu_state returns
 * the device copy of the state whose host buffer is `host`: the first call
 * for that address allocates it and fills it with zeros on the device
 * (synchronously), every later call returns the same address; the program
 * writes it in place and nothing copies it back. The host buffer is only
 * its key: its contents are never read or written, except by _write (the
 * host contents to the device copy, made when absent: an initial state)
 * and _read (the device copy to the host buffer: the state asked for after
 * a run). One address has one copy: another size for it is fatal. Release
 * the copy of `host` (or, with NULL, every copy) before its host buffer is
 * freed or reused (a reset), and when the bundle closes. Fatal on failure
 * like the mgpu* functions. */
LOOM_CUDA_EXPORT void *loom_cuda_mgpu_state(void *host, int64_t bytes);
LOOM_CUDA_EXPORT void loom_cuda_mgpu_state_write(const void *host,
                                                 int64_t bytes);
LOOM_CUDA_EXPORT void loom_cuda_mgpu_state_read(void *host, int64_t bytes);
/* Bytes held by the state copies. */
LOOM_CUDA_EXPORT int64_t loom_cuda_mgpu_state_bytes(void);
LOOM_CUDA_EXPORT void loom_cuda_mgpu_release_state(const void *host);
/* The workspace of a generated entry (ABI version 2): every buffer of a
 * call at an offset computed at compile time (docs/GPU.md "The memory
 * plan"). The first call for `key` (the address of a per-entry global of
 * the bundle) allocates `bytes` of device memory (contents undefined);
 * every later one returns the same address. Another size for one key is
 * fatal. _release_workspace frees every workspace (the bundle closed or a
 * reset; no program may run); the next call allocates again. Fatal on
 * failure like the mgpu* functions. */
LOOM_CUDA_EXPORT void *loom_cuda_mgpu_workspace(const void *key, int64_t bytes);
/* Bytes held by the workspaces. */
LOOM_CUDA_EXPORT int64_t loom_cuda_mgpu_workspace_bytes(void);
LOOM_CUDA_EXPORT void loom_cuda_mgpu_release_workspace(void);

/* CUDA graphs of entry calls (loom-run --cuda-graphs; docs/GPU.md "CUDA
 * graphs"). loom_cuda_mgpu_graph_begin(entry, rank) arms the next call of
 * the generated host code on this thread: the first call of each (entry,
 * rank) runs as it is (it allocates its workspace); a later one is
 * captured from its stream's creation to its first synchronisation
 * (relaxed capture mode), its copies with pageable host memory staged
 * through page-locked buffers of the pair (inputs copied in at capture,
 * results copied out after the launch), and the graph launched there:
 * instantiated the first time, then the pair's executable graph updated in
 * place (cuGraphExecUpdate; instantiated again when the update fails). The
 * rest of the call (after a collective's synchronisation) runs as it is.
 * Returns 1 when the call will be captured, 0 when it runs as it is (its
 * first, or a driver without cuGraphExecUpdate_v2, cuMemHostAlloc or
 * cuPointerGetAttribute). loom_cuda_mgpu_graph_end disarms (fatal when a
 * capture never reached its synchronisation). Stats: graph launches,
 * instantiations, updates of this process. Release frees every graph and
 * staging buffer (the executor, when it closes). */
LOOM_CUDA_EXPORT int32_t loom_cuda_mgpu_graph_begin(const void *entry,
                                                    const void *rank);
LOOM_CUDA_EXPORT void loom_cuda_mgpu_graph_end(void);
LOOM_CUDA_EXPORT void loom_cuda_mgpu_graph_stats(int64_t *launches,
                                                 int64_t *instantiations,
                                                 int64_t *updates);
LOOM_CUDA_EXPORT void loom_cuda_mgpu_release_graphs(void);
LOOM_CUDA_EXPORT void loom_cuda_mgpu_gemm(void *stream, int32_t dtype,
                                          int32_t trans_a, int32_t trans_b,
                                          int64_t m, int64_t n, int64_t k,
                                          void *a, void *b, void *c);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_RUNTIME_CUDA_H */
