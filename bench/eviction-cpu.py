#!/usr/bin/env python3
"""What eviction costs the server: SETs of new keys into a full granola-kv,
server CPU per request, builds compared side by side.

Each run starts a granola-kv build on CPU 0 (`-t 1 -m 16 --conn-memory 8`,
8 MiB for items, `--maxmemory-policy` as given), fills it past its limit,
then runs `redis-benchmark -t set -r 1000000 -d 100 -P 16 -c 50` on CPU 1:
nearly every SET stores a new key and evicts one. Runs alternate between
the builds (a drifting machine drifts for all) and repeat `--reps` times.
Server CPU is its threads' run time (/proc/PID/task/*/schedstat).

    bench/eviction-cpu.py --granola before=PATH --granola after=PATH \\
        --policies allkeys-lfu,allkeys-lru --reps 5 --out OUT.json
"""
import argparse, json, os, statistics, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from local_server import free_port, server_cpu_ns, wait_ready  # noqa: E402

REQUESTS = 500_000


def bench(port, n):
    out = subprocess.run(["taskset", "-c", "1", "redis-benchmark", "-p", str(port), "-t", "set",
                          "-r", "1000000", "-d", "100", "-P", "16", "-c", "50", "-n", str(n),
                          "--csv"], check=True, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if l.startswith('"SET"')][0]
    return float(line.split(",")[1].strip('"'))


def one_run(binary, policy):
    port = free_port()
    proc = subprocess.Popen(["taskset", "-c", "0", binary, "-t", "1", "-m", "16",
                             "--conn-memory", "8", "-p", "0", "--native-port", "0",
                             "--resp-port", str(port), "--maxmemory-policy", policy],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        bench(port, 200_000)  # past the limit: every later SET of a new key evicts
        cpu0 = server_cpu_ns(proc.pid)
        rps = bench(port, REQUESTS)
        cpu_ns = (server_cpu_ns(proc.pid) - cpu0) / REQUESTS
    finally:
        proc.terminate()
        proc.wait()
    return dict(rps=rps, cpu_ns_per_req=cpu_ns)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--granola", action="append", required=True, help="LABEL=PATH")
    ap.add_argument("--policies", default="allkeys-lfu,allkeys-lru")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    builds = [g.split("=", 1) for g in a.granola]
    runs = []
    for rep in range(a.reps):
        for policy in a.policies.split(","):
            for label, path in builds:
                r = one_run(path, policy)
                r.update(rep=rep, build=label, policy=policy)
                runs.append(r)
                print(json.dumps(r), file=sys.stderr)
    cells = []
    for policy in a.policies.split(","):
        for label, _ in builds:
            rs = [r for r in runs if (r["build"], r["policy"]) == (label, policy)]
            cells.append(dict(policy=policy, build=label,
                              rps=statistics.median(r["rps"] for r in rs),
                              cpu_ns=statistics.median(r["cpu_ns_per_req"] for r in rs),
                              cpu_ns_range=(min(r["cpu_ns_per_req"] for r in rs),
                                            max(r["cpu_ns_per_req"] for r in rs))))
    with open(a.out, "w") as f:
        json.dump(dict(requests=REQUESTS, runs=runs, cells=cells), f, indent=1)
    print("| policy | build | SET req/s | server CPU ns/req (range) |")
    print("|---|---|---|---|")
    for c in cells:
        lo, hi = c["cpu_ns_range"]
        print(f"| {c['policy']} | {c['build']} | {c['rps']:.0f} | {c['cpu_ns']:.0f} "
              f"({lo:.0f}–{hi:.0f}) |")


if __name__ == "__main__":
    main()
