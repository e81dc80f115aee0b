#!/usr/bin/env bash
# Locked (`lock`-prefixed) instructions executed per pipelined RESP
# request: the atomic read-modify-writes each command pays (a locked add
# costs 1.2-2.3 ns more than a plain one on this machine). Counted
# exactly by callgrind with `--dump-instr=yes`: every instruction's
# executions, summed over the addresses objdump shows with a `lock`
# prefix (the implicit lock of `xchg`, a mutex's release, is not
# counted). The server (granola-kv with `-t 1`; redis-server and
# valkey-server, told apart by their names) runs under callgrind; 2000
# warm-up requests, the counters zeroed, N requests of redis-benchmark
# -P 16 -c 10 -t TEST, the counters dumped. Also prints the five source
# places that lock most per request.
#
#   bench/locked-instructions.sh N "set get sadd" before=old/granola-kv after=target/release/granola-kv
#       -> bench/results/locked-instructions-DATE.json and a Markdown table
set -euo pipefail
cd "$(dirname "$0")/.."
N=$1 TESTS=$2
shift 2
PORT=16497
OUT=${OUT:-bench/results/locked-instructions-$(date -u +%F).json}
# server_args (the rest of it is for /proc CPU readers; its RAW is ours).
. bench/lib/server-cpu.sh
. bench/lib/callgrind.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" "$RAW"' EXIT

one() { # label binary test
    local label=$1 bin=$2 test=$3 out=$TMP/cg.out
    callgrind_requests "$bin" "$test" "$N" $PORT "$out" --dump-instr=yes
    objdump -d --no-show-raw-insn "$bin" | awk '$2 == "lock" {sub(":", "", $1); print $1}' >"$TMP/locks"
    python3 - "$DUMP" "$TMP/locks" "$N" "$bin" "$label" "$test" >>"$RAW" <<'PY'
import collections, subprocess, sys
dump, locks_file, n, binary, label, test = sys.argv[1:]
n = int(n)
locks = {int(a, 16) for a in open(locks_file)}
counts = collections.Counter()
obj, cur, after_call = "", 0, False
# Object names are given once, as `ob=(id) name` or `cob=(id) name`, and
# then by id alone.
names = {}

def object_name(spec):
    ident, _, name = spec.strip().partition(" ")
    if name:
        names[ident] = name
    return names.get(ident, "")

def address(token, cur):
    if token == "*":
        return cur
    if token[0] == "+":
        return cur + int(token[1:], 0)
    if token[0] == "-":
        return cur - int(token[1:], 0)
    return int(token, 16)

# Cost lines are "address line cost" with callgrind's relative
# compression; the line after a `calls=` line is the call's inclusive
# cost, not the instruction's own.
for line in open(dump):
    if line.startswith("ob="):
        obj = object_name(line[3:])
    elif line.startswith("cob="):
        object_name(line[4:])
    elif line.startswith("calls="):
        after_call = True
    elif line[:1] in "0123456789+-*":
        parts = line.split()
        cur = address(parts[0], cur)
        if after_call:
            after_call = False
        elif obj.endswith("/" + binary.rsplit("/", 1)[-1]) and cur in locks:
            counts[cur] += int(parts[-1])
total = sum(counts.values()) / n
places = []
for a, c in counts.most_common(5):
    where = subprocess.run(["addr2line", "-i", "-f", "-C", "-e", binary, hex(a)],
                           capture_output=True, text=True).stdout.split("\n")
    # The innermost frame outside the standard library.
    frames = [where[i] for i in range(0, len(where) - 1, 2)
              if "/rustc/" not in where[i + 1] and "library/" not in where[i + 1]]
    places.append(f"{c / n:.2f} {frames[0] if frames else where[0]}")
print(f"{label}\t{test}\t{total:.2f}\t" + "; ".join(places))
PY
}

per_request_runs one "$TESTS" "$@"
per_request_table "lock-prefixed instructions executed per request" locked "$*"
