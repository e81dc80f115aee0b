#!/usr/bin/env bash
# How long INFO keyspace and DBSIZE take on a large store, servers side by
# side: each server alone on CPU 0 (granola-kv `-t 1`), KEYS keys written
# into database 0 and as many into database 1 (redis-benchmark SETs of
# `key:N`, `-r KEYS`, so slightly fewer distinct keys; a tenth with a TTL),
# then REPS calls of each command from one redis-py connection on CPU 1,
# timed one by one; medians and ranges in ms.
#
#   bench/keyspace-info.sh KEYS REPS label=path/to/granola-kv [label=...]
#       -> bench/results/keyspace-info-DATE.json and a Markdown table
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=$1 REPS=$2
shift 2
PORT=16497
PY=${GRANOLA_PYTHON:-.venv/bin/python}
OUT=${OUT:-bench/results/keyspace-info-$(date -u +%F).json}
. bench/lib/server-cpu.sh

for v in "$@"; do
    label=${v%%=*} bin=${v#*=}
    start_peer "$label" "$bin" $PORT
    for db in 0 1; do
        redis-benchmark -p $PORT --dbnum $db -t set -r "$KEYS" -n "$KEYS" -P 64 -q >/dev/null
        redis-benchmark -p $PORT --dbnum $db -r "$KEYS" -n $((KEYS / 10)) -P 64 -q \
            SET "ttl:__rand_int__" v EX 100000 >/dev/null
    done
    taskset -c 1 "$PY" - "$label" "$PORT" "$REPS" >>"$RAW" <<'PY'
import json, statistics, sys, time
import redis
label, port, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = redis.Redis(port=port, protocol=2, db=1)
row = {"server": label, "dbsize_db1": c.dbsize()}
for name, call in [("info_keyspace", lambda: c.info("keyspace")), ("dbsize_db1", c.dbsize)]:
    ms = []
    for _ in range(reps):
        t = time.perf_counter()
        call()
        ms.append((time.perf_counter() - t) * 1000)
    row[name + "_ms"] = {"median": statistics.median(ms), "min": min(ms), "max": max(ms)}
row["keyspace"] = c.info("keyspace")
print(json.dumps(row))
PY
    kill "$PID"
    wait "$PID" 2>/dev/null || true
    PID=
done

python3 - "$RAW" "$OUT" "$KEYS" "$REPS" "$*" <<'PY'
import json, sys, datetime, platform
raw, out, keys, reps, variants = sys.argv[1:6]
rows = [json.loads(l) for l in open(raw)]
json.dump({
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    "machine": platform.node(),
    "command": f"bench/keyspace-info.sh {keys} {reps} {variants}",
    "rows": rows,
}, open(out, "w"), indent=1)
print("| server | keys in db1 | INFO keyspace ms, median [min–max] | DBSIZE (db 1) ms |")
print("|---|---|---|---|")
f = lambda d: f"{d['median']:.3f} [{d['min']:.3f}–{d['max']:.3f}]"
for r in rows:
    print(f"| {r['server']} | {r['dbsize_db1']} | {f(r['info_keyspace_ms'])} | {f(r['dbsize_db1_ms'])} |")
PY
