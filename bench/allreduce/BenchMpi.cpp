//===- bench/allreduce/BenchMpi.cpp - OpenMPI MPI_Allreduce bench -*- C++
//-*-===//
//
// mpirun -np N loom-bench-allreduce-mpi [min_bytes] [max_bytes]
// The same measurement as BenchThreads.cpp with plain MPI_Allreduce (f32
// sum, out of place). Rank 0 prints <bytes> <latency_us> <algbw> <busbw>.
//
//===----------------------------------------------------------------------===//

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "Decode.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

/// Mean seconds per call (best of 5 trials of ~0.05 s), as BenchThreads.cpp.
template <typename F> double timeCalls(F call) {
  for (int i = 0; i < 20; ++i)
    call();
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < 20; ++i)
    call();
  double one = (MPI_Wtime() - t0) / 20, mx;
  MPI_Allreduce(&one, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int iters = int(std::clamp(0.05 / std::max(mx, 1e-7), 10.0, 50000.0));
  double t = 1e30;
  for (int trial = 0; trial < 5; ++trial) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i)
      call();
    MPI_Barrier(MPI_COMM_WORLD);
    t = std::min(t, (MPI_Wtime() - t0) / iters);
  }
  return t;
}

void decodeLatencies(int r, int n) {
  std::vector<char> in(1 << 16, 1), out(1 << 16);
  for (const loom::bench::DecodeCall &c : loom::bench::kDecodeCalls) {
    MPI_Datatype dt = c.i64 ? MPI_INT64_T : MPI_FLOAT;
    int elems = int(loom::bench::elemsPerRank(c, n));
    double t = timeCalls([&] {
      switch (c.kind) {
      case loom::bench::DecodeCall::AllReduce:
        MPI_Allreduce(in.data(), out.data(), elems, dt, MPI_SUM,
                      MPI_COMM_WORLD);
        break;
      case loom::bench::DecodeCall::AllGather:
        MPI_Allgather(in.data(), elems, dt, out.data(), elems, dt,
                      MPI_COMM_WORLD);
        break;
      case loom::bench::DecodeCall::ReduceScatter:
        MPI_Reduce_scatter_block(in.data(), out.data(), elems / n, dt, MPI_SUM,
                                 MPI_COMM_WORLD);
        break;
      case loom::bench::DecodeCall::Barrier:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
      }
    });
    if (r == 0)
      std::printf("%s %.2f\n", c.name, t * 1e6);
  }
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc > 1 && std::strcmp(argv[1], "--decode") == 0) {
    decodeLatencies(r, n);
    MPI_Finalize();
    return 0;
  }
  long long minBytes = argc > 1 ? std::atoll(argv[1]) : 4096;
  long long maxBytes = argc > 2 ? std::atoll(argv[2]) : 64 << 20;
  std::vector<float> in(maxBytes / 4, 1.0f + float(r)), out(maxBytes / 4);
  for (long long b = minBytes; b <= maxBytes; b *= 4) {
    int count = int(b / 4);
    for (int i = 0; i < 3; ++i)
      MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    double one = MPI_Wtime() - t0, mx;
    MPI_Allreduce(&one, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int iters = int(std::clamp(0.1 / std::max(mx, 1e-7), 3.0, 20000.0));
    // Best of 3 trials of ~0.1 s (the machine may be shared).
    double t = 1e30;
    for (int trial = 0; trial < 3; ++trial) {
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i)
        MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      t = std::min(t, (MPI_Wtime() - t0) / iters);
    }
    if (out[count - 1] != float(n * (n + 1) / 2))
      std::fprintf(stderr, "rank %d: wrong result\n", r);
    if (r == 0) {
      double alg = double(b) / t / 1e9;
      std::printf("%lld %.2f %.3f %.3f\n", b, t * 1e6, alg,
                  alg * 2.0 * (n - 1) / n);
    }
  }
  MPI_Finalize();
  return 0;
}
