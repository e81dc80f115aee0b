"""Drives granola-kv's memcached port with pymemcache (a real client).

Usage: python memcache_client.py PORT. Exits non-zero on the first wrong
answer, printing what differed.
"""
import os
import sys

from pymemcache.client.base import Client


def check(what, got, want):
    if got != want:
        print(f"FAIL {what}: got {got!r}, want {want!r}", file=sys.stderr)
        sys.exit(1)


def main():
    port = int(sys.argv[1])
    c = Client(("127.0.0.1", port), connect_timeout=5, timeout=10)
    check("version", isinstance(c.version(), bytes), True)
    c.flush_all()

    # set/get, small and large (the large one goes out by reference)
    check("set", c.set("k1", b"v1", noreply=False), True)
    check("get", c.get("k1"), b"v1")
    big = os.urandom(200_000)
    check("set big", c.set("big", big, noreply=False), True)
    check("get big", c.get("big"), big)
    check("get miss", c.get("nope"), None)

    # flags are preserved
    check("set flags", c.set("f", b"x", flags=42, noreply=False), True)
    check("raw get flags", c.raw_command(b"get f", end_tokens=b"END\r\n"), b"VALUE f 42 1\r\nx\r\n")

    # add / replace / append / prepend
    check("add existing", c.add("k1", b"zz", noreply=False), False)
    check("add new", c.add("k2", b"two", noreply=False), True)
    check("replace missing", c.replace("k3", b"x", noreply=False), False)
    check("replace", c.replace("k2", b"TWO", noreply=False), True)
    check("append", c.append("k2", b"-end", noreply=False), True)
    check("prepend", c.prepend("k2", b"start-", noreply=False), True)
    check("after append/prepend", c.get("k2"), b"start-TWO-end")

    # cas
    value, cas = c.gets("k1")
    check("gets value", value, b"v1")
    check("cas ok", c.cas("k1", b"v1b", cas, noreply=False), True)
    check("cas stale", c.cas("k1", b"v1c", cas, noreply=False), False)
    check("after cas", c.get("k1"), b"v1b")

    # incr / decr
    c.set("n", b"10", noreply=False)
    check("incr", c.incr("n", 5), 15)
    check("decr", c.decr("n", 20), 0)
    check("incr missing", c.incr("nokey", 1), None)

    # touch / delete
    check("touch", c.touch("k1", 100, noreply=False), True)
    check("delete", c.delete("k1", noreply=False), True)
    check("delete again", c.delete("k1", noreply=False), False)
    check("get deleted", c.get("k1"), None)

    # noreply commands are pipelined by the client without waiting
    for i in range(500):
        c.set(f"p{i}", f"val{i}".encode() * (i % 7 + 1), noreply=True)
    many = c.get_many([f"p{i}" for i in range(500)])
    for i in range(500):
        check(f"get_many p{i}", many.get(f"p{i}"), f"val{i}".encode() * (i % 7 + 1))

    # values around the copy threshold, each checked
    for size in (0, 1, 1023, 1024, 1025, 4096, 65536, 1 << 20):
        v = bytes((i * 7 + size) % 251 for i in range(size))
        check(f"set {size}", c.set(f"s{size}", v, noreply=False), True)
        check(f"get {size}", c.get(f"s{size}"), v)

    # too large -> error, connection stays usable
    try:
        c.set("huge", b"x" * (2 << 20), noreply=False)
        print("FAIL huge set was accepted", file=sys.stderr)
        sys.exit(1)
    except Exception:
        pass
    c2 = Client(("127.0.0.1", port), connect_timeout=5, timeout=10)
    check("after huge", c2.get("s1024") is not None, True)

    stats = c2.stats()
    for key in (b"curr_items", b"get_hits", b"get_misses", b"curr_connections",
                b"reply_bytes_referenced", b"reply_bytes_copied"):
        if key not in stats:
            print(f"FAIL stats lacks {key!r}: {sorted(stats)}", file=sys.stderr)
            sys.exit(1)
    check("large values went by reference", stats[b"reply_bytes_referenced"] > 1_000_000, True)
    c2.flush_all()
    check("after flush_all", c2.get("k2"), None)
    print("memcache client: all checks passed")


if __name__ == "__main__":
    main()
