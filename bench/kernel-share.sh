#!/usr/bin/env bash
# Where a server's CPU time goes per pipelined RESP request: user space,
# and the kernel (its syscalls, and the softirq work the loopback does in
# the server's own context, such as delivering its replies into the
# client's socket). Servers side by side, interleaved, each pinned to
# CPU 0 with redis-benchmark on CPU 1.
#
# Run time is the sum of the server's threads' /proc/PID/task/*/schedstat
# (exact nanoseconds; what a CFS quota charges, softirq included on this
# kernel, which has no IRQ time accounting). User time is /proc/PID/stat's
# utime (clock ticks, sampled: runs of a few seconds keep its error near
# 1 %). Kernel = run time - user time.
#
# The "bound" column answers: with no user-space work at all, how far
# could granola-kv's CPU per request beat the peer's? (peer run time /
# granola-kv kernel time.)
#
#   bench/kernel-share.sh N "set incr" granola-kv=target/release/granola-kv redis=$(command -v redis-server)
#       -> bench/results/kernel-share-DATE.json and a Markdown table
set -euo pipefail
cd "$(dirname "$0")/.."
N=$1 TESTS=$2
shift 2
REPS=${REPS:-3}
PORT=16496
OUT=${OUT:-bench/results/kernel-share-$(date -u +%F).json}
# RAW, PID, start_resp_server; the server is killed on exit.
. bench/lib/server-cpu.sh
TICK=$HZ

runtime_ns() { # pid: run time of all its threads
    cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'
}
utime_ticks() { # pid
    awk '{print $14}' /proc/"$1"/stat
}

one() { # label binary test
    local label=$1 bin=$2 test=$3
    start_resp_server "$label" "$bin" $PORT
    local pid=$PID
    taskset -c 1 redis-benchmark -p $PORT -t "$test" -P 16 -n 20000 -c 50 -q >/dev/null 2>&1
    local r0 u0 r1 u1
    r0=$(runtime_ns $pid) u0=$(utime_ticks $pid)
    taskset -c 1 redis-benchmark -p $PORT -t "$test" -P 16 -n "$N" -c 50 -q >/dev/null 2>&1
    r1=$(runtime_ns $pid) u1=$(utime_ticks $pid)
    kill $pid
    wait $pid 2>/dev/null || true
    PID=
    printf '%s\t%s\t%s\t%s\n' "$label" "$test" "$((r1 - r0))" \
        "$(((u1 - u0) * 1000000000 / TICK))" >>"$RAW"
}

for _ in $(seq "$REPS"); do
    for test in $TESTS; do
        for v in "$@"; do
            one "${v%%=*}" "${v#*=}" "$test"
        done
    done
done

python3 - "$RAW" "$OUT" "$N" "$*" <<'PY'
import json, sys, datetime, platform, statistics as st
raw, out, n, variants = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = [l.rstrip("\n").split("\t") for l in open(raw)]
labels = list(dict.fromkeys(r[0] for r in rows))
tests = list(dict.fromkeys(r[1] for r in rows))
def runs(t, l):
    return [(int(r[2]) / n / 1000, int(r[3]) / n / 1000) for r in rows if r[0] == l and r[1] == t]
cells = []
for t in tests:
    for l in labels:
        rs = runs(t, l)
        total = [a for a, _ in rs]
        user = [b for _, b in rs]
        kernel = [a - b for a, b in rs]
        cells.append({"test": t, "label": l, "runs_us_per_req": [{"total": a, "user": b} for a, b in rs],
                      "total_us": st.median(total), "user_us": st.median(user), "kernel_us": st.median(kernel),
                      "total_spread_us": [min(total), max(total)]})
json.dump({
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "kernel": platform.release(),
    "requests": n,
    "variants": variants,
    "method": "redis-benchmark -P 16 -c 50 on CPU 1, server on CPU 0; run time from /proc/PID/task/*/schedstat, user from utime ticks; medians of the repetitions",
    "cells": cells,
}, open(out, "w"), indent=1)
c = {(x["test"], x["label"]): x for x in cells}
g = labels[0]
print("| test | " + " | ".join(f"{l} total / user / kernel µs" for l in labels)
      + " | " + " | ".join(f"{l} ÷ {g} (bound)" for l in labels[1:]) + " |")
print("|---|" + "---|" * (2 * len(labels) - 1))
for t in tests:
    cols = [f"{c[t,l]['total_us']:.3f} / {c[t,l]['user_us']:.3f} / {c[t,l]['kernel_us']:.3f}" for l in labels]
    rat = [f"{c[t,l]['total_us'] / c[t,g]['total_us']:.2f} ({c[t,l]['total_us'] / c[t,g]['kernel_us']:.2f})" for l in labels[1:]]
    print(f"| {t} | " + " | ".join(cols) + " | " + " | ".join(rat) + " |")
print(f"JSON: {out}")
PY
