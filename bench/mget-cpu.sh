#!/usr/bin/env bash
# Server CPU per MGET of N keys (RESP), granola-kv binaries side by side
# with Redis 7: redis-benchmark -c 50 -P 16 sends `MGET key:1 .. key:N`
# (50-byte values, or VALUE bytes; set first), the server pinned to CPU 0 and the client to
# CPU 1; server CPU from /proc/PID/stat (utime+stime) over the run.
# Variants interleave in every repetition.
#
#   bench/mget-cpu.sh REPS "2 10" label=path/to/granola-kv[,flag,...] [label=...]
#   (a variant's flags follow its path, comma-separated)
#       -> bench/results/mget-cpu-DATE.json and a Markdown table
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=$1 SIZES=$2
shift 2
VARIANTS=("$@" "redis=redis-server")
N=${N:-400000}
PORT=16399
OUT=${OUT:-bench/results/mget-cpu-$(date -u +%F).json}
# shellcheck source=lib/server-cpu.sh
. bench/lib/server-cpu.sh

one() { # label binary[,flags] keys rep
    local label=$1 spec=$2 keys=$3 rep=$4
    local bin=${spec%%,*} flags=()
    [ "$spec" != "$bin" ] && IFS=, read -r -a flags <<<"${spec#*,}"
    start_resp_server "$label" "$bin" $PORT "${flags[@]}"
    local names=() pairs=()
    for i in $(seq "$keys"); do
        names+=("key:$i")
        if [ -n "${VALUE:-}" ]; then
            pairs+=("key:$i" "$(head -c $((VALUE - ${#i})) /dev/zero | tr '\0' v)$i")
        else
            pairs+=("key:$i" "$(printf 'v%.0s' $(seq 48))$i")
        fi
    done
    redis-cli -p $PORT MSET "${pairs[@]}" >/dev/null
    local t0 t1
    t0=$(cpu_ticks $PID)
    taskset -c 1 redis-benchmark -p $PORT -c 50 -n "$N" -P 16 -q MGET "${names[@]}" >/dev/null
    t1=$(cpu_ticks $PID)
    kill $PID; wait $PID 2>/dev/null || true; PID=
    echo "{\"variant\": \"$label\", \"keys\": $keys, \"rep\": $rep, \"cpu_us_per_req\": $(python3 -c "print(($t1 - $t0) / $HZ / $N * 1e6)")}" >>"$RAW"
}

for rep in $(seq "$REPS"); do
    for keys in $SIZES; do
        for v in "${VARIANTS[@]}"; do one "${v%%=*}" "${v#*=}" "$keys" "$rep"; done
    done
done
mkdir -p bench/results
python3 - "$RAW" "$OUT" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
json.dump({"kernel": os.uname().release, "value_bytes": os.environ.get("VALUE", "49-50"),
           "runs": rows}, open(sys.argv[2], "w"), indent=1)
variants = list(dict.fromkeys(r["variant"] for r in rows))
sizes = sorted({r["keys"] for r in rows})
print("| keys | " + " | ".join(f"{v} µs/MGET" for v in variants) + " |")
print("|---|" + "---|" * len(variants))
for k in sizes:
    cells = []
    for v in variants:
        x = [r["cpu_us_per_req"] for r in rows if r["variant"] == v and r["keys"] == k]
        cells.append(f"{statistics.median(x):.3f} [{min(x):.3f}-{max(x):.3f}]")
    print(f"| {k} | " + " | ".join(cells) + " |")
PY
