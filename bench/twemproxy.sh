#!/usr/bin/env bash
# Scale-out: three granola-kv instances behind twemproxy (Debian's
# `nutcracker`), speaking memcached. Stores keys through the proxy, shows
# that they spread over all three instances, and reads them back through
# the proxy. Exits non-zero if any check fails.
#
#   bench/twemproxy.sh            (needs nutcracker: bench/setup.sh)
#
# Everything listens on 127.0.0.1; every process it starts is stopped by
# PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${GRANOLA_PYTHON:-.venv/bin/python}"
NUTCRACKER="$(command -v nutcracker || echo /usr/sbin/nutcracker)"
if [ ! -x "$NUTCRACKER" ]; then
    echo "twemproxy.sh: nutcracker not installed (run bench/setup.sh)" >&2
    exit 1
fi
cargo build --release --quiet -p granola-kv
BIN=target/release/granola-kv

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

BASE=$((23000 + RANDOM % 2000))
PORTS=($((BASE + 1)) $((BASE + 2)) $((BASE + 3)))
PROXY=$BASE
for p in "${PORTS[@]}"; do
    RUST_LOG=warn "$BIN" -p "$p" --resp-port 0 --native-port 0 -t 1 -m 64 &
    PIDS+=($!)
done

cat > "$WORK/nutcracker.yml" <<YML
granola:
  listen: 127.0.0.1:${PROXY}
  # fnv1a_64 (twemproxy's usual example) clusters sequential keys like
  # "key:1", "key:2" on one ketama arc; murmur spreads them.
  hash: murmur
  distribution: ketama
  timeout: 2000
  auto_eject_hosts: false
  redis: false
  servers:
   - 127.0.0.1:${PORTS[0]}:1
   - 127.0.0.1:${PORTS[1]}:1
   - 127.0.0.1:${PORTS[2]}:1
YML
"$NUTCRACKER" -c "$WORK/nutcracker.yml" -s $((PROXY + 10)) -o "$WORK/nutcracker.log" &
PIDS+=($!)

"$PY" - "$PROXY" "${PORTS[@]}" <<'PYEOF'
import sys, time
from pymemcache.client.base import Client

proxy, ports = int(sys.argv[1]), [int(p) for p in sys.argv[2:]]

def connect(port):
    deadline = time.time() + 10
    while True:
        try:
            c = Client(("127.0.0.1", port), connect_timeout=1, timeout=5)
            c.version() if port != proxy else c.set("probe", b"1", noreply=False)
            return c
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.1)

direct = [connect(p) for p in ports]
via = connect(proxy)
N = 300
for i in range(N):
    assert via.set(f"key:{i}", f"value-{i}".encode() * 3, noreply=False), i
counts = []
for c in direct:
    n = sum(1 for i in range(N) if c.get(f"key:{i}") is not None)
    counts.append(n)
print("keys per instance:", counts, "curr_items:", [int(c.stats()[b"curr_items"]) for c in direct])
assert all(n > 0 for n in counts), f"keys did not spread over all three: {counts}"
assert sum(counts) == N, f"keys stored twice or lost: {counts}"
for i in range(N):
    v = via.get(f"key:{i}")
    assert v == f"value-{i}".encode() * 3, (i, v)
print(f"twemproxy: {N} keys spread over 3 granola-kv instances {counts}, all read back through the proxy")
PYEOF
