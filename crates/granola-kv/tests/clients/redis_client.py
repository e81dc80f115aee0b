"""Drives granola-kv's RESP port with redis-py (a real client).

Usage: python redis_client.py PORT [PROTOCOL]. PROTOCOL is 2 or 3; without
it the client's default (RESP3 in redis-py 8). Exits non-zero on the first
wrong answer.
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
    kw = {"protocol": int(sys.argv[2])} if len(sys.argv) > 2 else {}
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, **kw)
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

    # connection commands
    cid = r.client_id()
    check("client id is an int", isinstance(cid, int) and cid > 0, True)
    check("client getname unset", r.client_getname(), None)
    check("client setname", r.client_setname("granola-test"), True)
    check("client getname", r.client_getname() in ("granola-test", b"granola-test"), True)
    names = [c.get("name") for c in r.client_list()]
    check("client list shows the name", "granola-test" in names, True)
    check("client info id", int(r.client_info()["id"]), cid)

    # default pipeline(): MULTI/EXEC
    p = r.pipeline()
    p.set("tx", "1").incr("tx").get("tx")
    check("transaction", p.execute(), [True, 2, b"2"])
    # a command refused while queuing aborts the whole transaction
    p = r.pipeline()
    p.set("tx2", "applied?")
    p.execute_command("NOSUCHCOMMAND")
    try:
        p.execute()
        print("FAIL execabort: no error", file=sys.stderr)
        sys.exit(1)
    except redis.ResponseError as e:
        check("execabort text", "EXECABORT" in str(e) or "unknown command" in str(e), True)
    check("execabort applied nothing", r.get("tx2"), None)
    # WATCH: a write by another client aborts EXEC
    other = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, **kw)
    r.set("w", "0")
    with r.pipeline() as p:
        p.watch("w")
        p.multi()
        p.set("w", "mine")
        other.set("w", "theirs")
        try:
            p.execute()
            print("FAIL watch: transaction applied", file=sys.stderr)
            sys.exit(1)
        except redis.WatchError:
            pass
    check("watch kept the other write", r.get("w"), b"theirs")
    # WATCH with no interference: applies
    with r.pipeline() as p:
        p.watch("w")
        cur = p.get("w")
        p.multi()
        p.set("w", cur + b"!")
        check("watch untouched applies", p.execute(), [True])
    check("watch result", r.get("w"), b"theirs!")
    # SELECT: databases are separate keyspaces
    r.set("shared-name", "db0")
    check("select 5", r.execute_command("SELECT", 5), True)
    check("db5 empty", r.get("shared-name"), None)
    r.set("shared-name", "db5")
    check("db5 dbsize", r.dbsize(), 1)
    r.execute_command("SELECT", 0)
    check("db0 value", r.get("shared-name"), b"db0")
    expect_error("select out of range", lambda: r.execute_command("SELECT", 16), "out of range")
    check("flushall", r.flushall(), True)
    check("dbsize after flush", r.dbsize(), 0)
    print("redis client: all checks passed")


if __name__ == "__main__":
    main()
