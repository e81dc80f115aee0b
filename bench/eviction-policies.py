#!/usr/bin/env python3
"""Eviction policies: hit ratios of granola-kv, Redis 7 and Valkey 9 under
the same policy, the same memory for data and the same request stream.

Each run starts one server on CPU 0, fresh (granola-kv `-t 1 -m 16
--conn-memory 8`, so 8 MiB for items; redis-server and valkey-server with
`maxmemory 8mb` and no persistence), and plays a cache-aside client on
CPU 1 (RESP2 over one socket, pipelines of 64; a small client of its
own, as redis-py's pipelines would make the run take half an hour): GET
a batch of keys, then SET the ones that missed. Keys are drawn from
1 000 000 keys by a Zipf law
(exponent 0.99, ranks shuffled over the key names). Values are 100
bytes that carry their key and a CRC-32, and every hit is checked: a
wrong byte counts in `wrong`.

Two request streams (the same seeded stream for every server):

- **zipf**: Zipf keys only;
- **zipf+scan**: a third of the requests are keys used once and never
  again (a scan, or a crawler), the rest as above: recency-based
  eviction keeps the one-off keys a while, frequency-based does not.

The first 200 000 requests warm the cache; the next 300 000 are counted.
Reported per run: the hit ratio, the keys the server held at the end
(DBSIZE), and the *policy efficiency*: the hit ratio over the best any
policy could get from that many keys (the most popular `held` keys of
the Zipf law; the one-off keys can never hit). Efficiency compares the
policies' choices whatever each server's bytes per key; keys held
compares the bytes per key. A key's first request is a miss under any
policy, so efficiency stays below 1.

    bench/eviction-policies.py --granola target/release/granola-kv \\
        --valkey PATH --reps 3 --out OUT.json

`--granola LABEL=PATH` more than once compares builds; `--policies` and
`--streams` (comma-separated) run a subset.
"""
import argparse, bisect, json, os, random, socket, statistics, subprocess, sys, time, zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from local_server import free_port, wait_ready  # noqa: E402
from resp import Replies, command  # noqa: E402

KEYS = 1_000_000
ZIPF_S = 0.99
WARM = 200_000
COUNTED = 300_000
BATCH = 64
VALUE_LEN = 100
POLICIES = ["allkeys-lru", "allkeys-lfu", "allkeys-random"]
STREAMS = ["zipf", "zipf+scan"]


def start(system, binary, policy, port):
    if system.startswith("granola-kv"):
        argv = [binary, "-t", "1", "-m", "16", "--conn-memory", "8", "-l", "127.0.0.1",
                "-p", "0", "--native-port", "0", "--resp-port", str(port),
                "--maxmemory-policy", policy]
    else:
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--maxmemory", "8mb", "--maxmemory-policy", policy]
    proc = subprocess.Popen(["taskset", "-c", "0"] + argv,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc


def zipf_cdf():
    weights = [1.0 / (r ** ZIPF_S) for r in range(1, KEYS + 1)]
    total = sum(weights)
    cdf, acc = [], 0.0
    for w in weights:
        acc += w / total
        cdf.append(acc)
    return cdf


def request_stream(kind, cdf, seed):
    """The key ids of WARM + COUNTED requests: 0..KEYS-1 are Zipf keys
    (already mapped through a shuffled rank), KEYS.. are one-off keys."""
    rng = random.Random(seed)
    names = list(range(KEYS))
    rng.shuffle(names)
    out, once = [], KEYS
    for _ in range(WARM + COUNTED):
        if kind == "zipf+scan" and rng.random() < 1 / 3:
            out.append(once)
            once += 1
        else:
            rank = bisect.bisect_left(cdf, rng.random())
            out.append(names[min(rank, KEYS - 1)])
    return out


def best_hit_ratio(cdf, held, kind):
    """The hit ratio of a cache holding the `held` most popular keys."""
    top = cdf[min(held, KEYS) - 1] if held > 0 else 0.0
    return top * (2 / 3 if kind == "zipf+scan" else 1.0)


def key_of(k):
    return b"key:%010d" % k


def value_of(k):
    head = key_of(k) + b":"
    body = head + bytes((k * 7 + i) & 0xFF for i in range(VALUE_LEN - len(head) - 4))
    return body + zlib.crc32(body).to_bytes(4, "little")


def play(port, stream):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    replies = Replies(sock)
    hits = counted = wrong = 0
    for start_i in range(0, len(stream), BATCH):
        batch = stream[start_i:start_i + BATCH]
        sock.sendall(b"".join(command(b"GET", key_of(k)) for k in batch))
        sets = []
        for i, k in enumerate(batch):
            v = replies.one()
            in_count = start_i + i >= WARM
            if v is None:
                sets.append(command(b"SET", key_of(k), value_of(k)))
            else:
                if v != value_of(k):
                    wrong += 1
                hits += in_count
            counted += in_count
        if sets:
            sock.sendall(b"".join(sets))
            for _ in sets:
                if replies.one() != b"OK":
                    sys.exit("a SET was refused")
    sock.sendall(command(b"DBSIZE"))
    held = int(replies.one())
    sock.close()
    return hits, counted, wrong, held


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--granola", action="append", default=[],
                    help="a granola-kv binary, or LABEL=PATH (more than once to compare)")
    ap.add_argument("--redis", default="redis-server")
    ap.add_argument("--valkey", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--streams", default=",".join(STREAMS))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    policies, stream_kinds = a.policies.split(","), a.streams.split(",")
    grans = [g.split("=", 1) if "=" in g else ["", g]
             for g in (a.granola or ["target/release/granola-kv"])]
    systems = [(f"granola-kv {label}".strip(), path) for label, path in grans]
    systems += [("Redis 7", a.redis), ("Valkey 9", a.valkey)]
    cdf = zipf_cdf()
    streams = {kind: request_stream(kind, cdf, 1) for kind in stream_kinds}
    os.sched_setaffinity(0, {1})
    runs = []
    for rep in range(a.reps):
        for kind in stream_kinds:
            for policy in policies:
                # Interleaved: a drifting machine drifts for every server.
                for system, binary in systems:
                    port = free_port()
                    proc = start(system, binary, policy, port)
                    try:
                        hits, counted, wrong, held = play(port, streams[kind])
                    finally:
                        proc.terminate()
                        proc.wait()
                    ratio = hits / counted
                    best = best_hit_ratio(cdf, held, kind)
                    run = dict(rep=rep, stream=kind, policy=policy, system=system,
                               hit_ratio=ratio, held=held, best=best,
                               efficiency=ratio / best if best else 0.0, wrong=wrong)
                    runs.append(run)
                    print(json.dumps(run), file=sys.stderr)
                    if wrong:
                        sys.exit(f"{system} returned {wrong} wrong values")
    cells = []
    for kind in stream_kinds:
        for policy in policies:
            for system, _ in systems:
                rs = [r for r in runs
                      if (r["stream"], r["policy"], r["system"]) == (kind, policy, system)]
                med = lambda f: statistics.median(r[f] for r in rs)
                span = lambda f: (min(r[f] for r in rs), max(r[f] for r in rs))
                cells.append(dict(stream=kind, policy=policy, system=system,
                                  hit_ratio=med("hit_ratio"), hit_ratio_range=span("hit_ratio"),
                                  held=med("held"), efficiency=med("efficiency"),
                                  efficiency_range=span("efficiency")))
    with open(a.out, "w") as f:
        json.dump(dict(keys=KEYS, zipf_s=ZIPF_S, warm=WARM, counted=COUNTED,
                       value_len=VALUE_LEN, item_memory_mib=8, runs=runs, cells=cells), f,
                  indent=1)
    print("| stream | policy | server | hit ratio (range) | keys held | efficiency (range) |")
    print("|---|---|---|---|---|---|")
    for c in cells:
        lo, hi = c["hit_ratio_range"]
        elo, ehi = c["efficiency_range"]
        print(f"| {c['stream']} | {c['policy']} | {c['system']} | {c['hit_ratio']:.3f} "
              f"({lo:.3f}–{hi:.3f}) | {c['held']:.0f} | {c['efficiency']:.3f} "
              f"({elo:.3f}–{ehi:.3f}) |")


if __name__ == "__main__":
    main()
