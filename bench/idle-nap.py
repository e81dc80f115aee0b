#!/usr/bin/env python3
"""Idle naps (granola_net::nap): what they change for the client and the
server, uncapped, beside Redis 7.

Starts three servers on CPU 0, each on a free port: granola-kv with naps
off (`--idle-nap-us 0`, the default), granola-kv with `--idle-nap-us 50`,
and redis-server without persistence; both granola-kv runs are `-t 1 -m
1024`, RESP only, on `--datapath` (epoll by default). Then, for every
repetition, shape (pipeline depth and connections) and test, runs
redis-benchmark on CPU 1 against each server in turn (interleaved, so a
machine that drifts drifts for all three) and records:

- requests per second (redis-benchmark's own figure);
- the client's CPU per request (its user + system time, from rusage);
- the server's CPU per request (its threads' run time in
  /proc/PID/task/*/schedstat, softirq work in its context included);
- how often the server blocked, per thousand requests (its threads'
  voluntary context switches): each such block is a wake-up some client
  paid for, or the end of a nap.

Writes JSON (every run, and medians per cell) and prints a Markdown table.

    bench/idle-nap.py --granola target/release/granola-kv --reps 3 --out OUT.json
"""
import argparse, json, os, resource, socket, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from local_server import free_port, server_cpu_ns, wait_ready  # noqa: E402

SHAPES = [  # (pipeline, connections, requests)
    (1, 1, 20_000),
    (16, 1, 200_000),
    (1, 50, 200_000),
    (16, 50, 1_000_000),
]


def blocks(pid):
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
    return total


def client_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def bench(port, test, pipeline, conns, n):
    argv = ["taskset", "-c", "1", "redis-benchmark", "-p", str(port), "-t", test,
            "-P", str(pipeline), "-c", str(conns), "-n", str(n), "-q", "--csv"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        cells = [c.strip('"') for c in line.split(",")]
        if cells[0].lower() == test:
            return float(cells[1])
    sys.exit(f"no result in redis-benchmark's output: {out!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--granola", default="target/release/granola-kv")
    ap.add_argument("--redis", default="redis-server")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tests", default="get,incr")
    ap.add_argument("--out", required=True)
    ap.add_argument("--datapath", default="epoll",
                    help="granola-kv's event loop in both of its runs (epoll or uring)")
    a = ap.parse_args()

    variants = {}
    for label, argv in [
        ("naps off", [a.granola, "-t", "1", "-m", "1024", "-l", "127.0.0.1", "-p", "0",
                      "--native-port", "0", "--idle-nap-us", "0", "--datapath", a.datapath]),
        ("naps on", [a.granola, "-t", "1", "-m", "1024", "-l", "127.0.0.1", "-p", "0",
                     "--native-port", "0", "--idle-nap-us", "50", "--datapath", a.datapath]),
        ("redis", [a.redis, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                   "--protected-mode", "no"]),
    ]:
        port = free_port()
        port_args = ["--port", str(port)] if label == "redis" else ["--resp-port", str(port)]
        proc = subprocess.Popen(["taskset", "-c", "0"] + argv + port_args,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_ready(port, proc)
        variants[label] = (proc, port)
    runs = []
    try:
        for label, (proc, port) in variants.items():
            # The GET key exists; warm-up.
            bench(port, "set", 16, 10, 20_000)
        for rep in range(a.reps):
            for pipeline, conns, n in SHAPES:
                for test in a.tests.split(","):
                    for label, (proc, port) in variants.items():
                        r0, b0, c0 = server_cpu_ns(proc.pid), blocks(proc.pid), client_cpu_s()
                        rps = bench(port, test, pipeline, conns, n)
                        r1, b1, c1 = server_cpu_ns(proc.pid), blocks(proc.pid), client_cpu_s()
                        runs.append({
                            "variant": label, "test": test, "pipeline": pipeline,
                            "conns": conns, "requests": n, "rep": rep, "rps": rps,
                            "server_us_per_req": (r1 - r0) / 1e3 / n,
                            "client_us_per_req": (c1 - c0) * 1e6 / n,
                            "server_blocks_per_1k": (b1 - b0) * 1e3 / n,
                        })
                        print(json.dumps(runs[-1]), file=sys.stderr)
    finally:
        for proc, _ in variants.values():
            proc.kill()
            proc.wait()

    def cell(variant, test, p, c, field):
        return statistics.median(
            r[field] for r in runs if (r["variant"], r["test"], r["pipeline"], r["conns"]) == (variant, test, p, c))

    summary = []
    rows = ["| test | -P / -c | req/s naps off | naps on | Redis 7 | on ÷ off (range of reps) | on ÷ Redis | client µs/req off / on / Redis | server µs/req off / on / Redis | server blocks per 1k req off / on / Redis |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for test in a.tests.split(","):
        for p, c, _ in SHAPES:
            med = {v: {f: cell(v, test, p, c, f) for f in ("rps", "client_us_per_req", "server_us_per_req", "server_blocks_per_1k")} for v in variants}
            per_rep = [
                next(r["rps"] for r in runs if (r["variant"], r["test"], r["pipeline"], r["conns"], r["rep"]) == ("naps on", test, p, c, k))
                / next(r["rps"] for r in runs if (r["variant"], r["test"], r["pipeline"], r["conns"], r["rep"]) == ("naps off", test, p, c, k))
                for k in range(a.reps)
            ]
            on_off = statistics.median(per_rep)
            on_redis = med["naps on"]["rps"] / med["redis"]["rps"]
            summary.append({"test": test, "pipeline": p, "conns": c, "medians": med,
                            "naps_on_over_off": on_off, "naps_on_over_off_range": [min(per_rep), max(per_rep)],
                            "naps_on_over_redis": on_redis})
            f3 = lambda f, fmt: " / ".join(fmt.format(med[v][f]) for v in variants)
            rows.append(
                f"| {test.upper()} | {p} / {c} | {med['naps off']['rps']:.0f} | {med['naps on']['rps']:.0f} | {med['redis']['rps']:.0f} "
                f"| {on_off:.2f} ({min(per_rep):.2f}–{max(per_rep):.2f}) | {on_redis:.2f} "
                f"| {f3('client_us_per_req', '{:.2f}')} | {f3('server_us_per_req', '{:.2f}')} | {f3('server_blocks_per_1k', '{:.1f}')} |")
    doc = {
        "what": "idle naps: naps off vs on vs Redis 7, uncapped, server on CPU 0, redis-benchmark on CPU 1",
        "command": " ".join(sys.argv),
        "machine": {"cpus": os.cpu_count(), "kernel": os.uname().release},
        "runs": runs,
        "summary": summary,
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
