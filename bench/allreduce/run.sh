#!/usr/bin/env bash
# bench/allreduce/run.sh [nranks ...]   (default: 2 4)
# env: LOOM_BUILD_DIR (default build/), LOOM_BENCH_REPS (3),
#      LOOM_BENCH_MIN_BYTES / LOOM_BENCH_MAX_BYTES (4096 / 64 MiB)
# Compares the Loom threads all-reduce with OpenMPI's MPI_Allreduce (mpirun
# -np N, shared memory) on this machine: f32 sum, out of place, 4 KB..64 MB;
# then the latency of the small collectives of one tensor-parallel decode
# step (bench/allreduce/Decode.h) on both.
# Build first: ninja -C $LOOM_BUILD_DIR loom-bench-allreduce-threads \
#                 loom-bench-allreduce-mpi
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${LOOM_BUILD_DIR:-$ROOT/build}"
BIN="$BUILD/bin"
MIN=${LOOM_BENCH_MIN_BYTES:-4096}
MAX=${LOOM_BENCH_MAX_BYTES:-67108864}
ranks=("$@")
[ ${#ranks[@]} -eq 0 ] && ranks=(2 4)
for exe in loom-bench-allreduce-threads loom-bench-allreduce-mpi; do
  [ -x "$BIN/$exe" ] || { echo "missing $BIN/$exe (build it first)" >&2; exit 1; }
done
REPS=${LOOM_BENCH_REPS:-3}
echo "# $(nproc) cores; $(lscpu | sed -n 's/^Model name: *//p'); load average $(cut -d' ' -f1-3 /proc/loadavg); best of $REPS runs"
# best (lowest latency) per size over $REPS alternating runs of each program:
# the machine may be shared, and both sides get the same treatment.
best() { sort -k1,1n -k2,2g | awk '!seen[$1]++'; }
for n in "${ranks[@]}"; do
  thr=""; mpi=""
  for ((rep = 0; rep < REPS; ++rep)); do
    thr+="$("$BIN/loom-bench-allreduce-threads" "$n" "$MIN" "$MAX")"$'\n'
    mpi+="$(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader \
              -np "$n" "$BIN/loom-bench-allreduce-mpi" "$MIN" "$MAX")"$'\n'
  done
  thr=$(echo -n "$thr" | best)
  mpi=$(echo -n "$mpi" | best)
  echo
  echo "## N=$n ranks$( [ "$n" -gt "$(nproc)" ] && echo " (oversubscribed: $(nproc) cores)")"
  printf "| %10s | %14s | %14s | %6s | %12s | %12s |\n" size \
    "threads busbw" "mpi busbw" ratio "threads lat" "mpi lat"
  printf "|%s|%s|%s|%s|%s|%s|\n" ------------ ---------------- \
    ---------------- -------- -------------- --------------
  paste <(echo "$thr") <(echo "$mpi") | awk '
    function human(b) { return b >= 1048576 ? b/1048576 " MB" : b/1024 " KB" }
    { printf "| %10s | %9.2f GB/s | %9.2f GB/s | %5.2fx | %9.1f us | %9.1f us |\n",
        human($1), $4, $8, ($8 > 0 ? $4 / $8 : 0), $2, $6 }'
done

# Decode-step collectives: latency per call, best of $REPS alternating runs.
bestlat() { sort -k1,1 -k2,2g | awk '!seen[$1]++'; }
for n in "${ranks[@]}"; do
  thr=""; mpi=""
  for ((rep = 0; rep < REPS; ++rep)); do
    thr+="$("$BIN/loom-bench-allreduce-threads" "$n" --decode)"$'\n'
    mpi+="$(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader \
              -np "$n" "$BIN/loom-bench-allreduce-mpi" --decode)"$'\n'
  done
  echo
  echo "## decode-step collectives, N=$n ranks$( [ "$n" -gt "$(nproc)" ] && echo " (oversubscribed: $(nproc) cores)")"
  printf "| %-26s | %12s | %12s |\n" call "threads lat" "mpi lat"
  printf "|%s|%s|%s|\n" ---------------------------- -------------- --------------
  join <(echo -n "$thr" | bestlat) <(echo -n "$mpi" | bestlat) | awk '
    { printf "| %-26s | %9.2f us | %9.2f us |\n", $1, $2, $3 }'
done
