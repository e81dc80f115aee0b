#!/usr/bin/env bash
# Pub/Sub fan-out: one publisher (PUBLISH pipelined 16 deep), N
# subscribers on one channel, every message checked in order at every
# subscriber (`granola-bench fanout`). granola-kv beside Redis and Valkey:
# servers (one thread) on CPU 0, the clients on CPU 1, server CPU from
# /proc/PID/stat over each run. Variants alternate in every repetition.
#
#   bench/pubsub.sh REPS label=BINARY [label=BINARY ...]
#       (labels starting with redis or valkey start that server binary;
#       anything else is a granola-kv binary)
#       -> bench/results/pubsub-DATE.json and a Markdown table
#
# SUBSCRIBERS (default "1 8 64"), MESSAGES (default 50000), SIZE (payload
# bytes, default 64).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=$1
shift
VARIANTS=("$@")
SUBS=${SUBSCRIBERS:-1 8 64}
MESSAGES=${MESSAGES:-50000}
SIZE=${SIZE:-64}
PORT=16496
BENCH=${BENCH:-target/release/granola-bench}
OUT=${OUT:-bench/results/pubsub-$(date -u +%F).json}
# shellcheck source=lib/server-cpu.sh
. bench/lib/server-cpu.sh

for rep in $(seq "$REPS"); do
    for v in "${VARIANTS[@]}"; do
        label=${v%%=*}
        start_peer "$label" "${v#*=}" $PORT
        for n in $SUBS; do
            c0=$(cpu_ticks "$PID")
            line=$(taskset -c 1 "$BENCH" fanout --addr 127.0.0.1:$PORT \
                --subscribers "$n" --messages "$MESSAGES" --size "$SIZE")
            c1=$(cpu_ticks "$PID")
            printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$n" "$rep" "$line" \
                "$(echo "($c1 - $c0) / $HZ" | bc -l)" >>"$RAW"
        done
        kill "$PID"
        wait "$PID" 2>/dev/null || true
        PID=
    done
done

python3 - "$RAW" "$OUT" "$REPS" "$*" "$MESSAGES" "$SIZE" <<'PY'
import json, statistics, sys, datetime, platform
raw, out, reps, variants, messages, size = sys.argv[1:7]
rows = []
for l in open(raw):
    label, subs, rep, report, cpu = l.rstrip("\n").split("\t")
    rows.append({"server": label, "subscribers": int(subs), "rep": int(rep),
                 "cpu_s": float(cpu), **json.loads(report)})
labels = list(dict.fromkeys(r["server"] for r in rows))
subs = sorted({r["subscribers"] for r in rows})
doc = {
    "benchmark": f"pubsub fan-out: {messages} messages of {size} B",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    "machine": platform.platform(),
    "command": "bench/pubsub.sh " + reps + " " + variants,
    "rows": rows,
}
json.dump(doc, open(out, "w"), indent=1)
def cell(xs, fmt):
    return f"{fmt(statistics.median(xs))} [{fmt(min(xs))}-{fmt(max(xs))}]"
print("| subscribers | " + " | ".join(f"{l} deliveries/s" for l in labels)
      + " | " + " | ".join(f"{l} server CPU ns/delivery" for l in labels) + " |")
print("|---|" + "---|" * (2 * len(labels)))
for n in subs:
    rates, cpus = [], []
    for l in labels:
        rs = [r for r in rows if r["server"] == l and r["subscribers"] == n]
        rates.append(cell([r["rate"] for r in rs], lambda x: f"{x:.0f}"))
        cpus.append(cell([r["cpu_s"] * 1e9 / r["delivered"] for r in rs], lambda x: f"{x:.0f}"))
    print(f"| {n} | " + " | ".join(rates) + " | " + " | ".join(cpus) + " |")
print(f"\nJSON: {out}")
PY
