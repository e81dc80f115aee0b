#!/usr/bin/env bash
# granola-kv UDP GETs (memcached or native protocol) over AF_XDP vs kernel
# UDP (epoll), between two network namespaces joined by a veth pair
# (created here, deleted on exit). Server pinned to CPU 0, the load
# generator to CPU 1; variants interleaved, REPS repetitions. A variant is
# SERVER[/SERIALIZER]:CLIENT: the server's datapath (epoll, xdp,
# xdp-generic), for the native protocol optionally the server's
# `--serializer` (granola, granola-copy, granola-ref, prost, flatbuffers,
# capnp; the load generator speaks the same), and the load generator's
# transport (udp = kernel sockets, xdp = its AF_XDP client, xdp-generic =
# the same with the program in generic mode). Needs root and release
# builds of granola-kv (`--features baselines` for the peer serializers)
# and granola-bench.
#
#   bench/xdp-udp.sh [REPS] [VALUE_BYTES]
#       -> bench/results/xdp-udp-<proto>-v<VALUE>.json
#   env: PROTO=memcached|native  DUR=seconds  DEPTH=16  CONNS=4  OUT=file.json
#        VARIANTS="epoll:udp epoll:xdp xdp:xdp"; a server part ending in
#        @TAG runs the granola-kv named by $KV_TAG instead of $KV (two
#        builds, or a wrapper adding flags, interleaved in one run:
#        KV_base=/tmp/kv-8b11253 VARIANTS="xdp@base:xdp xdp:xdp")
#        WORKLOAD=ycsb:keys=10k,value=VALUE (e.g. ...,shape=list:2 for the
#        Cornflakes 2 x 2048 B list)
set -euo pipefail
REPS=${1:-5}
VALUE=${2:-32}
DUR=${DUR:-4}
KV=${KV:-target/release/granola-kv}
B=${B:-target/release/granola-bench}
S=gxbs$$ C=gxbc$$
PROTO=${PROTO:-memcached}
DEPTH=${DEPTH:-16}
CONNS=${CONNS:-4}
VARIANTS=${VARIANTS:-epoll:udp epoll:xdp xdp:xdp xdp-generic:xdp-generic}
export WORKLOAD=${WORKLOAD:-ycsb:keys=10k,value=$VALUE}
OUT=${OUT:-bench/results/xdp-udp-${PROTO}-v${VALUE}.json}
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

run() { # $1 = SERVER[/SERIALIZER]:CLIENT variant, $2 = rep
    local variant=$1 rep=$2 dp=${1%%:*} cl=${1##*:} extra=() cextra=() ports=()
    local ser= proto=$PROTO kv=$KV
    if [[ $dp == *@* ]]; then
        local var="KV_${dp#*@}"
        kv=${!var:?"variant $variant needs \$$var"}
        dp=${dp%@*}
    fi
    if [[ $dp == */* ]]; then
        ser=${dp#*/} dp=${dp%%/*}
        extra+=(--serializer "$ser")
        case $ser in granola*) ;; *) proto="native:$ser" ;; esac
    fi
    [ "$dp" = xdp-generic ] && extra+=(--xdp-generic)
    [ "$cl" = xdp-generic ] && cextra=(--xdp-generic)
    if [ "$PROTO" = native ]; then
        ports=(-p 0 -U 0 --native-port 21311 --native-udp-port 21311)
        local port=21311
    else
        ports=(-p 21211 -U 21211 --native-port 0)
        local port=21211
    fi
    local tag=${variant//[:\/@]/-}
    local log="$TMP/kv-$tag-$rep.log" json="$TMP/$tag-$rep.json"
    ip netns exec "$S" taskset -c 0 "$kv" -l 10.212.0.1 "${ports[@]}" \
        --resp-port 0 -t 1 --udp-amplification 100000 --datapath "${dp%-generic}" --xdp-if "$S" "${extra[@]}" \
        >"$log" 2>&1 &
    PID=$!
    # Ready when it says so (registering the pool as UMEM pins all of it,
    # which takes seconds; the listening socket accepts before that).
    for _ in $(seq 300); do
        grep -q 'granola-kv listening' "$log" && break
        sleep 0.1
    done
    ip netns exec "$C" taskset -c 1 "$B" load --protocol "$proto" --transport tcp \
        --addr "10.212.0.1:$port" --workload "$WORKLOAD" --load-only \
        --quiet >/dev/null
    local t0 w0 t1 w1
    t0=$(cpu_ticks "$PID"); w0=$(date +%s.%N)
    ip netns exec "$C" taskset -c 1 "$B" load --protocol "$proto" --transport "${cl%-generic}" \
        --xdp-if "$C" "${cextra[@]}" \
        --addr "10.212.0.1:$port" --workload "$WORKLOAD" --no-load \
        --closed --depth "$DEPTH" --conns "$CONNS" --duration "${DUR}s" --warmup 1s --quiet \
        --json "$json" >/dev/null 2>"$TMP/client.err" || { cat "$TMP/client.err"; exit 1; }
    t1=$(cpu_ticks "$PID"); w1=$(date +%s.%N)
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
    local mode
    mode=$(grep -o '[a-z-]* mode, XDP program attached in [a-z]* mode' "$log" | head -1 || true)
    [ "$dp" != epoll ] && [ -z "$mode" ] && { echo "xdp did not run:"; cat "$log"; exit 1; }
    local cmode
    cmode=$(grep -o 'AF_XDP client on .*' "$TMP/client.err" | head -1 || true)
    [ "$cl" != udp ] && [ -z "$cmode" ] && { echo "the AF_XDP client did not run:"; cat "$TMP/client.err"; exit 1; }
    python3 - "$json" "$variant" "$rep" "$(( t1 - t0 ))" "$HZ" "$w0" "$w1" "$mode" "$cmode" >>"$TMP/rows.jsonl" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["runs"][0]
cpu = int(sys.argv[4]) / int(sys.argv[5])
wall = float(sys.argv[7]) - float(sys.argv[6])
util = cpu / wall
print(json.dumps({
    "variant": sys.argv[2], "rep": int(sys.argv[3]), "mode": sys.argv[8],
    "client_mode": sys.argv[9],
    "achieved_rps": r["achieved_rps"], "p50_us": r["latency_us"]["p50"],
    "p99_us": r["latency_us"]["p99"], "server_cpu_util": util,
    "ops_per_server_cpu_s": r["achieved_rps"] / util if util > 0 else None,
    "errors": r.get("errors"),
    "miss_frac": r["counts"]["ops_miss"] / max(1, r["counts"]["ops"]),
}))
PY
}

for rep in $(seq "$REPS"); do
    for v in $VARIANTS; do run "$v" "$rep"; done
done
mkdir -p bench/results
python3 - "$TMP/rows.jsonl" "$OUT" "$VALUE" "$PROTO" "$VARIANTS" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
variants = sys.argv[5].split()
out = {"kernel": os.uname().release, "protocol": sys.argv[4], "value_bytes": int(sys.argv[3]),
       "workload": os.environ.get("WORKLOAD"), "runs": rows}
json.dump(out, open(sys.argv[2], "w"), indent=1)
print(f"kernel {out['kernel']}, {sys.argv[4]} GETs, value {sys.argv[3]} B, {len(rows)//len(variants)} reps (median [min-max])")
print("| server:client | server mode | client | achieved ops/s | p50 us | p99 us | server CPU | ops per server CPU-s | failed requests | misses |")
print("|---|---|---|---|---|---|---|---|---|---|")
for dp in variants:
    rs = [r for r in rows if r["variant"] == dp]
    def f(k, fmt="{:.0f}"):
        v = [r[k] for r in rs]
        return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}-{fmt.format(max(v))}]"
    mode = rs[0]["mode"] or "kernel sockets"
    cmode = rs[0]["client_mode"].split(": ", 1)[-1] if rs[0]["client_mode"] else "kernel UDP sockets"
    errs = sum(r["errors"] or 0 for r in rs)
    miss = max(r.get("miss_frac", 0) for r in rs)
    print(f"| {dp} | {mode} | {cmode} | {f('achieved_rps')} | {f('p50_us', '{:.1f}')} | {f('p99_us', '{:.1f}')} | {f('server_cpu_util', '{:.2f}')} | {f('ops_per_server_cpu_s')} | {errs} | {miss:.1%} |")
PY
