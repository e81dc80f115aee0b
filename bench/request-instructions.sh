#!/usr/bin/env bash
# User-space instructions per pipelined RESP request, servers side by side,
# counted by callgrind (exact and repeatable, unlike CPU time on a shared
# machine; kernel time is not counted). For each binary and test: the
# server (granola-kv with `-t 1`; redis-server and valkey-server, told
# apart by their names, without persistence) under callgrind, 2000 warm-up
# requests, the counters zeroed, N requests of redis-benchmark -P 16 -c 10
# -t TEST (one key; MSET sets 10 keys), the counters dumped.
#
#   bench/request-instructions.sh N "set get mset" label=path/to/granola-kv [label=...]
#   bench/request-instructions.sh N "set get" granola=target/release/granola-kv redis=$(command -v redis-server)
#       -> bench/results/request-instructions-DATE.json and a Markdown table
set -euo pipefail
cd "$(dirname "$0")/.."
N=$1 TESTS=$2
shift 2
PORT=16498
OUT=${OUT:-bench/results/request-instructions-$(date -u +%F).json}
# server_args (the rest of it is for /proc CPU readers; its RAW is ours).
. bench/lib/server-cpu.sh
. bench/lib/callgrind.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" "$RAW"' EXIT

one() { # label binary test
    local label=$1 bin=$2 test=$3 out=$TMP/cg.out
    local total
    callgrind_requests "$bin" "$test" "$N" $PORT "$out"
    total=$(grep -E '^(summary|totals):' "$DUMP" | head -1 | awk '{print $2}')
    printf '%s\t%s\t%s\n' "$label" "$test" "$((total / N))" >>"$RAW"
}

per_request_runs one "$TESTS" "$@"
per_request_table "user-space instructions per request (MSET: per 10-key MSET)" instructions "$*"
