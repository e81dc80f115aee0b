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
import argparse, json, os, socket, statistics, subprocess, sys, time, zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from local_server import free_port, wait_ready  # noqa: E402
from resp import Replies, command  # noqa: E402

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


class Conn:
    """One RESP2 connection: pipelined commands, replies read in order."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.replies = Replies(self.sock)

    def run(self, commands):
        self.sock.sendall(b"".join(commands))
        return [self.replies.one() for _ in commands]

    def info_field(self, section, field):
        info = self.run([command(b"INFO", section)])[0].decode()
        return next(int(l.split(":")[1]) for l in info.splitlines()
                    if l.startswith(field + ":"))

    def evicted(self):
        return self.info_field(b"stats", "evicted_keys")

    def used_memory(self):
        return self.info_field(b"memory", "used_memory")


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def start(system, binary, port):
    if system.startswith("granola-kv"):
        args = [binary, "-t", "1", "--port", "0", "--native-port", "0",
                "--resp-port", str(port), "-m", str(LIMIT_MIB), "--conn-memory", "8",
                "--maxmemory-policy", "allkeys-lru"]
    else:
        args = [binary, "--port", str(port), "--save", "", "--appendonly", "no",
                "--maxmemory", f"{LIMIT_MIB}mb", "--maxmemory-policy", "allkeys-lru"]
    proc = subprocess.Popen(["taskset", "-c", "0"] + args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc


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
    ap.add_argument("--granola", action="append", default=[],
                    help="LABEL=PATH of a granola-kv binary (more than once to compare)")
    ap.add_argument("--redis", default="redis-server")
    ap.add_argument("--valkey", required=True)
    ap.add_argument("--sizes", default="200,3145728")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    grans = [g.split("=", 1) for g in (a.granola or ["granola-kv=target/release/granola-kv"])]
    systems = [(f"granola-kv {label}", path) for label, path in grans]
    systems += [("Redis 7", a.redis), ("Valkey 9", a.valkey)]
    sizes = [int(s) for s in a.sizes.split(",")]
    os.sched_setaffinity(0, {1})
    limit = LIMIT_MIB << 20
    runs = []
    for rep in range(a.reps):
        for new_len in sizes:
            for system, binary in systems:
                port = free_port()
                proc = start(system, binary, port)
                try:
                    r = one_run(port, proc.pid, new_len)
                finally:
                    proc.terminate()
                    proc.wait()
                r.update(rep=rep, system=system, new_len=new_len)
                runs.append(r)
                print(json.dumps(r), file=sys.stderr)
                if r["wrong"]:
                    sys.exit(f"{system} returned {r['wrong']} wrong values")
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
