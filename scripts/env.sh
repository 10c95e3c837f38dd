#!/bin/sh
# Environment for Deno on WebGPU: a private XDG_RUNTIME_DIR keeps Mesa's Vulkan loader quiet.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "${XDG_RUNTIME_DIR}" ]; then
  XDG_RUNTIME_DIR="${TMPDIR:-/tmp}/flodl-webgpu-xdg-$(id -u)"
  mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
  export XDG_RUNTIME_DIR
fi
PATH="$(pwd)/node_modules/.bin:$PATH"
export PATH
