#!/usr/bin/env bash
# Server CPU per pipelined hash read (RESP) by value size, granola-kv
# variants side by side with Redis 7: `HGET h f0` and `HGETALL h` of a hash
# of 4 fields whose values are SIZE bytes, and (TESTS=zrange)
# `ZRANGE z 0 -1` of a sorted set of 4 members of SIZE bytes,
# redis-benchmark -c 50 -P 16,
# the server pinned to CPU 0 and the client to CPU 1; server CPU from
# /proc/PID/stat (utime+stime) over the run. Variants interleave in every
# repetition.
#
#   bench/hash-read-cpu.sh REPS "64 4096 65536" label=path/to/granola-kv[,flag,...] ...
#       -> bench/results/hash-read-cpu-DATE.json and a Markdown table
#
# A variant's flags follow its path, comma-separated (e.g.
# `copied=target/release/granola-kv,--copy-threshold,1073741824`).
# Requests per run: N (default 400000), fewer for large values so a run
# moves at most about 2 GB. TESTS: any of "hget hgetall zrange" (default
# "hget hgetall").
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=$1 SIZES=$2
shift 2
VARIANTS=("$@" "redis=redis-server")
N=${N:-400000}
TESTS=${TESTS:-hget hgetall}
PORT=16398
OUT=${OUT:-bench/results/hash-read-cpu-$(date -u +%F).json}
# shellcheck source=lib/server-cpu.sh
. bench/lib/server-cpu.sh

one() { # label binary[,flags] size test rep
    local label=$1 spec=$2 size=$3 test=$4 rep=$5
    local bin=${spec%%,*} flags=()
    [ "$spec" != "$bin" ] && IFS=, read -r -a flags <<<"${spec#*,}"
    start_resp_server "$label" "$bin" $PORT "${flags[@]}"
    local value
    value=$(head -c "$size" /dev/zero | tr '\0' v)
    for f in 0 1 2 3; do
        redis-cli -p $PORT HSET h "f$f" "$value" >/dev/null
        redis-cli -p $PORT ZADD z "$f" "$f${value:1}" >/dev/null
    done
    local fields=4 n cmd
    case $test in
        hget) cmd=(HGET h f0) fields=1 ;;
        hgetall) cmd=(HGETALL h) ;;
        zrange) cmd=(ZRANGE z 0 -1) ;;
        *) echo "unknown test $test" >&2; exit 1 ;;
    esac
    n=$((2000000000 / (size * fields + 64)))
    [ "$n" -gt "$N" ] && n=$N
    local t0 t1
    t0=$(cpu_ticks $PID)
    taskset -c 1 redis-benchmark -p $PORT -c 50 -n "$n" -P 16 -q "${cmd[@]}" >/dev/null
    t1=$(cpu_ticks $PID)
    kill $PID; wait $PID 2>/dev/null || true; PID=
    echo "{\"variant\": \"$label\", \"size\": $size, \"test\": \"$test\", \"rep\": $rep, \"requests\": $n, \"cpu_us_per_req\": $(python3 -c "print(($t1 - $t0) / $HZ / $n * 1e6)")}" >>"$RAW"
}

for rep in $(seq "$REPS"); do
    for size in $SIZES; do
        for test in $TESTS; do
            for v in "${VARIANTS[@]}"; do one "${v%%=*}" "${v#*=}" "$size" "$test" "$rep"; done
        done
    done
done
mkdir -p bench/results
python3 - "$RAW" "$OUT" "$*" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
json.dump({"kernel": os.uname().release, "variants": sys.argv[3],
           "unit": "server CPU microseconds per request", "runs": rows},
          open(sys.argv[2], "w"), indent=1)
variants = list(dict.fromkeys(r["variant"] for r in rows))
cases = list(dict.fromkeys((r["test"], r["size"]) for r in rows))
print("| request | value | " + " | ".join(f"{v} µs/req" for v in variants) + " |")
print("|---|---|" + "---|" * len(variants))
for test, size in cases:
    cells = []
    for v in variants:
        c = [r["cpu_us_per_req"] for r in rows
             if r["variant"] == v and r["test"] == test and r["size"] == size]
        cells.append(f"{statistics.median(c):.2f} [{min(c):.2f}–{max(c):.2f}]")
    print(f"| {test} | {size} B | " + " | ".join(cells) + " |")
print(f"JSON: {sys.argv[2]}")
PY
