#!/bin/sh
# Every test: type-check, lint, Deno unit + GPU tests (and the doc examples), Playwright on Chromium.
set -eu
cd "$(dirname "$0")/.."
. scripts/env.sh

echo "== type-check (tsc: src and the browser side; deno check: the Deno side)"
tsc -p tsconfig.json
deno check -q src/index.ts workers/rank.ts examples/ test/unit/ test/gpu/ test/util/ test/reference/ test/fixtures/ bench/*.ts

echo "== lint (deno lint)"
deno lint -q

adapter=$(deno eval 'const a = await navigator.gpu?.requestAdapter(); console.log(a ? (a.info.description || a.info.architecture || a.info.vendor) : "none")' 2>/dev/null || echo "none")
echo "== deno test (unit, GPU on: $adapter; doc examples)"
if [ "$adapter" = "none" ]; then
  echo "No WebGPU adapter for Deno: GPU tests will fail. Without a GPU install Mesa's lavapipe:" >&2
  echo "  apt-get install -y mesa-vulkan-drivers" >&2
fi
# Type-checked above; --no-check also spares each rank worker its own check.
deno test -A --no-check --v8-flags=--expose-gc --doc src/ test/unit/ test/gpu/

echo "== playwright (Chromium)"
playwright test
