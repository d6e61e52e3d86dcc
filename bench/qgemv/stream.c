// stream.c - a STREAM-like copy (b[i] = a[i], doubles) with T pthreads on
// arrays far larger than the last-level cache. Bandwidth counts the bytes
// read and written (STREAM's convention): 16 bytes per element.
//
//   stream THREADS [MB per array] [reps]   -> best GB/s over reps
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double *a, *b;
static size_t n;
static int T;
static pthread_barrier_t bar;
static int reps;
static double best = 1e30;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *run(void *arg) {
  long id = (long)arg;
  size_t lo = n * id / T, hi = n * (id + 1) / T;
  for (size_t i = lo; i < hi; ++i) {
    a[i] = 1.0 + i;
    b[i] = 0;
  }
  for (int r = 0; r < reps; ++r) {
    pthread_barrier_wait(&bar);
    double t0 = now();
    for (size_t i = lo; i < hi; ++i)
      b[i] = a[i];
    pthread_barrier_wait(&bar);
    double dt = now() - t0;
    if (id == 0 && dt < best)
      best = dt;
  }
  return NULL;
}

int main(int argc, char **argv) {
  T = argc > 1 ? atoi(argv[1]) : 1;
  size_t mb = argc > 2 ? atol(argv[2]) : 256;
  reps = argc > 3 ? atoi(argv[3]) : 10;
  n = mb * 1024 * 1024 / sizeof(double);
  a = aligned_alloc(64, n * sizeof(double));
  b = aligned_alloc(64, n * sizeof(double));
  pthread_barrier_init(&bar, NULL, T);
  pthread_t th[64];
  for (long i = 0; i < T; ++i)
    pthread_create(&th[i], NULL, run, (void *)i);
  for (int i = 0; i < T; ++i)
    pthread_join(th[i], NULL);
  printf("stream copy threads=%d: %.2f GB/s\n", T,
         2.0 * n * sizeof(double) / best / 1e9);
  return b[n / 2] == a[n / 2] ? 0 : 1;
}
