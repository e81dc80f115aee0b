#!/usr/bin/env bash
# Installs the external peers the load generator and the paper experiments
# drive: memcached, redis-server (+ redis-cli from redis-tools),
# libmemcached-tools (memcaslap, a memcached UDP client) and nutcracker
# (twemproxy). Debian packages via apt-get; idempotent: a package whose
# command is already on PATH is skipped, and nothing runs when all are there.
#
#   bench/setup.sh          # install what is missing (needs root or sudo)
#   bench/setup.sh --check  # only report what is missing; exit 1 if any
set -euo pipefail

# package:command pairs
WANT=(
  "memcached:memcached"
  "redis-server:redis-server"
  "redis-tools:redis-cli"
  "libmemcached-tools:memcaslap"
  "nutcracker:nutcracker"
  "iproute2:ip"             # network namespaces + veth for the AF_XDP tests
)

missing=()
for pair in "${WANT[@]}"; do
  pkg=${pair%%:*}
  cmd=${pair##*:}
  if command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || [ -x "/usr/bin/$cmd" ]; then
    echo "setup: $pkg present ($cmd)"
  else
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: nothing to install"
  exit 0
fi
if [ "${1:-}" = "--check" ]; then
  echo "setup: missing: ${missing[*]}"
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --no-install-recommends keeps it small; the packages' own services are not
# needed (tests start their own servers on 127.0.0.1 high ports), so stop
# any the package scripts started, when systemd/invoke-rc.d did start them.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
for svc in memcached redis-server nutcracker; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $SUDO systemctl stop "$svc" || true
    $SUDO systemctl disable "$svc" >/dev/null 2>&1 || true
  fi
done
echo "setup: done"
