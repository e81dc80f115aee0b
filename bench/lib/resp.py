"""A minimal RESP2 client for the Python benchmarks: commands encoded by
hand and replies read in order, so pipelining costs nothing but the
bytes."""
import sys


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
