"""Drives granola-kv's RESP port with redis-py (a real client).

Usage: python redis_client.py PORT. Exits non-zero on the first wrong
answer.
"""
import os
import sys

import redis


def check(what, got, want):
    if got != want:
        print(f"FAIL {what}: got {got!r}, want {want!r}", file=sys.stderr)
        sys.exit(1)


def expect_error(what, fn, fragment):
    try:
        fn()
    except redis.ResponseError as e:
        check(what, fragment in str(e), True)
        return
    print(f"FAIL {what}: no error", file=sys.stderr)
    sys.exit(1)


def main():
    port = int(sys.argv[1])
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
    check("ping", r.ping(), True)
    check("echo", r.echo("hello"), b"hello")
    check("select 0", r.execute_command("SELECT", 0), True)
    r.flushall()
    check("dbsize empty", r.dbsize(), 0)

    check("set", r.set("a", "1"), True)
    check("get", r.get("a"), b"1")
    check("get miss", r.get("zz"), None)
    check("set nx existing", r.set("a", "2", nx=True), None)
    check("set xx missing", r.set("b", "2", xx=True), None)
    check("set xx", r.set("a", "3", xx=True), True)
    check("get after xx", r.get("a"), b"3")
    big = os.urandom(300_000)
    check("set big", r.set("big", big), True)
    check("get big", r.get("big"), big)

    check("mset", r.mset({"m1": "x", "m2": "y" * 5000}), True)
    check("mget", r.mget(["m1", "m2", "missing"]), [b"x", b"y" * 5000, None])
    check("exists", r.exists("m1", "m2", "missing"), 2)
    check("del", r.delete("m1", "missing"), 1)

    check("incr new", r.incr("cnt"), 1)
    check("incrby", r.incr("cnt", 41), 42)
    check("decr", r.decr("cnt"), 41)
    r.set("notnum", "abc")
    expect_error("incr non-number", lambda: r.incr("notnum"), "not an integer")

    check("set ex", r.set("e", "v", ex=100), True)
    ttl = r.ttl("e")
    check("ttl range", 0 < ttl <= 100, True)
    check("ttl no expiry", r.ttl("a"), -1)
    check("ttl missing", r.ttl("nothing"), -2)
    check("expire", r.expire("a", 50), True)
    check("set px", r.set("p", "v", px=100000), True)

    check("rpush", r.rpush("l", "a", "b", "c"), 3)
    check("lpush", r.lpush("l", "z"), 4)
    check("lrange all", r.lrange("l", 0, -1), [b"z", b"a", b"b", b"c"])
    check("lrange mid", r.lrange("l", 1, 2), [b"a", b"b"])
    check("lrange out", r.lrange("l", 10, 20), [])
    check("llen", r.llen("l"), 4)
    check("lindex", r.lindex("l", -1), b"c")
    check("lindex out", r.lindex("l", 99), None)
    big_elems = [os.urandom(2048), os.urandom(2048)]
    r.rpush("bl", *big_elems)
    check("lrange big", r.lrange("bl", 0, -1), big_elems)
    expect_error("wrongtype", lambda: r.get("l"), "WRONGTYPE")

    info = r.info()
    check("info has keyspace hits", "keyspace_hits" in info, True)
    check("config get", isinstance(r.config_get("save"), dict), True)
    expect_error("unknown command", lambda: r.execute_command("NOSUCHCOMMAND", "x"), "unknown command")

    # pipelined: 2000 commands in one round trip
    p = r.pipeline(transaction=False)
    for i in range(1000):
        p.set(f"k{i}", f"v{i}" * (i % 50 + 1))
    for i in range(1000):
        p.get(f"k{i}")
    res = p.execute()
    check("pipeline sets", all(x is True for x in res[:1000]), True)
    for i in range(1000):
        check(f"pipeline get {i}", res[1000 + i], (f"v{i}" * (i % 50 + 1)).encode())
    check("dbsize", r.dbsize() >= 1000, True)
    check("flushall", r.flushall(), True)
    check("dbsize after flush", r.dbsize(), 0)
    print("redis client: all checks passed")


if __name__ == "__main__":
    main()
