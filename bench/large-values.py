#!/usr/bin/env python3
"""Values from 256 KiB to a few MiB: how much of the memory limit they
fill before the first eviction, and what writing them costs the server,
beside Redis 7 and Valkey 9.

Every server gets `maxmemory` 64 MiB and `allkeys-lru` (granola-kv: `-m 64
--conn-memory 8`, so 56 MiB for items; Redis and Valkey count everything
in their 64 MiB), on CPU 0 with the client on CPU 1. Each run starts a
fresh server and, for one value size (`--sizes`):

1. SETs values under new keys, one per round trip, until the server
   first evicts: the payload stored then ÷ maxmemory is how much of its
   limit the values filled, beside its own `used_memory` just before;
2. SETs three limits' worth more (each evicting older values): the
   server's CPU time per MB written (its threads' run time) and the
   write rate;
3. reads every key back: each value carries its key and a CRC-32, and a
   wrong one stops the run.

The server's resident size (VmRSS) is sampled after every SET.
`--granola LABEL=PATH` may be given more than once (before and after a
change); runs are interleaved over the servers and repeated `--reps`
times. Writes JSON (every run, and medians per cell) and prints a
Markdown table.

    bench/large-values.py --granola after=target/release/granola-kv \\
        --valkey PATH --reps 3 --out OUT.json
"""
import argparse, json, os, statistics, sys, time, zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from local_server import (  # noqa: E402
    add_cache_args, cache_systems, interleaved_runs, rss_bytes, server_cpu_ns)
from resp import Conn, command  # noqa: E402

LIMIT_MIB = 64
SIZES = [300 << 10, 600 << 10, 1100 << 10, 2100 << 10, 3 << 20]


def value_of(i, length):
    head = b"v:%d:" % i
    filler = bytes(range(256)) * (length // 256 + 1)
    body = head + filler[len(head) % 256:][: length - len(head) - 4]
    return body + zlib.crc32(body).to_bytes(4, "little")


def one_run(port, pid, size):
    c = Conn(port)
    peak = 0
    set_one = lambda i: c.run([command(b"SET", b"v:%d" % i, value_of(i, size))])
    # 1. Until the first eviction.
    written = 0
    used_before = 0
    while True:
        used = c.used_memory()
        set_one(written)
        written += 1
        peak = max(peak, rss_bytes(pid))
        if c.evicted() > 0:
            break
        used_before = used
    stored_at_first_eviction = written - 1
    # 2. Three limits' worth more.
    more = 3 * (LIMIT_MIB << 20) // size
    cpu0, t0 = server_cpu_ns(pid), time.perf_counter()
    for i in range(written, written + more):
        set_one(i)
        peak = max(peak, rss_bytes(pid))
    elapsed, cpu = time.perf_counter() - t0, server_cpu_ns(pid) - cpu0
    written += more
    # 3. Every value read back and checked.
    held = wrong = 0
    for i in range(written):
        v = c.run([command(b"GET", b"v:%d" % i)])[0]
        if v is not None:
            held += 1
            wrong += v != value_of(i, size)
    c.sock.close()
    mb = more * size / 1e6
    return dict(stored_at_first_eviction=stored_at_first_eviction,
                used_memory_before=used_before, held_at_end=held, peak_rss=peak,
                cpu_ms_per_mb=cpu / 1e6 / mb, write_mb_s=mb / elapsed, wrong=wrong)


def main():
    ap = argparse.ArgumentParser()
    add_cache_args(ap)
    ap.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    systems = cache_systems(a)
    sizes = [int(s) for s in a.sizes.split(",")]
    limit = LIMIT_MIB << 20
    runs = interleaved_runs(systems, sizes, a.reps, LIMIT_MIB, one_run, "size")
    cells = []
    for size in sizes:
        for system, _ in systems:
            rs = [r for r in runs if (r["system"], r["size"]) == (system, size)]
            med = lambda f: statistics.median(r[f] for r in rs)
            filled = [r["stored_at_first_eviction"] * size / limit for r in rs]
            cells.append(dict(
                system=system, size=size, filled=statistics.median(filled),
                filled_range=(min(filled), max(filled)),
                used_memory=med("used_memory_before") / limit,
                held=med("held_at_end") * size / limit, peak_rss_mib=med("peak_rss") / 2**20,
                cpu_ms_per_mb=med("cpu_ms_per_mb"),
                cpu_range=(min(r["cpu_ms_per_mb"] for r in rs),
                           max(r["cpu_ms_per_mb"] for r in rs)),
                write_mb_s=med("write_mb_s")))
    with open(a.out, "w") as f:
        json.dump(dict(limit_mib=LIMIT_MIB, runs=runs, cells=cells), f, indent=1)
    print("| value | server | payload at first eviction ÷ limit (range) "
          "| used_memory then ÷ limit | payload held at the end ÷ limit | peak RSS MiB "
          "| server CPU ms per MB written (range) | write MB/s |")
    print("|---|---|---|---|---|---|---|---|")
    for c in cells:
        print(f"| {c['size'] / 1024:.0f} KiB | {c['system']} | {c['filled']:.2f} "
              f"({c['filled_range'][0]:.2f}–{c['filled_range'][1]:.2f}) "
              f"| {c['used_memory']:.2f} | {c['held']:.2f} | {c['peak_rss_mib']:.0f} "
              f"| {c['cpu_ms_per_mb']:.2f} ({c['cpu_range'][0]:.2f}–{c['cpu_range'][1]:.2f}) "
              f"| {c['write_mb_s']:.0f} |")


if __name__ == "__main__":
    main()
