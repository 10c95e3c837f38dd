#!/bin/sh
# `npm start`: the Deno training run (examples/train.ts). Flags after `--` go to it:
#   npm start -- --model lenet --ranks 3 --mode cpu-async      (npm start -- --help)
set -eu
cd "$(dirname "$0")/.."
. scripts/env.sh
exec deno run -A --no-check examples/train.ts "$@"
