"""A minimal RESP2 client for the Python benchmarks: commands encoded by
hand and replies read in order, so pipelining costs nothing but the
bytes."""
import socket, sys


def command(*words):
    """One RESP command (an array of bulk strings) as bytes."""
    out = [b"*%d\r\n" % len(words)]
    for w in words:
        out.append(b"$%d\r\n%s\r\n" % (len(w), w))
    return b"".join(out)


class Replies:
    """Reads RESP2 replies (simple strings, errors, integers, bulk strings)
    from a socket; an error reply or a closed connection ends the run."""

    def __init__(self, sock):
        self.f = sock.makefile("rb")

    def one(self):
        line = self.f.readline()
        if not line:
            sys.exit("server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            return self.f.read(n + 2)[:-2]
        if kind == b"-":
            sys.exit(f"server error: {rest!r}")
        return rest


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
