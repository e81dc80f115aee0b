#!/usr/bin/env bash
# Blocking commands: LPUSH/BLPOP ping-pong round trips (two wake-ups each)
# and the CPU a server spends while clients wait, granola-kv beside Redis
# and Valkey. Servers (one thread) on CPU 0, `granola-bench pingpong` on
# CPU 1; server CPU from /proc/PID/stat over each run. Variants alternate
# in every repetition.
#
#   bench/blocking.sh REPS label=BINARY [label=BINARY ...]
#       labels starting with redis or valkey start that server binary;
#       anything else is a granola-kv binary (-t 1 -m 1024)
#       -> bench/results/blocking-DATE.json and a Markdown table
#
# SECONDS_PER_RUN (default 3), PAIRS (default "1 8"), IDLE (clients
# blocked on keys no one pushes: alone for the idle run, and beside 8
# pairs for the "with idle" run; default 2000).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=$1
shift
VARIANTS=("$@")
RUN_S=${SECONDS_PER_RUN:-3}
PAIRS=${PAIRS:-1 8}
IDLE=${IDLE:-2000}
PORT=16497
BENCH=${BENCH:-target/release/granola-bench}
OUT=${OUT:-bench/results/blocking-$(date -u +%F).json}
# shellcheck source=lib/server-cpu.sh
. bench/lib/server-cpu.sh

for rep in $(seq "$REPS"); do
    for v in "${VARIANTS[@]}"; do
        label=${v%%=*}
        start_peer "$label" "${v#*=}" $PORT
        for pairs in $PAIRS; do
            c0=$(cpu_ticks "$PID")
            line=$(taskset -c 1 "$BENCH" pingpong --addr 127.0.0.1:$PORT \
                --pairs "$pairs" --seconds "$RUN_S")
            c1=$(cpu_ticks "$PID")
            printf '%s\tpairs=%s\t%s\t%s\t%s\n' "$label" "$pairs" "$rep" "$line" \
                "$(echo "($c1 - $c0) / $HZ" | bc -l)" >>"$RAW"
        done
        c0=$(cpu_ticks "$PID")
        line=$(taskset -c 1 "$BENCH" pingpong --addr 127.0.0.1:$PORT --pairs 8 \
            --idle-clients "$IDLE" --seconds "$RUN_S")
        c1=$(cpu_ticks "$PID")
        printf '%s\tpairs=8+blocked=%s\t%s\t%s\t%s\n' "$label" "$IDLE" "$rep" "$line" \
            "$(echo "($c1 - $c0) / $HZ" | bc -l)" >>"$RAW"
        c0=$(cpu_ticks "$PID")
        taskset -c 1 "$BENCH" pingpong --addr 127.0.0.1:$PORT --pairs 0 \
            --idle-clients "$IDLE" --seconds "$RUN_S" >/dev/null
        c1=$(cpu_ticks "$PID")
        printf '%s\tidle=%s\t%s\t{}\t%s\n' "$label" "$IDLE" "$rep" \
            "$(echo "($c1 - $c0) / $HZ" | bc -l)" >>"$RAW"
        kill "$PID"
        wait "$PID" 2>/dev/null || true
        PID=
    done
done

python3 - "$RAW" "$OUT" "$REPS" "$*" "$RUN_S" <<'PY'
import json, statistics, sys, datetime, platform
raw, out, reps, variants, run_s = sys.argv[1:6]
rows = []
for l in open(raw):
    label, case, rep, report, cpu = l.rstrip("\n").split("\t")
    r = json.loads(report)
    rows.append({"server": label, "case": case, "rep": int(rep), "cpu_s": float(cpu), **r})
labels = list(dict.fromkeys(r["server"] for r in rows))
cases = list(dict.fromkeys(r["case"] for r in rows))
def cell(label, case):
    rs = [r for r in rows if r["server"] == label and r["case"] == case]
    if case.startswith("idle"):
        ms = [r["cpu_s"] * 1000 / float(run_s) for r in rs]
        return {"cpu_ms_per_s": ms}
    return {
        "rate": [r["rate"] for r in rs],
        "cpu_us_per_round_trip": [r["cpu_s"] * 1e6 / max(r["round_trips"], 1) for r in rs],
    }
doc = {
    "benchmark": "blocking: LPUSH/BLPOP ping-pong and idle blocked clients",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    "machine": platform.platform(),
    "command": "bench/blocking.sh " + reps + " " + variants,
    "rows": rows,
    "cells": {l: {c: cell(l, c) for c in cases} for l in labels},
}
json.dump(doc, open(out, "w"), indent=1)
def med(xs):
    return f"{statistics.median(xs):.0f} [{min(xs):.0f}-{max(xs):.0f}]" if xs else "-"
def med2(xs):
    return f"{statistics.median(xs):.2f} [{min(xs):.2f}-{max(xs):.2f}]" if xs else "-"
print(f"| case | " + " | ".join(labels) + " |")
print("|---|" + "---|" * len(labels))
for c in cases:
    if c.startswith("idle"):
        print(f"| {c}: server CPU ms/s | " + " | ".join(med2(doc["cells"][l][c]["cpu_ms_per_s"]) for l in labels) + " |")
    else:
        print(f"| {c}: round trips/s | " + " | ".join(med(doc["cells"][l][c]["rate"]) for l in labels) + " |")
        print(f"| {c}: server CPU µs/round trip | " + " | ".join(med2(doc["cells"][l][c]["cpu_us_per_round_trip"]) for l in labels) + " |")
print(f"\nJSON: {out}")
PY
