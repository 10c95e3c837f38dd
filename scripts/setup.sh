#!/bin/sh
# Set-up shared by `npm start`, `npm test` and `npm run demo`:
#  - `npm ci` when node_modules is missing or older than package-lock.json;
#  - as root on Debian, `apt-get install -y` of every system package the tests use when
#    missing (Chromium, lavapipe, Debian's python3 with torch for golden values and
#    interop, nats-server, openssl); otherwise say what to install.
# Never downloads a browser or a binary outside npm and Debian's packages.
set -eu
cd "$(dirname "$0")/.."

stamp=node_modules/.flodl-lock
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi

missing=""
dpkg -s chromium >/dev/null 2>&1 || missing="$missing chromium"
dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || missing="$missing mesa-vulkan-drivers"
dpkg -s python3-torch >/dev/null 2>&1 || missing="$missing python3-torch"
dpkg -s nats-server >/dev/null 2>&1 || missing="$missing nats-server"
dpkg -s openssl >/dev/null 2>&1 || missing="$missing openssl"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
    echo "setup: installing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq $missing >/dev/null
  else
    echo "setup: missing system packages:$missing" >&2
    echo "  Chromium drives the browser tests; mesa-vulkan-drivers gives Deno a software WebGPU adapter" >&2
    echo "  (lavapipe) on machines without a GPU; python3-torch gives golden values and checks that" >&2
    echo "  PyTorch reads our files; nats-server carries remote ranks; openssl makes the walk-in server's" >&2
    echo "  self-signed certificate (tab links). On Debian/Ubuntu, as root:" >&2
    echo "    apt-get install -y$missing" >&2
    if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then exit 1; fi
  fi
fi
