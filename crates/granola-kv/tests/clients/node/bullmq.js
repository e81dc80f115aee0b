// BullMQ, a job queue built on Lua scripts (cmsgpack-packed options,
// cjson-encoded events), against granola-kv with its defaults: jobs added
// one by one and in bulk, with priorities, delays and retries, processed
// by two workers, their results and events checked. Each job's data
// carries a checksum of itself, so a torn or stale payload is caught.
// Usage: node bullmq.js PORT. Exits 1 on any failure or after 60 s.
"use strict";
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const { Queue, Worker, QueueEvents, FlowProducer } = require("bullmq");

const port = Number(process.argv[2]);
const connection = { host: "127.0.0.1", port };
const JOBS = 200;

const timer = setTimeout(() => {
  console.log("FAIL bullmq: timed out after 60 s");
  process.exit(1);
}, 60_000);

function payload(i) {
  const body = crypto.randomBytes(16 + (i % 7) * 300).toString("base64");
  const sum = crypto.createHash("sha1").update(`${i}:${body}`).digest("hex");
  return { i, body, sum };
}

function verify(data) {
  const sum = crypto.createHash("sha1").update(`${data.i}:${data.body}`).digest("hex");
  assert.equal(sum, data.sum, `job ${data.i}: payload does not match its checksum`);
}

async function main() {
  const name = `q${process.pid}`;
  const queue = new Queue(name, { connection });
  const events = new QueueEvents(name, { connection });
  await events.waitUntilReady();
  await queue.obliterate({ force: true });

  const seen = new Map();
  let failedOnce = 0;
  const processor = async (job) => {
    verify(job.data);
    if (job.name === "flaky" && job.attemptsMade === 0) {
      failedOnce += 1;
      throw new Error("first attempt fails");
    }
    await job.updateProgress(50);
    seen.set(job.data.i, (seen.get(job.data.i) || 0) + 1);
    return { doubled: job.data.i * 2 };
  };
  const workers = [1, 2].map(
    () => new Worker(name, processor, { connection, concurrency: 4 }),
  );

  let completedEvents = 0;
  events.on("completed", () => {
    completedEvents += 1;
  });

  // One by one, with options BullMQ packs with msgpack for its scripts.
  const single = [];
  for (let i = 0; i < JOBS / 2; i++) {
    const opts = { attempts: 2, backoff: { type: "fixed", delay: 10 } };
    if (i % 10 === 0) opts.priority = 1 + (i % 3);
    if (i % 25 === 0) opts.delay = 200;
    const kind = i % 20 === 0 ? "flaky" : "plain";
    single.push(await queue.add(kind, payload(i), opts));
  }
  // In bulk (one MULTI of scripts).
  const bulk = await queue.addBulk(
    Array.from({ length: JOBS / 2 }, (_, k) => ({
      name: "bulk",
      data: payload(JOBS / 2 + k),
      opts: { removeOnComplete: false },
    })),
  );
  assert.equal(single.length + bulk.length, JOBS);

  // Every job finishes, and its result and state are what the worker said.
  const all = [...single, ...bulk];
  for (const job of all) {
    const result = await job.waitUntilFinished(events, 30_000);
    assert.deepEqual(result, { doubled: job.data.i * 2 });
  }
  for (const job of all) {
    assert.equal(await job.getState(), "completed", `job ${job.id}`);
    const fresh = await queue.getJob(job.id);
    verify(fresh.data);
    assert.equal(fresh.progress, 50);
  }
  assert.equal(seen.size, JOBS, "every job processed");
  for (const [i, n] of seen) assert.equal(n, 1, `job ${i} processed ${n} times`);
  assert.equal(failedOnce, JOBS / 2 / 20, "each flaky job failed once, then passed");
  const counts = await queue.getJobCounts("completed", "failed", "waiting", "delayed", "active");
  assert.deepEqual(counts, { completed: JOBS, failed: 0, waiting: 0, delayed: 0, active: 0 });
  console.log(`ok   bullmq: ${JOBS} jobs (priorities, delays, retries, bulk) completed once each`);

  // A parent job waits for its children (FlowProducer).
  const flows = new FlowProducer({ connection });
  const tree = await flows.add({
    name: "parent",
    queueName: name,
    data: payload(10_000),
    children: [1, 2, 3].map((c) => ({ name: "child", queueName: name, data: payload(10_000 + c) })),
  });
  const parentResult = await tree.job.waitUntilFinished(events, 30_000);
  assert.deepEqual(parentResult, { doubled: 20_000 });
  const children = await tree.job.getChildrenValues();
  assert.equal(Object.keys(children).length, 3);
  console.log("ok   bullmq: a flow's parent ran after its three children");
  await flows.close();

  // Events came through the event stream (XADD by the scripts, XREAD BLOCK here).
  assert.ok(completedEvents >= JOBS, `completed events: ${completedEvents}`);
  console.log(`ok   bullmq: ${completedEvents} completed events read from the stream`);

  await Promise.all(workers.map((w) => w.close()));
  await queue.obliterate({ force: true });
  await events.close();
  await queue.close();
}

main().then(
  () => {
    clearTimeout(timer);
    process.exit(0);
  },
  (e) => {
    console.log("FAIL bullmq: " + (e && e.stack));
    process.exit(1);
  },
);
