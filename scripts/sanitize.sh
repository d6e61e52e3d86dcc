#!/usr/bin/env bash
# The sanitizer pass (issue 13; README "Sanitizers"): a second build of the
# plain C++ half of Loom -- the runtime (threads backend, ThreadPool, GEMM,
# MPI communicator), the executor and loom-run, lib/Formats, lib/Tokenizer,
# lib/Support -- and its GoogleTest/CTest entries, in build directories of
# their own:
#
#   build-asan/  LOOM_SANITIZE=address,undefined  every test labelled
#                runtime, loom-run, formats or tokenizer (MPI jobs included)
#   build-asan/  (compiler) the MLIR-linked compiler too: loom-opt, loomc and
#                the compiler's units (label compiler: lit, which runs
#                loom-opt/loomc/loom-run on every IR test, the planner's
#                no-crash sweep, the dialect, sharding, cost and support
#                units); libMLIR.so itself is Debian's, not instrumented
#   build-tsan/  LOOM_SANITIZE=thread             the runtime's threads-backend
#                units (collectives, ThreadPool, failure and mismatch tests)
#                and the executor's (ranks as threads running C kernels)
#
#   scripts/sanitize.sh [asan|compiler|tsan|all]   (default all)
#
# build-asan/ is -O1 -g1 (line tables): the compiler's MLIR-heavy sources
# compile about 1.5x as long as in build/. The code loomc generates is not
# instrumented; the fuzzers (fuzz/run.sh) are ASan+UBSan builds of their own.
# Any finding aborts the test that hit it, so ctest and this script fail.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHICH="${1:-all}"
JOBS="${LOOM_SANITIZE_JOBS:-$(nproc)}"
PREFIX="$(llvm-config-22 --prefix)"
SUPP="$ROOT/scripts/sanitize"

configure() { # build-dir sanitizers extra-cmake-args...
  local dir=$1 san=$2; shift 2
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -G Ninja -S "$ROOT" -B "$dir" \
      -DMLIR_DIR="$PREFIX/lib/cmake/mlir" \
      -DLLVM_EXTERNAL_LIT="$PREFIX/bin/lit" \
      -DMLIR_LINK_MLIR_DYLIB=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DLOOM_ENABLE_CUDA=OFF \
      -DLOOM_SANITIZE="$san" "$@" >/dev/null
  fi
}

# allocator_may_return_null (here and for TSan): runtime.GeneratedCodeChecks
# asks loom_rt_malloc for 2^62 bytes and expects the job's error, not the
# sanitizer's abort.
asan_env() {
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:allocator_may_return_null=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp"
  export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
}

# Only the targets without LLVM/MLIR code generation.
ASAN_TARGETS=(loom-rt-tests loom-rt-c-abi-test loom-exec-tests loom-run-tests
              loom-formats-tests loom-tokenizer-tests)
if [ "$WHICH" = asan ] || [ "$WHICH" = all ]; then
  B="$ROOT/build-asan"
  configure "$B" address,undefined
  ninja -C "$B" -j"$JOBS" "${ASAN_TARGETS[@]}" $(ninja -C "$B" -t targets all \
    | sed -n 's/^\(loom-rt-mpi-test\):.*/\1/p')
  asan_env
  # Not runtime.Launch.ThreadCreationFailureIsAnError: it caps the address
  # space (RLIMIT_AS) so that pthread_create fails, and ASan's own per-thread
  # allocations (its fake stacks) may then fail first and abort the child.
  # It runs in build/ and under TSan.
  (cd "$B" && ctest --output-on-failure -j"$JOBS" \
     -L '^(runtime|loom-run|formats|tokenizer)$' -LE '^mpi$' \
     -E '^runtime\.Launch\.ThreadCreationFailureIsAnError$')
  # The MPI jobs without LeakSanitizer: OpenMPI 4.1 leaks from MPI_Init in MCA
  # components it dlclose's at MPI_Finalize, so LSan can name neither module
  # nor function and no suppression can be narrow. ASan + UBSan still run.
  (cd "$B" && ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
     ctest --output-on-failure -j"$JOBS" -L '^mpi$')
fi
if [ "$WHICH" = compiler ] || [ "$WHICH" = all ]; then
  B="$ROOT/build-asan"
  configure "$B" address,undefined
  ninja -C "$B" -j"$JOBS" loom-opt loomc loom-run LoomPinAttentionHeads \
    loom-dialect-tests \
    loom-lowering-tests loom-sharding-tests loom-support-tests loom-cost-tests
  asan_env
  # allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its slabs when
  # the code that inlines it is instrumented (ours), and Debian's libMLIR.so,
  # which is not, allocates from the same allocators without unpoisoning:
  # every such read is a false use-after-poison. ASan's own checks stay.
  # Not Devices.MeasuredCpuIsPlausible: a speed plausibility bound (GFLOP/s
  # of a small GEMM), which -O1 and ASan miss by design.
  (cd "$B" && ASAN_OPTIONS="$ASAN_OPTIONS:allow_user_poisoning=0" \
     ctest --output-on-failure -j"$JOBS" -L '^compiler$' \
     -E '^Devices\.MeasuredCpuIsPlausible$')
fi
if [ "$WHICH" = tsan ] || [ "$WHICH" = all ]; then
  B="$ROOT/build-tsan"
  configure "$B" thread -DLOOM_ENABLE_MPI=OFF
  ninja -C "$B" -j"$JOBS" loom-rt-tests loom-rt-c-abi-test loom-exec-tests
  export TSAN_OPTIONS="halt_on_error=1:allocator_may_return_null=1:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp"
  # OpenBLAS (dlopen'ed, not instrumented) on one thread: its own workers
  # synchronize in ways TSan cannot see.
  export OPENBLAS_NUM_THREADS=1
  (cd "$B" && ctest --output-on-failure -j"$JOBS" -L runtime -R '^runtime\.')
fi
