# Sourced by the benchmarks that count a server's user-space work with
# callgrind (request-instructions.sh, locked-instructions.sh), after
# bench/lib/server-cpu.sh (for `server_args` and RAW).
#
# `callgrind_requests BINARY TEST N PORT OUT [VALGRIND FLAGS...]` runs the
# server (granola-kv with `-t 1`; redis-server and valkey-server, told
# apart by their names, without persistence) under callgrind with OUT as
# its output file, sends 2000 warm-up requests of redis-benchmark -P 16
# -c 10 -t TEST, zeroes the counters, sends N more, dumps the counters
# and stops the server; DUMP is then the dump's file name.
callgrind_requests() {
    local bin=$1 test=$2 n=$3 port=$4 out=$5
    shift 5
    rm -f "$out"*
    server_args "$bin" "$port"
    valgrind --tool=callgrind "$@" --callgrind-out-file="$out" "$bin" "${ARGS[@]}" >/dev/null 2>&1 &
    local pid=$!
    for _ in $(seq 100); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.3
    done
    redis-benchmark -p "$port" -t "$test" -P 16 -n 2000 -c 10 -q >/dev/null 2>&1
    callgrind_control -z $pid >/dev/null 2>&1
    redis-benchmark -p "$port" -t "$test" -P 16 -n "$n" -c 10 -q >/dev/null 2>&1
    callgrind_control -d $pid >/dev/null 2>&1
    sleep 1
    kill $pid
    wait $pid 2>/dev/null || true
    DUMP=$(ls -t "$out".* | head -1)
}

# `per_request_runs MEASURE TESTS VARIANT...` calls `MEASURE LABEL BINARY
# TEST` for every test, and within it every `label=binary` variant; each
# call appends its row to RAW (see bench/lib/per_request_table.py).
per_request_runs() {
    local measure=$1 tests=$2 test v
    shift 2
    for test in $tests; do
        for v in "$@"; do
            "$measure" "${v%%=*}" "${v#*=}" "$test"
        done
    done
}

# `per_request_table UNIT FIELD VARIANTS`: RAW's rows as OUT (JSON) and a
# Markdown table, for N requests per cell.
per_request_table() {
    python3 bench/lib/per_request_table.py "$RAW" "$OUT" "$N" "$3" "$1" "$2"
}
