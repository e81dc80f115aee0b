# Sourced by the benchmarks that read a server's CPU time from /proc
# (mget-cpu.sh, write-cpu.sh): RAW is a temporary file for their rows; the
# server whose PID is in PID is killed, and RAW removed, on exit;
# `cpu_ticks PID` is utime+stime in clock ticks, HZ ticks per second.
RAW=$(mktemp)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -f "$RAW"' EXIT
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
