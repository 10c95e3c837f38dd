#!/bin/sh
# `npm run bench`: every benchmark of bench/, one after the other (never two at once: software
# adapters use every core), then the tables of this sitting.
#   BENCH_TAG=run1 npm run bench      -> bench/results/<date>-{deno,chromium,ddp}-run1.json (+ .log)
# Stages: 1. Deno (lavapipe or a GPU): ours vs TF.js webgpu vs jax-js, W1 matmul + W2 MLP.
#         2. Chromium (SwiftShader or a GPU), same suite, driven by Playwright (bench/playwright.config.ts).
#         3. Deno: the data-parallel trainer (bench/ddp.ts).
#         4. Chromium: the same trainer sweep, ranks as Web Workers (bench/ddp.spec.ts).
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh

TAG=${BENCH_TAG:-}
DAY=$(date -u +%Y-%m-%d)
log() { echo "bench/results/${DAY}-$1${TAG:+-$TAG}.log"; }
mkdir -p bench/results
status=0
echo "bench: $(date -u +%FT%TZ), $(nproc) cores,$(uptime | sed 's/.*load average/ load average/')"

echo "== 1/4 engine, Deno: ours vs TF.js webgpu vs jax-js"
deno run -A bench/engine.ts ${TAG:+--tag "$TAG"} 2>&1 | tee "$(log deno)"
grep -q "^wrote " "$(log deno)" || status=1
grep -q "a contender failed or a result check failed" "$(log deno)" && status=1

echo "== 2/4 engine, Chromium: ours vs TF.js webgpu vs jax-js"
BENCH_TAG="$TAG" playwright test -c bench/playwright.config.ts bench.spec.ts 2>&1 | tee "$(log chromium)"
grep -q "1 passed" "$(log chromium)" || status=1

echo "== 3/4 trainer, Deno: 1/2/4 ranks, sync/cadence/async, f32/bf16, a 3x slower rank"
deno run -A --no-check bench/ddp.ts ${TAG:+--tag "$TAG"} 2>&1 | tee "$(log ddp)"
grep -q "^wrote " "$(log ddp)" || status=1

echo "== 4/4 trainer, Chromium: the same sweep, ranks as Web Workers"
BENCH_TAG="$TAG" playwright test -c bench/playwright.config.ts ddp.spec.ts 2>&1 | tee "$(log chromium-ddp)"
grep -q "1 passed" "$(log chromium-ddp)" || status=1

echo "== summary${TAG:+ ($TAG)}"
deno run -A bench/summarize.ts ${TAG:+--tag "$TAG"}
echo "bench: done $(date -u +%FT%TZ),$(uptime | sed 's/.*load average/ load average/')"
[ "$status" = 0 ] || echo "bench: a stage failed or a check failed (see the logs under bench/results/)" >&2
exit "$status"
