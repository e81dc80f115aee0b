#!/usr/bin/env bash
# granola-kv memcached UDP GETs over AF_XDP vs kernel UDP (epoll), between
# two network namespaces joined by a veth pair (created here, deleted on
# exit). Server pinned to CPU 0, the load generator (kernel UDP client) to
# CPU 1; variants interleaved, REPS repetitions. Needs root and release
# builds of granola-kv and granola-bench.
#
#   bench/xdp-udp.sh [REPS] [VALUE_BYTES]      -> bench/results/xdp-udp.json
set -euo pipefail
REPS=${1:-5}
VALUE=${2:-32}
DUR=${DUR:-4}
KV=${KV:-target/release/granola-kv}
B=${B:-target/release/granola-bench}
S=gxbs$$ C=gxbc$$
OUT=bench/results/xdp-udp-v${VALUE}.json
TMP=$(mktemp -d)
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    ip netns del "$S" 2>/dev/null || true
    ip netns del "$C" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ip netns add "$S"
ip netns add "$C"
ip link add "$S" netns "$S" numtxqueues 1 numrxqueues 1 type veth \
    peer name "$C" netns "$C" numtxqueues 1 numrxqueues 1
ip -n "$S" addr add 10.212.0.1/24 dev "$S"
ip -n "$C" addr add 10.212.0.2/24 dev "$C"
for n in "$S" "$C"; do ip -n "$n" link set "$n" up; ip -n "$n" link set lo up; done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

run() { # $1 = variant (epoll, xdp, xdp-generic), $2 = rep
    local dp=$1 rep=$2 extra=()
    [ "$dp" = xdp-generic ] && extra=(--xdp-generic)
    ip netns exec "$S" taskset -c 0 "$KV" -l 10.212.0.1 -p 21211 -U 21211 \
        --resp-port 0 --native-port 0 -t 1 --udp-amplification 100000 --datapath "${dp%-generic}" --xdp-if "$S" "${extra[@]}" \
        >"$TMP/kv-$dp-$rep.log" 2>&1 &
    PID=$!
    # Ready when it says so (registering the pool as UMEM pins all of it,
    # which takes seconds; the listening socket accepts before that).
    for _ in $(seq 300); do
        grep -q 'granola-kv listening' "$TMP/kv-$dp-$rep.log" && break
        sleep 0.1
    done
    ip netns exec "$C" taskset -c 1 "$B" load --protocol memcached --transport udp \
        --addr 10.212.0.1:21211 --workload "ycsb:keys=10k,value=$VALUE" --load-only \
        --quiet >/dev/null
    local t0 w0 t1 w1
    t0=$(cpu_ticks "$PID"); w0=$(date +%s.%N)
    ip netns exec "$C" taskset -c 1 "$B" load --protocol memcached --transport udp \
        --addr 10.212.0.1:21211 --workload "ycsb:keys=10k,value=$VALUE" --no-load \
        --closed --depth 16 --conns 4 --duration "${DUR}s" --warmup 1s --quiet \
        --json "$TMP/$dp-$rep.json" >/dev/null
    t1=$(cpu_ticks "$PID"); w1=$(date +%s.%N)
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
    local mode
    mode=$(grep -o 'AF_XDP on [^,]*, [a-z-]* mode\|[a-z-]* mode, XDP program attached in [a-z]* mode' "$TMP/kv-$dp-$rep.log" | head -1 || true)
    [ "$dp" != epoll ] && [ -z "$mode" ] && { echo "xdp did not run:"; cat "$TMP/kv-$dp-$rep.log"; exit 1; }
    python3 - "$TMP/$dp-$rep.json" "$dp" "$rep" "$(( t1 - t0 ))" "$HZ" "$w0" "$w1" "$mode" >>"$TMP/rows.jsonl" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["runs"][0]
cpu = int(sys.argv[4]) / int(sys.argv[5])
wall = float(sys.argv[7]) - float(sys.argv[6])
util = cpu / wall
print(json.dumps({
    "datapath": sys.argv[2], "rep": int(sys.argv[3]), "mode": sys.argv[8],
    "achieved_rps": r["achieved_rps"], "p50_us": r["latency_us"]["p50"],
    "p99_us": r["latency_us"]["p99"], "server_cpu_util": util,
    "ops_per_server_cpu_s": r["achieved_rps"] / util if util > 0 else None,
    "errors": r.get("errors"),
}))
PY
}

for rep in $(seq "$REPS"); do
    for dp in epoll xdp xdp-generic; do run "$dp" "$rep"; done
done
mkdir -p bench/results
python3 - "$TMP/rows.jsonl" "$OUT" "$VALUE" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = {"kernel": os.uname().release, "value_bytes": int(sys.argv[3]), "runs": rows}
json.dump(out, open(sys.argv[2], "w"), indent=1)
print(f"kernel {out['kernel']}, value {sys.argv[3]} B, {len(rows)//3} reps (median [min-max])")
print("| datapath | mode | achieved ops/s | p50 us | p99 us | server CPU | ops per server CPU-s |")
print("|---|---|---|---|---|---|---|")
for dp in ("epoll", "xdp", "xdp-generic"):
    rs = [r for r in rows if r["datapath"] == dp]
    def f(k, fmt="{:.0f}"):
        v = [r[k] for r in rs]
        return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}-{fmt.format(max(v))}]"
    mode = rs[0]["mode"] or "kernel sockets"
    print(f"| {dp} | {mode} | {f('achieved_rps')} | {f('p50_us', '{:.1f}')} | {f('p99_us', '{:.1f}')} | {f('server_cpu_util', '{:.2f}')} | {f('ops_per_server_cpu_s')} |")
PY
