"""Drives granola-kv's RESP port with redis-py (a real client).

Usage: python redis_client.py PORT [PROTOCOL]. PROTOCOL is 2 or 3; without
it the client's default (RESP3 in redis-py 8). Exits non-zero on the first
wrong answer.
"""
import os
import sys
import threading

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
    # WATCH sees a push onto a list (written in place)
    r.rpush("wl", "a")
    with r.pipeline() as p:
        p.watch("wl")
        p.multi()
        p.rpush("wl", "mine")
        other.lpush("wl", "theirs")
        try:
            p.execute()
            print("FAIL watch list: transaction applied", file=sys.stderr)
            sys.exit(1)
        except redis.WatchError:
            pass
    check("watch list kept the other push", r.lrange("wl", 0, -1), [b"theirs", b"a"])
    # WATCH sees an EXPIRE (a TTL-only change), on a string and on a hash
    r.set("wt", "v")
    r.hset("wh", "f", "v")
    for key, write in [("wt", lambda p: p.set("wt", "mine")), ("wh", lambda p: p.hset("wh", "f", "mine"))]:
        with r.pipeline() as p:
            p.watch(key)
            p.multi()
            write(p)
            other.expire(key, 1000)
            try:
                p.execute()
                print(f"FAIL watch expire {key}: transaction applied", file=sys.stderr)
                sys.exit(1)
            except redis.WatchError:
                pass
    check("watch expire kept the string", r.get("wt"), b"v")
    check("watch expire kept the hash", r.hget("wh", "f"), b"v")
    # SELECT: databases are separate keyspaces
    r.set("shared-name", "db0")
    check("select 5", r.execute_command("SELECT", 5), True)
    check("db5 empty", r.get("shared-name"), None)
    r.set("shared-name", "db5")
    check("db5 dbsize", r.dbsize(), 1)
    r.execute_command("SELECT", 0)
    check("db0 value", r.get("shared-name"), b"db0")
    expect_error("select out of range", lambda: r.execute_command("SELECT", 16), "out of range")
    stats = r.info("commandstats")
    check("commandstats parse", stats["cmdstat_get"]["calls"] >= 3, True)
    check("commandstats usec", stats["cmdstat_get"]["usec"] >= 0, True)
    check("commandstats usec_per_call", "usec_per_call" in stats["cmdstat_get"], True)
    hashes_and_sets(r, other)
    streams(r)
    blocking(r, port, kw)
    pubsub(r, port, kw)
    tracking_redirect(r, port, kw)
    scripts(r, port, kw)
    check("flushall", r.flushall(), True)
    check("dbsize after flush", r.dbsize(), 0)
    print("redis client: all checks passed")


def hashes_and_sets(r, other):
    """Big hashes and sets through redis-py's own helpers (scan iterators
    with the server's default COUNT), checked against Python's dict/set."""
    want = {f"f{i}".encode(): f"v{i}-{i * 7919 % 1000}".encode() for i in range(20000)}
    items = list(want.items())
    for i in range(0, len(items), 1000):
        check(f"hset batch {i}", r.hset("H", mapping=dict(items[i:i + 1000])), 1000)
    check("hlen", r.hlen("H"), 20000)
    check("hgetall", r.hgetall("H"), want)
    check("hget", r.hget("H", "f12345"), want[b"f12345"])
    check("hmget", r.hmget("H", ["f1", "nope", "f19999"]), [want[b"f1"], None, want[b"f19999"]])
    check("type hash", r.type("H"), b"hash")
    check("object encoding hash", r.object("encoding", "H"), b"hashtable")
    # HSCAN while another client deletes a third of the fields: every field
    # present for the whole scan is returned (duplicates allowed)
    seen = set()
    deleted = set()
    for n, (f, v) in enumerate(r.hscan_iter("H")):
        check("hscan value", v, want[f])
        seen.add(f)
        if n % 3 == 0 and n < 15000:
            victim = f"f{(n * 7) % 20000}".encode()
            deleted.add(victim)
            other.hdel("H", victim)
    check("hscan saw every surviving field", set(want) - deleted - seen, set())
    left = {f: v for f, v in want.items() if f not in deleted}
    check("hgetall after deletes", r.hgetall("H"), left)
    matched = {f for f, _ in r.hscan_iter("H", match="f1999*")}
    check("hscan match", matched, {f for f in left if f.startswith(b"f1999")})
    check("hscan novalues", set(r.hscan_iter("H", match="f1999*", no_values=True)), matched)
    picked = r.hrandfield("H", 5, withvalues=True)
    pairs = dict(zip(picked[::2], picked[1::2])) if isinstance(picked, list) and picked and not isinstance(picked[0], list) else dict(picked)
    check("hrandfield withvalues", len(pairs) == 5 and all(left[f] == v for f, v in pairs.items()), True)
    check("hrandfield one", r.hrandfield("H") in left, True)
    check("hrandfield repeats", len(r.hrandfield("H", -50)), 50)
    expect_error("lpush on a hash", lambda: r.lpush("H", "x"), "WRONGTYPE")
    expect_error("sadd on a hash", lambda: r.sadd("H", "x"), "WRONGTYPE")
    # RENAME keeps the fields; EXPIRE keeps them; WATCH sees HSET
    check("rename hash", r.rename("H", "H2"), True)
    check("renamed hash", r.hgetall("H2"), left)
    check("expire hash", r.expire("H2", 100), True)
    check("hash after expire", r.hlen("H2"), len(left))
    with r.pipeline() as p:
        p.watch("H2")
        p.multi()
        p.hset("H2", "mine", "1")
        other.hset("H2", "theirs", "1")
        try:
            p.execute()
            print("FAIL watch hash: transaction applied", file=sys.stderr)
            sys.exit(1)
        except redis.WatchError:
            pass
    check("watch hash kept the other write", r.hexists("H2", "mine"), False)
    check("hdel all", r.hdel("H2", *r.hkeys("H2")), len(left) + 1)
    check("emptied hash is gone", r.exists("H2"), 0)

    a = {f"m{i}".encode() for i in range(0, 30000, 2)}
    b = {f"m{i}".encode() for i in range(0, 30000, 3)}
    check("sadd a", r.sadd("A", *a), len(a))
    check("sadd b", r.sadd("B", *b), len(b))
    check("sadd again", r.sadd("A", "m0", "m1"), 1)
    a.add(b"m1")
    check("scard", r.scard("A"), len(a))
    check("smembers", r.smembers("A"), a)
    check("sismember", [r.sismember("A", "m4"), r.sismember("A", "m3")], [True, False])
    check("sinter", r.sinter("A", "B"), a & b)
    check("sunion", r.sunion("A", "B"), a | b)
    check("sdiff", r.sdiff("A", "B"), a - b)
    check("sscan", set(r.sscan_iter("A")), a)
    check("type set", r.type("A"), b"set")
    popped = r.spop("A", 100)
    check("spop count", len(set(popped)), 100)
    check("spop removed", a - set(popped) == r.smembers("A"), True)
    rand = r.srandmember("B", 50)
    check("srandmember distinct", len(set(rand)) == 50 and set(rand) <= b, True)
    check("srandmember repeats", len(r.srandmember("B", -5000)), 5000)
    check("sinterstore", r.sinterstore("I", ["A", "B"]), len(r.smembers("A") & b))
    check("sinterstore result", r.smembers("I"), r.smembers("A") & b)
    check("sunionstore", r.sunionstore("U", ["A", "B"]), len(r.smembers("A") | b))
    check("sdiffstore", r.sdiffstore("D", ["B", "A"]), len(b - r.smembers("A")))
    check("sdiffstore empty deletes", r.sdiffstore("D", ["nothing", "A"]), 0)
    check("sdiffstore deleted", r.exists("D"), 0)
    check("sintercard", r.sintercard(2, ["A", "B"]), len(r.smembers("A") & b))
    check("sintercard limit", r.sintercard(2, ["A", "B"], limit=10), 10)
    check("smove", r.smove("B", "M", "m0"), True)
    check("smove missing", r.smove("B", "M", "m0"), False)
    check("smove result", (r.sismember("B", "m0"), r.smembers("M")), (False, {b"m0"}))
    r.sadd("B", "m0")
    expect_error("smove to a hash", lambda: r.smove("B", "H2x", "m3") if r.hset("H2x", "f", "v") else None, "WRONGTYPE")
    expect_error("srandmember huge count", lambda: r.srandmember("B", -(1 << 40)), "out of range")
    check("copy set", r.copy("B", "B2"), True)
    check("copied set", r.smembers("B2"), b)
    check("srem", r.srem("B2", *b), len(b))
    check("emptied set is gone", r.exists("B2"), 0)

    scores = {f"z{i}".encode(): float((i * 7919) % 1000) / 4 for i in range(20000)}
    for i in range(0, 20000, 1000):
        chunk = dict(list(scores.items())[i:i + 1000])
        check(f"zadd batch {i}", r.zadd("Z", chunk), 1000)
    order = sorted(scores.items(), key=lambda kv: (kv[1], kv[0]))
    check("zcard", r.zcard("Z"), 20000)
    check("zrange head", r.zrange("Z", 0, 9, withscores=True), order[:10])
    check("zrange tail", r.zrange("Z", -5, -1, withscores=True), order[-5:])
    check("zrange middle", r.zrange("Z", 10000, 10009), [m for m, _ in order[10000:10010]])
    rev = order[::-1]
    check("zrevrange", r.zrevrange("Z", 0, 4, withscores=True), rev[:5])
    check("zrevrange tail", r.zrevrange("Z", -3, -1), [m for m, _ in rev[-3:]])
    check("zrank", r.zrank("Z", order[777][0]), 777)
    check("zrevrank", r.zrevrank("Z", order[777][0]), 20000 - 1 - 777)
    check("zrank missing", r.zrank("Z", "nope"), None)
    in_range = [(m, sc) for m, sc in order if 10 <= sc <= 20]
    check("zcount", r.zcount("Z", 10, 20), len(in_range))
    check("zcount exclusive", r.zcount("Z", "(10", "(20"), len([1 for _, sc in in_range if 10 < sc < 20]))
    check("zcount all", r.zcount("Z", "-inf", "+inf"), 20000)
    check("zrangebyscore", r.zrangebyscore("Z", 10, 20, withscores=True), in_range)
    check("zrangebyscore limit", r.zrangebyscore("Z", 10, 20, start=5, num=7), [m for m, _ in in_range[5:12]])
    check("zrevrangebyscore", r.zrevrangebyscore("Z", 20, 10, withscores=True), in_range[::-1])
    check("zrevrangebyscore limit", r.zrevrangebyscore("Z", "+inf", "-inf", start=0, num=3), [m for m, _ in rev[:3]])
    check("zrangebyscore empty", r.zrangebyscore("Z", "+inf", "-inf"), [])
    check("zmscore", r.zmscore("Z", ["z1", "nope", "z2"]), [scores[b"z1"], None, scores[b"z2"]])
    check("zscan", dict(r.zscan_iter("Z")), scores)
    r.zadd("Zc", dict(order[:100]))
    check("zremrangebyscore", r.zremrangebyscore("Zc", "-inf", order[9][1]), len([1 for _, sc in order[:100] if sc <= order[9][1]]))
    left = [o for o in order[:100] if o[1] > order[9][1]]
    check("zremrangebyrank", r.zremrangebyrank("Zc", 0, 4), 5)
    check("after zremrange*", r.zrange("Zc", 0, -1, withscores=True), left[5:])
    check("zscore", r.zscore("Z", "z123"), scores[b"z123"])
    check("zincrby", r.zincrby("Z", 1000, "z123"), scores[b"z123"] + 1000)
    check("zincrby moves it last", r.zrange("Z", -1, -1), [b"z123"])
    check("zadd gt refuses lower", r.zadd("Z", {"z123": 5}, gt=True, ch=True), 0)
    check("zadd lt takes lower", r.zadd("Z", {"z123": -1}, lt=True, ch=True), 1)
    check("zadd lt moved it first", r.zrange("Z", 0, 0, withscores=True), [(b"z123", -1.0)])
    check("zadd nx keeps", r.zadd("Z", {"z123": 7}, nx=True), 0)
    check("zadd incr", r.zadd("Z", {"z123": 2}, incr=True), 1.0)
    check("zrem", r.zrem("Z", "z123", "nope"), 1)
    check("zpopmin", r.zpopmin("Z", 2), [o for o in order if o[0] != b"z123"][:2])
    check("zpopmax", r.zpopmax("Z"), [max((o for o in order if o[0] != b"z123"), key=lambda kv: (kv[1], kv[0]))])
    check("type zset", r.type("Z"), b"zset")
    check("object encoding zset", r.object("encoding", "Z"), b"skiplist")
    expect_error("hset on a zset", lambda: r.hset("Z", "f", "v"), "WRONGTYPE")
    check("rename zset", r.rename("Z", "Z2"), True)
    check("renamed zset", r.zcard("Z2"), 20000 - 4)


def streams(r):
    """A stream through redis-py's helpers: auto IDs, ranges, reads in the
    connection's protocol's shape, trims; every entry names its number."""
    ids = [r.xadd("S", {"n": str(i), "pad": "x" * (i % 50)}) for i in range(500)]
    nums = [tuple(int(x) for x in i.split(b"-")) for i in ids]
    check("xadd ids increase", all(a < b for a, b in zip(nums, nums[1:])), True)
    check("xlen", r.xlen("S"), 500)
    check("xrange all", [(e[0], e[1][b"n"]) for e in r.xrange("S")],
          [(ids[i], str(i).encode()) for i in range(500)])
    check("xrange count", [e[0] for e in r.xrange("S", min=ids[10], count=5)], ids[10:15])
    check("xrevrange", [e[0] for e in r.xrevrange("S", count=3)], ids[::-1][:3])
    res = r.xread({"S": ids[497]})
    # RESP2: [[key, entries]]; RESP3: {key: [entries]}.
    entries = res[b"S"][0] if isinstance(res, dict) else res[0][1]
    check("xread", [(e[0], e[1][b"n"]) for e in entries], [(ids[i], str(i).encode()) for i in (498, 499)])
    check("xread $ is empty", bool(r.xread({"S": "$"})), False)
    check("xdel", r.xdel("S", ids[0], ids[1], ids[1]), 2)
    check("xtrim", r.xtrim("S", maxlen=100, approximate=False), 398)
    check("xrange after trim", [e[0] for e in r.xrange("S")], ids[400:])
    info = r.xinfo_stream("S")
    check("xinfo length", info["length"], 100)
    check("xinfo last id", info["last-generated-id"], ids[-1])
    check("xinfo entries added", info["entries-added"], 500)
    r.xadd("S", {"n": "500"}, maxlen=10, approximate=False)
    check("xadd maxlen", r.xlen("S"), 10)
    check("type stream", r.type("S"), b"stream")
    consumer_groups(r)


def consumer_groups(r):
    """A work queue on a consumer group: two workers read, one acks, the
    other's entries are claimed; every reply through redis-py's parsers."""
    r.delete("Q")
    ids = [r.xadd("Q", {"job": str(i)}) for i in range(10)]
    check("xgroup create", r.xgroup_create("Q", "workers", id="0"), True)
    expect_error("busygroup", lambda: r.xgroup_create("Q", "workers", id="0"), "BUSYGROUP")

    def entries(res):
        return res[b"Q"][0] if isinstance(res, dict) else res[0][1]

    got_a = entries(r.xreadgroup("workers", "a", {"Q": ">"}, count=6))
    got_b = entries(r.xreadgroup("workers", "b", {"Q": ">"}, count=6))
    check("readgroup a", [e[0] for e in got_a], ids[:6])
    check("readgroup b", [e[0] for e in got_b], ids[6:])
    check("readgroup fields", got_a[0][1], {b"job": b"0"})
    check("readgroup drained", bool(r.xreadgroup("workers", "b", {"Q": ">"})), False)
    p = r.xpending("Q", "workers")
    check("xpending count", p["pending"], 10)
    check("xpending bounds", (p["min"], p["max"]), (ids[0], ids[-1]))
    check("xpending consumers", sorted((c["name"], c["pending"]) for c in p["consumers"]), [(b"a", 6), (b"b", 4)])
    check("xack", r.xack("Q", "workers", *ids[:6]), 6)
    rows = r.xpending_range("Q", "workers", min="-", max="+", count=10)
    check("xpending range", [(x["message_id"], x["consumer"], x["times_delivered"]) for x in rows],
          [(i, b"b", 1) for i in ids[6:]])
    claimed = r.xclaim("Q", "workers", "c", min_idle_time=0, message_ids=ids[6:8])
    check("xclaim", [e[0] for e in claimed], ids[6:8])
    auto = r.xautoclaim("Q", "workers", "c", min_idle_time=0, start_id="0-0")
    check("xautoclaim", [e[0] for e in auto[1]], ids[6:])
    groups = r.xinfo_groups("Q")
    check("xinfo groups", (groups[0]["name"], groups[0]["pending"], groups[0]["consumers"]), (b"workers", 4, 3))
    names = sorted(c["name"] for c in r.xinfo_consumers("Q", "workers"))
    check("xinfo consumers", names, [b"a", b"b", b"c"])
    check("xgroup destroy", r.xgroup_destroy("Q", "workers"), 1)


def blocking(r, port, kw):
    """A job queue as RQ and Celery run one on Redis: workers in BRPOP on
    their own connections, a producer pushing; every job is taken once.
    Then the timeouts, BZPOPMIN, and XREAD/XREADGROUP with BLOCK."""
    r.delete("jobs", "done")
    check("blpop timeout", r.blpop(["nothing"], timeout=0.1), None)
    taken = [[] for _ in range(3)]

    def worker(i):
        w = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30, **kw)
        while True:
            key, job = w.brpop(["jobs", "done"], timeout=20)
            if key == b"done":
                return
            taken[i].append(job)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in workers:
        t.start()
    for n in range(300):
        r.lpush("jobs", f"job-{n}")
    for _ in workers:
        r.rpush("done", "stop")
    for t in workers:
        t.join(60)
        check("worker finished", t.is_alive(), False)
    got = sorted(j for part in taken for j in part)
    check("every job once", got, sorted(f"job-{n}".encode() for n in range(300)))

    r.delete("Z9")
    out = {}
    t = threading.Thread(target=lambda: out.update(z=redis.Redis(
        host="127.0.0.1", port=port, socket_timeout=30, **kw).bzpopmin("Z9", timeout=10)))
    t.start()
    wait_blocked(r, 1)
    r.zadd("Z9", {"m": 2.5})
    t.join(30)
    check("bzpopmin", tuple(out["z"]), (b"Z9", b"m", 2.5))

    r.delete("S9")
    r.xadd("S9", {"n": "old"})
    t = threading.Thread(target=lambda: out.update(x=redis.Redis(
        host="127.0.0.1", port=port, socket_timeout=30, **kw).xread({"S9": "$"}, block=10000)))
    t.start()
    wait_blocked(r, 1)
    new_id = r.xadd("S9", {"n": "new"})
    t.join(30)
    res = out["x"]
    entries = res[b"S9"][0] if isinstance(res, dict) else res[0][1]
    check("xread block", [(e[0], e[1]) for e in entries], [(new_id, {b"n": b"new"})])
    check("xread block timeout", bool(r.xread({"S9": "$"}, block=50)), False)


def wait_message(p, what):
    """The next message of PubSub `p`, waiting up to 10 s."""
    for _ in range(200):
        m = p.get_message(timeout=0.05)
        if m is not None:
            return m
    print(f"FAIL {what}: no message", file=sys.stderr)
    sys.exit(1)


def pubsub(r, port, kw):
    """Pub/Sub through redis-py's PubSub object with the connection's
    protocol: channels and patterns, messages from another client, the
    PUBSUB introspection, unsubscribing."""
    p = r.pubsub(ignore_subscribe_messages=True)
    p.subscribe("chat")
    p.psubscribe("log.*")

    def next_message():
        return wait_message(p, "pubsub")

    # redis-py does not wait for the subscriptions' confirmations; the
    # counts are read on another connection once the server has them.
    for _ in range(40):
        if r.pubsub_numsub("chat") == [(b"chat", 1)] and r.pubsub_numpat() == 1:
            break
        threading.Event().wait(0.05)
    check("numsub", r.pubsub_numsub("chat"), [(b"chat", 1)])
    check("numpat", r.pubsub_numpat(), 1)
    check("channels", r.pubsub_channels(), [b"chat"])
    other = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, **kw)
    check("publish", other.publish("chat", "hi"), 1)
    m = next_message()
    check("message", (m["type"], m["channel"], m["data"]), ("message", b"chat", b"hi"))
    check("publish pattern", other.publish("log.disk", "full"), 1)
    m = next_message()
    check("pmessage", (m["type"], m["pattern"], m["channel"], m["data"]),
          ("pmessage", b"log.*", b"log.disk", b"full"))
    for i in range(100):
        other.publish("chat", f"n{i}")
    got = [next_message()["data"] for _ in range(100)]
    check("messages in order", got, [f"n{i}".encode() for i in range(100)])
    p.unsubscribe("chat")
    p.punsubscribe()
    for _ in range(20):
        if r.pubsub_numsub("chat") == [(b"chat", 0)] and r.pubsub_numpat() == 0:
            break
        threading.Event().wait(0.05)
    check("unsubscribed", (r.pubsub_numsub("chat"), r.pubsub_numpat()), ([(b"chat", 0)], 0))
    p.close()
    # Sharded Pub/Sub (Redis 7): its own channels and message type.
    sp = r.pubsub(ignore_subscribe_messages=True)
    sp.ssubscribe("orders")
    # redis-py sends SSUBSCRIBE without waiting for its confirmation: the
    # count is read on another connection, so wait for the server to have it.
    for _ in range(40):
        if r.pubsub_shardnumsub("orders") == [(b"orders", 1)]:
            break
        threading.Event().wait(0.05)
    check("shardnumsub", r.pubsub_shardnumsub("orders"), [(b"orders", 1)])
    check("spublish", other.spublish("orders", "o1"), 1)
    check("publish misses shard channels", other.publish("orders", "no"), 0)
    for _ in range(200):
        m = sp.get_sharded_message(timeout=0.05)
        if m is not None:
            break
    else:
        print("FAIL pubsub: no sharded message", file=sys.stderr)
        sys.exit(1)
    check("smessage", (m["type"], m["channel"], m["data"]), ("smessage", b"orders", b"o1"))
    sp.sunsubscribe("orders")
    for _ in range(20):
        if r.pubsub_shardnumsub("orders") == [(b"orders", 0)]:
            break
        threading.Event().wait(0.05)
    check("sunsubscribed", r.pubsub_shardnumsub("orders"), [(b"orders", 0)])
    sp.close()


def tracking_redirect(r, port, kw):
    """Client-side caching the RESP2 way: a RESP2 connection subscribed to
    `__redis__:invalidate` receives, as messages, the invalidations that a
    tracking connection (of this run's protocol) redirects to it."""
    target = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10,
                         protocol=2, client_name="inv-target")
    p = target.pubsub()
    p.subscribe("__redis__:invalidate")

    def next_message():
        return wait_message(p, "tracking redirect")

    check("redirect target subscribed", next_message()["type"], "subscribe")
    tid = next(int(c["id"]) for c in r.client_list() if c["name"] == "inv-target")
    tracker = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10,
                          single_connection_client=True, **kw)
    check("tracking on redirect", tracker.client_tracking_on(clientid=tid), b"OK")
    check("getredir", tracker.client_getredir(), tid)
    r.set("cached", "1")
    check("tracked read", tracker.get("cached"), b"1")
    r.set("cached", "2")
    m = next_message()
    check("redirected invalidation",
          (m["type"], m["channel"], m["data"]),
          ("message", b"__redis__:invalidate", [b"cached"]))
    check("tracking off", tracker.client_tracking_off(), b"OK")
    tracker.close()
    p.close()
    target.close()


def scripts(r, port, kw):
    """Lua through redis-py's own users of it: `Lock` (SET NX PX to take
    it, scripts to release, extend and reacquire it) with two clients
    contending, `register_script` (EVALSHA, falling back to SCRIPT LOAD
    after a flush), and functions (`function_load`, `fcall`)."""
    other = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, **kw)
    lock = r.lock("resource", timeout=5)
    check("lock acquired", lock.acquire(blocking=False), True)
    rival = other.lock("resource", timeout=5)
    check("rival refused", rival.acquire(blocking=False), False)
    check("lock extended", lock.extend(10), True)
    check("ttl after extend", 5000 < r.pttl("resource") <= 15000, True)
    check("lock reacquired", lock.reacquire(), True)
    lock.release()
    check("rival acquires", rival.acquire(blocking=True, blocking_timeout=2), True)
    rival.release()
    # A lock that expired and was taken by another is not released by its
    # first owner: the release script compares the token.
    check("lock again", lock.acquire(blocking=False), True)
    r.delete("resource")
    check("rival takes it", rival.acquire(blocking=False), True)
    try:
        lock.release()
        print("FAIL lock: released a lock it no longer owns", file=sys.stderr)
        sys.exit(1)
    except redis.exceptions.LockNotOwnedError:
        pass
    check("rival still holds it", r.exists("resource"), 1)
    rival.release()
    with r.lock("resource", timeout=5, blocking_timeout=2):
        check("held in with", r.exists("resource"), 1)
    check("released after with", r.exists("resource"), 0)
    bump = r.register_script(
        "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) "
        "return {v, redis.call('TYPE', KEYS[1]).ok}")
    check("script", bump(keys=["sc"], args=[5]), [5, b"string"])
    r.script_flush()
    check("script after flush", bump(keys=["sc"], args=[2]), [7, b"string"])
    check("script exists", r.script_exists(bump.sha), [True])
    expect_error("script error", lambda: r.eval("return redis.call('LPUSH', KEYS[1], 'x')", 1, "sc"),
                 "WRONGTYPE")
    # Functions: a library loaded once, its functions called by name
    # from this client and another one (maybe another server thread).
    lib = ("#!lua name=granola_test\n"
           "redis.register_function('bump', function(keys, args) "
           "return redis.call('INCRBY', keys[1], args[1]) end)\n"
           "redis.register_function{function_name='peek', callback=function(keys) "
           "return redis.call('GET', keys[1]) end, flags={'no-writes'}}")
    check("function load", r.function_load(lib), b"granola_test")
    expect_error("function load again", lambda: r.function_load(lib), "already exists")
    check("fcall", r.fcall("bump", 1, "fn", 3), 3)
    check("fcall from another client", other.fcall("bump", 1, "fn", 4), 7)
    check("fcall_ro", r.fcall_ro("peek", 1, "fn"), b"7")
    expect_error("fcall_ro of a writer", lambda: r.fcall_ro("bump", 1, "fn", 1), "write flag")
    listed = r.function_list(library="granola_*")
    check("function list", len(listed), 1)
    check("function load replace", r.function_load(lib, replace=True), b"granola_test")
    check("function delete", r.function_delete("granola_test") in (True, b"OK"), True)
    expect_error("fcall deleted", lambda: r.fcall("bump", 1, "fn", 1), "Function not found")


def wait_blocked(r, n):
    """Until `n` clients are blocked (the write must find them waiting)."""
    for _ in range(500):
        if r.info("clients")["blocked_clients"] == n:
            return
        threading.Event().wait(0.01)
    print(f"FAIL: never {n} blocked clients", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()
