#!/usr/bin/env python3
"""Memory freed by deletes, reused by values of another size: how full a
cache is when it first evicts, and what it keeps, beside Redis 7 and
Valkey 9.

Every server gets `maxmemory` 64 MiB and `allkeys-lru` (granola-kv: `-m 64
--conn-memory 8`, so 56 MiB for items; Redis and Valkey count everything
in their 64 MiB). Each run, on CPU 0 with the client on CPU 1:

1. SETs 1000-byte values under new keys until the server first evicts;
2. deletes every other one of them, so the free memory is scattered
   over everything the first values took;
3. SETs values of another size (`--sizes`, 200 bytes and 3 MiB by
   default) under new keys, as much as the limit again, in pipelined
   batches (one value per batch when it is over 64 KiB).

It records the payload (value bytes of the keys stored) at the moment the
server first evicts in step 3 (÷ maxmemory: how much of the limit it
used before evicting) and the server's own `used_memory` just before
(granola-kv's counts what its item share bounds: stored items and the
index), the payload it holds at the end, the server's peak
resident size (VmRSS, sampled after every batch) and step 3's write rate (the SET batches' round trips only).
Every value carries its key and a CRC-32; every value read back at the
end is checked, and a wrong one stops the run.

`--granola LABEL=PATH` may be given more than once (before and after a
change); runs are interleaved over the servers and repeated `--reps`
times. Writes JSON (every run, and medians per cell) and prints a
Markdown table.

    bench/freed-memory-reuse.py --granola after=target/release/granola-kv \\
        --valkey PATH --reps 3 --out OUT.json
"""
import argparse, json, os, statistics, sys, time, zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from local_server import add_cache_args, cache_systems, interleaved_runs, rss_bytes  # noqa: E402
from resp import Conn, command  # noqa: E402

LIMIT_MIB = 64
FIRST_LEN = 1000
BATCH_BYTES = 256 << 10


def key_of(tag, i):
    return b"%s:%d" % (tag, i)


def value_of(key, length):
    head = key + b":"
    filler = bytes(range(256)) * (length // 256 + 1)
    body = head + filler[len(head) % 256:][: length - len(head) - 4]
    return body + zlib.crc32(body).to_bytes(4, "little")


def one_run(port, pid, new_len):
    c = Conn(port)
    peak = 0
    # 1. 1000-byte values until the first eviction.
    first = 0
    per_batch = BATCH_BYTES // FIRST_LEN
    while c.evicted() == 0:
        c.run([command(b"SET", key_of(b"a", first + j), value_of(key_of(b"a", first + j),
                                                                  FIRST_LEN))
               for j in range(per_batch)])
        first += per_batch
        peak = max(peak, rss_bytes(pid))
    # 2. Every other one deleted.
    for lo in range(0, first, 2 * per_batch):
        c.run([command(b"DEL", key_of(b"a", i)) for i in range(lo, min(lo + 2 * per_batch, first), 2)])
    # Which of the first values are still stored (the first eviction took some).
    kept_first = set()
    for lo in range(1, first, 2 * per_batch):
        keys = list(range(lo, min(lo + 2 * per_batch, first), 2))
        for i, v in zip(keys, c.run([command(b"EXISTS", key_of(b"a", i)) for i in keys])):
            if v == b"1":
                kept_first.add(i)
    payload = len(kept_first) * FIRST_LEN
    evicted_before = c.evicted()
    # 3. Values of the new size, as much as the limit again.
    per_batch = max(1, BATCH_BYTES // new_len)
    total = (LIMIT_MIB << 20) // new_len
    at_first_eviction = used_at_first_eviction = None
    written = 0
    elapsed = 0.0
    while written < total:
        n = min(per_batch, total - written)
        used = c.used_memory() if at_first_eviction is None else None
        t0 = time.perf_counter()
        c.run([command(b"SET", key_of(b"b", written + j), value_of(key_of(b"b", written + j),
                                                                   new_len))
               for j in range(n)])
        elapsed += time.perf_counter() - t0
        if at_first_eviction is None and c.evicted() > evicted_before:
            at_first_eviction = payload
            used_at_first_eviction = used
        payload += n * new_len
        written += n
        peak = max(peak, rss_bytes(pid))
    # What it holds at the end, every value checked.
    held = 0
    wrong = 0
    checks = [(b"a", i, FIRST_LEN) for i in sorted(kept_first)] + \
        [(b"b", i, new_len) for i in range(written)]
    step = max(1, BATCH_BYTES // new_len)
    for lo in range(0, len(checks), step):
        part = checks[lo:lo + step]
        for (tag, i, length), v in zip(part, c.run([command(b"GET", key_of(tag, i))
                                                    for tag, i, length in part])):
            if v is not None:
                held += length
                wrong += v != value_of(key_of(tag, i), length)
    c.sock.close()
    return dict(first_values=first, first_eviction_payload=at_first_eviction,
                first_eviction_used_memory=used_at_first_eviction,
                held_payload=held, peak_rss=peak, write_mb_s=written * new_len / elapsed / 1e6,
                wrong=wrong)


def main():
    ap = argparse.ArgumentParser()
    add_cache_args(ap)
    ap.add_argument("--sizes", default="200,3145728")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    systems = cache_systems(a)
    sizes = [int(s) for s in a.sizes.split(",")]
    limit = LIMIT_MIB << 20
    runs = interleaved_runs(systems, sizes, a.reps, LIMIT_MIB, one_run, "new_len")
    cells = []
    for new_len in sizes:
        for system, _ in systems:
            rs = [r for r in runs if (r["system"], r["new_len"]) == (system, new_len)]
            first = [r["first_eviction_payload"] for r in rs]
            med = lambda f: statistics.median(r[f] for r in rs)
            cells.append(dict(
                system=system, new_len=new_len,
                first_eviction=(statistics.median(first) / limit
                                if None not in first else None),
                first_eviction_range=(min(first) / limit, max(first) / limit)
                if None not in first else None,
                used_memory=(statistics.median(r["first_eviction_used_memory"] for r in rs)
                             / limit if None not in first else None),
                held=med("held_payload") / limit, peak_rss_mib=med("peak_rss") / 2**20,
                write_mb_s=med("write_mb_s")))
    with open(a.out, "w") as f:
        json.dump(dict(limit_mib=LIMIT_MIB, first_len=FIRST_LEN, runs=runs, cells=cells), f,
                  indent=1)
    print("| new values | server | payload at first eviction ÷ limit (range) "
          "| its used_memory ÷ limit | payload held at the end ÷ limit | peak RSS MiB "
          "| write MB/s |")
    print("|---|---|---|---|---|---|---|")
    for c in cells:
        fe = ("never" if c["first_eviction"] is None else
              f"{c['first_eviction']:.2f} ({c['first_eviction_range'][0]:.2f}–"
              f"{c['first_eviction_range'][1]:.2f})")
        um = "–" if c["used_memory"] is None else f"{c['used_memory']:.2f}"
        print(f"| {c['new_len']} B | {c['system']} | {fe} | {um} | {c['held']:.2f} "
              f"| {c['peak_rss_mib']:.0f} | {c['write_mb_s']:.0f} |")


if __name__ == "__main__":
    main()
