#!/usr/bin/env python3
"""Peak memory of LCS on two random 10 kB strings: granola-kv against Redis.

Starts each server itself (granola-kv -m 1024 -t 1, redis-server without
persistence) on a free port, stores the two strings, runs `LCS a b LEN`,
and samples the server's RSS every 5 ms while it runs (VmHWM too, the
kernel's own peak). Writes JSON.

    bench/lcs-memory.py target/release/granola-kv OUT.json
"""
import json, os, random, socket, subprocess, sys, time

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def resp(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)

def status(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0

def measure(argv, port, a, b):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                s = socket.create_connection(("127.0.0.1", port)); break
            except OSError:
                time.sleep(0.02)
        s.sendall(resp(b"MSET", b"a", a, b"b", b)); s.recv(100)
        before = status(proc.pid, "VmRSS")
        t0 = time.time(); s.sendall(resp(b"LCS", b"a", b"b", b"LEN"))
        s.settimeout(0.005); peak = before; reply = b""
        while not reply.endswith(b"\r\n"):
            peak = max(peak, status(proc.pid, "VmRSS"))
            try:
                reply += s.recv(100)
            except socket.timeout:
                pass
        secs = time.time() - t0
        return {"reply": reply.decode().strip(), "seconds": round(secs, 3), "rss_before_kb": before,
                "rss_peak_kb": peak, "vm_hwm_kb": status(proc.pid, "VmHWM")}
    finally:
        proc.kill(); proc.wait()

def main():
    granola, out = sys.argv[1], sys.argv[2]
    random.seed(1)
    a = bytes(random.choice(b"acgt") for _ in range(10000))
    b = bytes(random.choice(b"acgt") for _ in range(10000))
    p1, p2 = free_port(), free_port()
    rows = {
        "granola-kv": measure([granola, "-p", "0", "--native-port", "0", "--resp-port", str(p1), "-t", "1", "-m", "1024"], p1, a, b),
        "redis": measure(["redis-server", "--port", str(p2), "--save", "", "--appendonly", "no"], p2, a, b),
    }
    doc = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kernel": os.uname().release,
           "command": " ".join(sys.argv), "strings": "two random 10000-byte strings over acgt", "servers": rows}
    json.dump(doc, open(out, "w"), indent=1)
    print("| server | reply | seconds | RSS before (kB) | RSS peak (kB) | VmHWM (kB) |\n|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['reply']} | {r['seconds']} | {r['rss_before_kb']} | {r['rss_peak_kb']} | {r['vm_hwm_kb']} |")

main()
