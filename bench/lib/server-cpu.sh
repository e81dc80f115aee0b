# Sourced by the benchmarks that read a server's CPU time from /proc
# (mget-cpu.sh, write-cpu.sh, hash-read-cpu.sh): RAW is a temporary file
# for their rows; the server whose PID is in PID is killed, and RAW
# removed, on exit; `cpu_ticks PID` is utime+stime in clock ticks, HZ
# ticks per second; `start_resp_server LABEL BINARY PORT [FLAGS...]`
# starts Redis or Valkey (LABEL redis, or the binary's name) or granola-kv
# (`-t 1 -m 1024`, RESP only, its FLAGS added) on CPU 0, sets PID and
# waits until it answers PING;
# `start_peer` (below) picks by LABEL.
RAW=$(mktemp)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -f "$RAW"' EXIT
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
# `server_args BINARY PORT` sets ARGS to what starts BINARY as a RESP
# server on PORT alone: redis-server and valkey-server (told by name)
# without persistence, granola-kv with one worker.
server_args() {
    case $(basename "$1") in
    redis-server* | valkey-server*)
        ARGS=(--port "$2" --bind 127.0.0.1 --save '' --appendonly no --protected-mode no) ;;
    *) ARGS=(-t 1 -l 127.0.0.1 -p 0 --native-port 0 --resp-port "$2") ;;
    esac
}
start_resp_server() {
    local label=$1 bin=$2 port=$3
    shift 3
    server_args "$bin" "$port"
    if [ "$label" = redis ]; then
        server_args redis-server "$port"
    fi
    if [ "${ARGS[0]}" = --port ]; then
        taskset -c 0 "$bin" "${ARGS[@]}" >/dev/null 2>&1 &
    else
        taskset -c 0 "$bin" "${ARGS[@]}" -m 1024 "$@" >/dev/null 2>&1 &
    fi
    PID=$!
    for _ in $(seq 100); do
        redis-cli -p "$port" PING >/dev/null 2>&1 && break
        sleep 0.05
    done
}

# `start_peer LABEL BINARY PORT`: like start_resp_server, for any peer: a
# LABEL starting with redis or valkey runs that server binary, anything
# else a granola-kv binary (`-t 1 -m 1024`, RESP only).
start_peer() {
    local label=$1 bin=$2 port=$3
    case $label in
    redis* | valkey*) start_resp_server redis "$bin" "$port" ;;
    *) start_resp_server granola "$bin" "$port" ;;
    esac
}
