// ggml_gemv.c - llama.cpp's CPU matrix-vector product (ggml CPU backend) on
// Q4_0 weights, timed like Loom's: L distinct weights of [N, K] (more bytes
// than the last-level cache), y_i = W_i x, median time per product.
// Built by bench/qgemv/run.py against a ggml build outside the repository.
//
//   ggml_gemv K N L THREADS ITERS REPACK(0|1)
//
// Prints: "ggml q4_0 K N threads T repack R: median_ms per product"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s K N L THREADS ITERS REPACK\n", argv[0]);
    return 2;
  }
  int64_t K = atoll(argv[1]), N = atoll(argv[2]);
  int L = atoi(argv[3]), threads = atoi(argv[4]), iters = atoi(argv[5]);
  int repack = atoi(argv[6]);

  ggml_backend_load_all();
  ggml_backend_t backend = ggml_backend_cpu_init();
  ggml_backend_cpu_set_n_threads(backend, threads);

  struct ggml_init_params wp = {ggml_tensor_overhead() * (L + 4), NULL, true};
  struct ggml_context *cw = ggml_init(wp);
  struct ggml_tensor **w = malloc(sizeof(*w) * L);
  for (int i = 0; i < L; ++i)
    w[i] = ggml_new_tensor_2d(cw, GGML_TYPE_Q4_0, K, N);
  ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();
  const char *bufname = "CPU";
  if (repack) {
    ggml_backend_dev_t dev =
        ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    ggml_backend_dev_get_extra_bufts_t get =
        (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(
            reg, "ggml_backend_dev_get_extra_bufts");
    ggml_backend_buffer_type_t *extra = get ? get(dev) : NULL;
    if (!extra || !extra[0]) {
      fprintf(stderr, "no repack buffer type in this ggml build\n");
      return 3;
    }
    buft = extra[0];
    bufname = ggml_backend_buft_name(buft);
  }
  ggml_backend_buffer_t wbuf =
      ggml_backend_alloc_ctx_tensors_from_buft(cw, buft);
  if (!wbuf) {
    fprintf(stderr, "cannot allocate the weights\n");
    return 3;
  }
  // Random weights, quantized by ggml itself.
  float *src = malloc(sizeof(float) * K * N);
  srand(1);
  for (int64_t i = 0; i < K * N; ++i)
    src[i] = (float)rand() / RAND_MAX * 2 - 1;
  size_t qbytes = ggml_row_size(GGML_TYPE_Q4_0, K) * N;
  void *q = malloc(qbytes);
  ggml_quantize_chunk(GGML_TYPE_Q4_0, src, q, 0, N, K, NULL);
  for (int i = 0; i < L; ++i)
    ggml_backend_tensor_set(w[i], q, 0, qbytes);

  struct ggml_init_params ap = {
      ggml_tensor_overhead() * (2 * L + 8) + ggml_graph_overhead(), NULL, true};
  struct ggml_context *ca = ggml_init(ap);
  struct ggml_tensor *x = ggml_new_tensor_2d(ca, GGML_TYPE_F32, K, 1);
  struct ggml_cgraph *g = ggml_new_graph(ca);
  for (int i = 0; i < L; ++i)
    ggml_build_forward_expand(g, ggml_mul_mat(ca, w[i], x));
  ggml_backend_buffer_t abuf = ggml_backend_alloc_ctx_tensors(ca, backend);
  (void)abuf;
  float *xv = malloc(sizeof(float) * K);
  for (int64_t i = 0; i < K; ++i)
    xv[i] = (float)rand() / RAND_MAX;
  ggml_backend_tensor_set(x, xv, 0, sizeof(float) * K);

  for (int i = 0; i < 3; ++i)
    ggml_backend_graph_compute(backend, g);
  double *t = malloc(sizeof(double) * iters);
  for (int i = 0; i < iters; ++i) {
    double t0 = now_ms();
    ggml_backend_graph_compute(backend, g);
    t[i] = (now_ms() - t0) / L;
  }
  qsort(t, iters, sizeof(double), cmp);
  printf("ggml q4_0 K=%lld N=%lld threads=%d buffer=%s: %.4f ms per product "
         "(min %.4f), weight %.2f MB\n",
         (long long)K, (long long)N, threads, bufname, t[iters / 2], t[0],
         qbytes / 1e6);
  return 0;
}
