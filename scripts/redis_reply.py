"""Asks a running redis-server one thing and reads its reply, for the
scripts that generate granola-kv's tables from Redis (key-specs.py,
command-docs.py)."""
import socket


def ask(port, *words):
    """Sends `words` (several commands: a list of lists) to the server on
    `port`; returns the connection's reader for `read`."""
    s = socket.create_connection(("127.0.0.1", port))
    for command in words:
        request = b"*%d\r\n" % len(command)
        for w in command:
            w = w.encode()
            request += b"$%d\r\n%s\r\n" % (len(w), w)
        s.sendall(request)
    return s.makefile("rb")


def read(f):
    """One reply, typed: (kind, value) with kind one of simple, error, int,
    bulk, null, array, set, map (a map's keys and values in turn)."""
    line = f.readline()
    t, b = line[:1], line[1:-2]
    if t in (b"+", b"-"):
        return ("simple" if t == b"+" else "error", b.decode())
    if t == b":":
        return ("int", int(b))
    if t == b"$":
        n = int(b)
        return ("null", None) if n < 0 else ("bulk", f.read(n + 2)[:-2].decode())
    if t in (b"*", b"~", b"%"):
        n = int(b)
        if n < 0:
            return ("null", None)
        kind = {b"*": "array", b"~": "set", b"%": "map"}[t]
        return (kind, [read(f) for _ in range(2 * n if t == b"%" else n)])
    raise ValueError(line)


def plain(v):
    """A typed reply as plain Python values: strings, ints, lists, None."""
    kind, x = v
    if kind in ("array", "set", "map"):
        return [plain(e) for e in x]
    return x
