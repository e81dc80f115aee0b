"""Helpers of the Python benchmarks that start servers on loopback."""
import os, socket, sys, time


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


def server_cpu_ns(pid):
    """The CPU time of process `pid`'s threads so far, in ns (their run
    time in /proc/PID/task/*/schedstat: softirq work done in their context
    included)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/schedstat") as f:
            total += int(f.read().split()[0])
    return total
