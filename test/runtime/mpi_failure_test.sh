#!/usr/bin/env bash
# mpi_failure_test.sh <kill9|timeout|abort|mismatch-count|mismatch-op|
#                      mismatch-kind> <loom-rt-mpi-test> [mpirun]
# Runs a 4-rank job in which one rank fails, and checks that the whole job
# ends non-zero, within a bounded time (no hang), with a clear message.
set -u
mode=$1
bin=$2
mpirun=${3:-mpirun}
limit=60
export LOOM_COLLECTIVE_TIMEOUT_S=20
[ "$mode" = timeout ] && export LOOM_COLLECTIVE_TIMEOUT_S=2
case $mode in mismatch-*) export LOOM_CHECK_COLLECTIVES=1 ;; esac
start=$(date +%s.%N)
out=$(timeout -k 5 $limit "$mpirun" --allow-run-as-root --oversubscribe \
        --mca btl self,vader -np 4 "$bin" "$mode" 2>&1)
rc=$?
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
echo "$out"
echo "mpi_failure_test: mode=$mode rc=$rc elapsed=${elapsed}s"
fail() { echo "mpi_failure_test: FAIL: $*"; exit 1; }
[ $rc -eq 0 ] && fail "the job exited 0"
[ $rc -eq 124 ] && fail "the job hung (killed after ${limit}s)"
[ "$(echo "$elapsed < $limit" | bc)" = 1 ] || fail "took ${elapsed}s"
# mismatch <what ranks 0-2 call> <what rank 3 calls>: the message of either
# side names the other.
mismatch() {
  echo "$out" | grep -qF "this rank called $1 but rank 3 called $2" ||
    echo "$out" | grep -qE "this rank called $(printf '%s' "$2" | sed 's/[()]/\\&/g') but rank [012] called $(printf '%s' "$1" | sed 's/[()]/\\&/g')" ||
    fail "no mismatch message naming both sides"
  echo "$out" | grep -qF "collective mismatch in the group of ranks {0,1,2,3}" ||
    fail "no group named"
}
case $mode in
  kill9)
    echo "$out" | grep -qE "signal 9|Killed|terminated by SIGTERM|aborting" ||
      fail "no message about the dead rank" ;;
  timeout)
    echo "$out" | grep -q "all_reduce(dtype=f32, op=sum, count=65536, axes_mask=0x1) failed: timed out after 2 s" ||
      fail "no timeout message"
    echo "$out" | grep -qE "loom-rt: rank [023]" || fail "no rank named" ;;
  abort)
    echo "$out" | grep -q "loom-rt: rank 2: aborted by loom_rt_abort: test abort from rank 2" ||
      fail "no abort message" ;;
  # Either side may report first (whichever rank MPI_Abort()s first wins
  # the race for the output): rank 3 disagrees with the others.
  mismatch-count)
    mismatch "all_reduce(dtype=f32, op=sum, count=16)" \
             "all_reduce(dtype=f32, op=sum, count=8)" ;;
  mismatch-op)
    mismatch "all_reduce(dtype=f32, op=sum, count=16)" \
             "all_reduce(dtype=f32, op=max, count=16)" ;;
  mismatch-kind)
    mismatch "all_reduce(dtype=f32, op=sum, count=16)" \
             "all_gather(dtype=f32, outer=1, inner=16)" ;;
esac
echo "mpi_failure_test: PASS"
