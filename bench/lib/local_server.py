"""Helpers of the Python benchmarks that start servers on loopback."""
import json, os, socket, subprocess, sys, time


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_ready(port, proc):
    """Waits up to 10 s for `proc` to accept on `port`; exits if it dies."""
    for _ in range(400):
        if proc.poll() is not None:
            sys.exit(f"server on port {port} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return
        except OSError:
            time.sleep(0.025)
    sys.exit(f"server on port {port} did not start")


def start_cache(system, binary, port, limit_mib, policy="allkeys-lru"):
    """A cache server on CPU 0 serving RESP on `port` with `maxmemory`
    `limit_mib` and eviction `policy`: granola-kv (a `system` whose name
    starts with it) with one worker and 8 MiB of connection memory in
    the limit, else redis-server or valkey-server without persistence."""
    if system.startswith("granola-kv"):
        args = [binary, "-t", "1", "--port", "0", "--native-port", "0",
                "--resp-port", str(port), "-m", str(limit_mib), "--conn-memory", "8",
                "--maxmemory-policy", policy]
    else:
        args = [binary, "--port", str(port), "--save", "", "--appendonly", "no",
                "--maxmemory", f"{limit_mib}mb", "--maxmemory-policy", policy]
    proc = subprocess.Popen(["taskset", "-c", "0"] + args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc


def add_cache_args(ap):
    """The servers a cache comparison runs: `--granola LABEL=PATH` (more
    than once to compare builds), `--redis`, `--valkey`."""
    ap.add_argument("--granola", action="append", default=[],
                    help="LABEL=PATH of a granola-kv binary (more than once to compare)")
    ap.add_argument("--redis", default="redis-server")
    ap.add_argument("--valkey", required=True)


def cache_systems(a):
    """(name, binary) of each server `add_cache_args` named."""
    grans = [g.split("=", 1) for g in (a.granola or ["granola-kv=target/release/granola-kv"])]
    systems = [(f"granola-kv {label}", path) for label, path in grans]
    return systems + [("Redis 7", a.redis), ("Valkey 9", a.valkey)]


def interleaved_runs(systems, sizes, reps, limit_mib, one_run, size_field):
    """`one_run(port, pid, size)` on a fresh server per run: every size on
    every server, repeated `reps` times, the servers interleaved. Each
    result gets `rep`, `system` and the size under `size_field`; a result
    whose `wrong` count is not 0 stops the benchmark."""
    os.sched_setaffinity(0, {1})
    runs = []
    for rep in range(reps):
        for size in sizes:
            for system, binary in systems:
                port = free_port()
                proc = start_cache(system, binary, port, limit_mib)
                try:
                    r = one_run(port, proc.pid, size)
                finally:
                    proc.terminate()
                    proc.wait()
                r.update({"rep": rep, "system": system, size_field: size})
                runs.append(r)
                print(json.dumps(r), file=sys.stderr)
                if r["wrong"]:
                    sys.exit(f"{system} returned {r['wrong']} wrong values")
    return runs


def rss_bytes(pid):
    """The resident size of process `pid` (VmRSS), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def server_cpu_ns(pid):
    """The CPU time of process `pid`'s threads so far, in ns (their run
    time in /proc/PID/task/*/schedstat: softirq work done in their context
    included)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/schedstat") as f:
            total += int(f.read().split()[0])
    return total
