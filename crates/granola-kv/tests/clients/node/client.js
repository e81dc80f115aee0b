// ioredis and node-redis with their defaults against granola-kv: the calls
// a cache user makes, each result checked. Usage: node client.js PORT.
// Exits 1 if any result is wrong.
"use strict";
const assert = require("node:assert/strict");
const Redis = require("ioredis");
const { createClient } = require("redis");

const port = Number(process.argv[2]);
let failed = false;

async function step(name, f, check) {
  try {
    const got = await f();
    check(got);
    console.log("ok   " + name);
  } catch (e) {
    failed = true;
    console.log("FAIL " + name + ": " + (e && e.message));
  }
}

async function ioredis() {
  // Defaults: a ready check (INFO) before the first command, an offline
  // queue, auto-pipelining off.
  const r = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1 });
  await step("ioredis flushdb", () => r.flushdb(), (v) => assert.equal(v, "OK"));
  await step("ioredis set EX", () => r.set("k", "v", "EX", 100), (v) => assert.equal(v, "OK"));
  await step("ioredis get", () => r.get("k"), (v) => assert.equal(v, "v"));
  await step("ioredis ttl", () => r.ttl("k"), (v) => assert.ok(v > 90 && v <= 100));
  await step(
    "ioredis pipeline",
    () => r.pipeline().set("a", 1).incr("a").get("a").exec(),
    (v) => assert.deepEqual(v, [[null, "OK"], [null, 2], [null, "2"]]),
  );
  await step(
    "ioredis multi",
    () => r.multi().set("b", 1).incr("b").exec(),
    (v) => assert.deepEqual(v, [[null, "OK"], [null, 2]]),
  );
  await step("ioredis hset", () => r.hset("h", { f1: "v1", f2: "v2" }), (v) => assert.equal(v, 2));
  await step("ioredis hgetall", () => r.hgetall("h"), (v) => assert.deepEqual(v, { f1: "v1", f2: "v2" }));
  await step("ioredis mget", () => r.mget("a", "b", "zz"), (v) => assert.deepEqual(v, ["2", "2", null]));
  await step("ioredis zadd", () => r.zadd("z", 1, "m1", 2.5, "m2"), (v) => assert.equal(v, 2));
  await step(
    "ioredis zrange withscores",
    () => r.zrange("z", 0, -1, "WITHSCORES"),
    (v) => assert.deepEqual(v, ["m1", "1", "m2", "2.5"]),
  );
  await step(
    "ioredis scanStream",
    () =>
      new Promise((resolve, reject) => {
        const keys = [];
        const s = r.scanStream({ count: 2 });
        s.on("data", (k) => keys.push(...k));
        s.on("end", () => resolve(keys.sort()));
        s.on("error", reject);
      }),
    (v) => assert.deepEqual(v, ["a", "b", "h", "k", "z"]),
  );
  await step("ioredis info", () => r.info("memory"), (v) => assert.match(v, /used_memory:\d+/));
  r.disconnect();
}

async function nodeRedis(resp) {
  const c = createClient({ url: `redis://127.0.0.1:${port}`, RESP: resp });
  c.on("error", (e) => console.log("node-redis error: " + e.message));
  const p = `node-redis RESP${resp || 2} `;
  await c.connect();
  await step(p + "set EX", () => c.set("nk", "nv", { EX: 100 }), (v) => assert.equal(v, "OK"));
  await step(p + "get", () => c.get("nk"), (v) => assert.equal(v, "nv"));
  await step(
    p + "multi",
    () => c.multi().set("x", "1").incr("x").exec(),
    (v) => assert.deepEqual(v, ["OK", 2]),
  );
  await step(p + "hGetAll", () => c.hGetAll("h"), (v) => assert.deepEqual({ ...v }, { f1: "v1", f2: "v2" }));
  await step(
    p + "scanIterator",
    async () => {
      const keys = [];
      for await (const batch of c.scanIterator({ COUNT: 2 })) keys.push(...[].concat(batch));
      return keys.sort();
    },
    (v) => assert.deepEqual(v, ["a", "b", "h", "k", "nk", "x", "z"]),
  );
  await step(p + "del", () => c.del(["nk", "x"]), (v) => assert.equal(v, 2));
  await c.quit();
}

(async () => {
  await ioredis();
  await nodeRedis(undefined);
  await nodeRedis(3);
  process.exit(failed ? 1 : 0);
})();
