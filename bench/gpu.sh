#!/bin/sh
# For whoever first has a hardware GPU (issue 13): one command, one time limit, everything the
# GPU answers that a CPU adapter cannot.
#
#   bench/gpu.sh [LIMIT_S]            # default 540 s in all; PEAK_GFLOPS=67000 bench/gpu.sh for an H100/H200 (f32, no tensor cores)
#   GPU_TESTS=all bench/gpu.sh        # every test under test/gpu/ (default: kernels, ops, nn, optim, autograd)
#
# Prints, in order (each stage gets what is left of the limit, and is cut off with a note when
# it runs out):
#   1. the adapter, our matmul kernel GFLOP/s at n = 1024, 2048, 4096 (many dispatches per
#      submit, so the ~12 ms submit floor does not hide the kernel) and, with PEAK_GFLOPS, the
#      share of the adapter's peak; the MLP and LeNet steps, loss at end and awaited (bench/steps.ts);
#   2. the per-class tiling sweep (bench/matmul_sweep.ts --classes): the MATMUL_CLASS_TILINGS.gpu
#      row to paste into src/gpu/tuning.ts;
#   3. the GPU tests in Deno, on the GPU (every kernel variant against its float64 reference).
# Needs node_modules (deno) as `npm ci` leaves it; nothing else. Exit status: the tests'.
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
LIMIT=${1:-540}
END=$(( $(date +%s) + LIMIT ))
left() { echo $(( END - $(date +%s) )); }
stage() {
  t=$(left)
  if [ "$t" -le 10 ]; then echo "== skipped (time limit ${LIMIT} s reached): $*"; return 124; fi
  echo "== $* (at most ${t} s)"
  timeout --signal=KILL "$t" "$@"
  rc=$?
  [ $rc -eq 137 ] && echo "== cut off at the time limit: $*"
  return $rc
}
echo "bench/gpu.sh: $(date -u +%FT%TZ), $(nproc) cores, limit ${LIMIT} s"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader

stage deno run -A --no-check bench/steps.ts --models mlp,lenet --rounds 3 --steps 50 --matmul 1024,2048,4096 | tee /tmp/flodl-gpu-steps.txt
if [ -n "${PEAK_GFLOPS:-}" ]; then
  grep "kernel GFLOP/s" /tmp/flodl-gpu-steps.txt | awk -F'|' -v peak="$PEAK_GFLOPS" \
    '{ printf "%s: %.1f GFLOP/s = %.3f of the adapter peak %s\n", $2, $3, $3 / peak, peak }'
fi
stage deno run -A --no-check bench/matmul_sweep.ts --classes --rounds 3

if [ "${GPU_TESTS:-}" = all ]; then
  TESTS="test/gpu/"
else
  TESTS="test/gpu/gpu test/gpu/tensor test/gpu/nn test/gpu/optim test/gpu/autograd"
fi
# shellcheck disable=SC2086
stage deno test -A --no-check --v8-flags=--expose-gc $TESTS
status=$?
echo "bench/gpu.sh: done, tests exit ${status}, $(( LIMIT - $(left) )) s"
exit $status
