#!/usr/bin/env bash
# Server CPU per pipelined write (RESP), granola-kv binaries side by side:
# redis-benchmark -c 50 -P 16 -r 10000 -t TEST (its default 3-byte values; MSET sets
# 10 keys), the server (`-t 1 -m 1024`) pinned to CPU 0 and the client to
# CPU 1; server CPU from /proc/PID/stat (utime+stime) over the run.
# Variants alternate in every repetition.
#
#   bench/write-cpu.sh REPS "set mset" label=path/to/granola-kv [label=...]
#       -> bench/results/write-cpu-DATE.json and a Markdown table
#
# N (requests per run, default 3000000; MSET runs a fifth of it).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=$1 TESTS=$2
shift 2
VARIANTS=("$@")
N=${N:-3000000}
PORT=16499
OUT=${OUT:-bench/results/write-cpu-$(date -u +%F).json}
# shellcheck source=lib/server-cpu.sh
. bench/lib/server-cpu.sh

one() { # label binary test rep
    local label=$1 bin=$2 test=$3 rep=$4 n=$N
    [ "$test" = mset ] && n=$((N / 5))
    taskset -c 0 "$bin" -m 1024 -t 1 -l 127.0.0.1 -p 0 --native-port 0 \
        --resp-port $PORT >/dev/null 2>&1 &
    PID=$!
    for _ in $(seq 100); do
        (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
        sleep 0.05
    done
    local c0 c1
    c0=$(cpu_ticks "$PID")
    taskset -c 1 redis-benchmark -p $PORT -t "$test" -P 16 -n "$n" -c 50 -r 10000 -q \
        >/dev/null 2>&1
    c1=$(cpu_ticks "$PID")
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
    printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$test" "$rep" "$n" \
        "$(echo "($c1 - $c0) / $HZ" | bc -l)" >>"$RAW"
}

for rep in $(seq "$REPS"); do
    for test in $TESTS; do
        for v in "${VARIANTS[@]}"; do
            one "${v%%=*}" "${v#*=}" "$test" "$rep"
        done
    done
done

python3 - "$RAW" "$OUT" "$REPS" "$*" <<'PY'
import json, statistics, sys, datetime, platform
raw, out, reps, variants = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = [l.rstrip("\n").split("\t") for l in open(raw)]
cells = {}
for label, test, rep, n, cpu in rows:
    cells.setdefault((test, label), []).append(float(cpu) * 1e6 / int(n))
labels = list(dict.fromkeys(r[0] for r in rows))
tests = list(dict.fromkeys(r[1] for r in rows))
doc = {
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "kernel": platform.release(),
    "reps": reps,
    "variants": variants,
    "unit": "server CPU microseconds per request (MSET: per 10-key MSET)",
    "cells": [{"test": t, "label": l, "runs": cells[(t, l)],
               "median": statistics.median(cells[(t, l)])} for t in tests for l in labels],
}
json.dump(doc, open(out, "w"), indent=1)
print("| test | " + " | ".join(f"{l} µs/req" for l in labels) + " |")
print("|---|" + "---|" * len(labels))
for t in tests:
    c = [cells[(t, l)] for l in labels]
    print(f"| {t} | " + " | ".join(
        f"{statistics.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]" for v in c) + " |")
print(f"JSON: {out}")
PY
