#!/bin/sh
# Every test: type-check, lint, Deno unit + GPU tests (and doc examples), Playwright on Chromium.
set -eu
cd "$(dirname "$0")/.."
. scripts/env.sh

echo "== type-check (tsc)"
tsc -p tsconfig.json
echo "== lint (deno lint)"
deno lint -q
echo "== deno test (unit, GPU on $(deno eval -q 'const a = await navigator.gpu?.requestAdapter(); console.log(a?.info.description || a?.info.architecture || "no adapter")' 2>/dev/null || echo "?"))"
deno test -A --quiet test/unit test/gpu
echo "== playwright (Chromium)"
playwright test
