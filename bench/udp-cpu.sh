#!/usr/bin/env bash
# Server CPU per memcached UDP GET (issue 13): granola-kv on epoll
# (recvmmsg/sendmmsg) and on io_uring (multishot RECVMSG, one SENDMSG entry
# per reply) beside memcached -t 1, the server (`-t 1`) pinned to CPU 0 and
# the load generator to CPU 1. The load generator keeps CONNS UDP
# "connections" (source ports) with one GET each in flight (closed loop),
# ycsb keys (10k, Zipf 0.99) of VALUE bytes, every reply checked; loaded
# over TCP first. Server CPU from /proc/PID/stat (utime+stime) over the
# run. Variants alternate in every repetition.
#
#   bench/udp-cpu.sh REPS                 (about 8 s per run)
#       -> bench/results/udp-cpu-DATE.json and a Markdown table
#
# CONNS (default 16), VALUE (default 20), DURATION (default 3s).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=$1
CONNS=${CONNS:-16}
VALUE=${VALUE:-20}
DURATION=${DURATION:-3s}
PORT=17511
OUT=${OUT:-bench/results/udp-cpu-$(date -u +%F).json}
cargo build --release --locked -p granola-kv -p granola-bench >/dev/null
KV=target/release/granola-kv
LOAD=target/release/granola-bench
# shellcheck source=lib/server-cpu.sh
. bench/lib/server-cpu.sh
RUN_JSON=$(mktemp)

one() { # variant rep
    local v=$1 rep=$2
    case $v in
        kv-epoll|kv-uring)
            taskset -c 0 $KV -t 1 -m 256 -l 127.0.0.1 -p $PORT -U $PORT --resp-port 0 \
                --native-port 0 --datapath "${v#kv-}" >/dev/null 2>&1 & ;;
        memcached)
            taskset -c 0 memcached -u root -t 1 -m 256 -l 127.0.0.1 -p $PORT -U $PORT \
                >/dev/null 2>&1 & ;;
    esac
    PID=$!
    for _ in $(seq 100); do
        (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
        sleep 0.05
    done
    local wl="ycsb:keys=10k,value=$VALUE"
    $LOAD load --protocol memcached --addr 127.0.0.1:$PORT --workload "$wl" --load-only \
        --quiet >/dev/null
    local c0 c1
    c0=$(cpu_ticks "$PID")
    taskset -c 1 $LOAD load --protocol memcached --transport udp --addr 127.0.0.1:$PORT \
        --workload "$wl" --no-load --closed --conns "$CONNS" --warmup 0s \
        --duration "$DURATION" --strict --quiet --json "$RUN_JSON" >/dev/null 2>&1
    c1=$(cpu_ticks "$PID")
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
    python3 - "$RUN_JSON" "$v" "$rep" "$c0" "$c1" "$HZ" >>"$RAW" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
v, rep, c0, c1, hz = sys.argv[2], int(sys.argv[3]), *map(float, sys.argv[4:7])
ops = run["counts"]["ops"]
print(json.dumps({"variant": v, "rep": rep, "ops": ops, "ops_per_s": run["requests_per_s"],
                  "server_cpu_s": (c1 - c0) / hz,
                  "server_cpu_us_per_op": (c1 - c0) / hz / ops * 1e6}))
PY
}

for rep in $(seq "$REPS"); do
    for v in kv-epoll kv-uring memcached; do one "$v" "$rep"; done
done
mkdir -p bench/results
python3 - "$RAW" "$OUT" "$CONNS" "$VALUE" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
json.dump({"kernel": os.uname().release, "conns": int(sys.argv[3]), "value": int(sys.argv[4]),
           "runs": rows}, open(sys.argv[2], "w"), indent=1)
print("| variant | server µs/GET | GETs per server CPU-second | client-seen GETs/s |")
print("|---|---|---|---|")
for v in dict.fromkeys(r["variant"] for r in rows):
    x = [r["server_cpu_us_per_op"] for r in rows if r["variant"] == v]
    y = [r["ops_per_s"] for r in rows if r["variant"] == v]
    m = statistics.median(x)
    print(f"| {v} | {m:.2f} [{min(x):.2f}-{max(x):.2f}] | {1e6 / m / 1e3:.0f}k "
          f"| {statistics.median(y) / 1e3:.0f}k [{min(y) / 1e3:.0f}-{max(y) / 1e3:.0f}k] |")
PY
