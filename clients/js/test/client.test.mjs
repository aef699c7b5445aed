// The client against two real `idforge serve` processes (docs/clients.md, "The
// behaviour"): both protocols, wrong requests, kill -9 and restart, SIGSTOP, the buffer's
// bound and age, a full outage. The servers share a worker-id registry and a segment store.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, IdforgeError, IdforgeUnavailable, parse } from "idforge-client";
import { Cluster, sleep } from "../test-support/servers.mjs";

let cluster;
let a;
let b;

before(async () => {
  cluster = new Cluster();
  cluster.createTag("order");
  a = await cluster.start("a");
  b = await cluster.start("b");
});

after(async () => {
  await cluster?.close();
});

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const yieldToIo = () => new Promise((resolve) => setImmediate(resolve));

function serverStats(client, url) {
  return client.stats().servers.find((s) => s.url === url);
}

test("http:// and redis:// servers both issue every kind, buffered or not", async () => {
  const workers = new Map();
  for (const url of [a.http, a.resp, b.http, b.resp]) {
    for (const buffer of [true, false]) {
      const c = new Client([url], { buffer, batch: 8 });
      try {
        const s1 = await c.snowflake();
        const s2 = await c.snowflake();
        assert.equal(typeof s1, "bigint");
        assert.ok(s2 > s1, `${url}: ${s2} after ${s1}`);
        const g1 = await c.segment("order");
        const g2 = await c.segment("order");
        assert.equal(typeof g1, "bigint");
        assert.ok(g2 > g1 && g1 > 0n);
        assert.match(await c.uuid7(), UUID7);
        assert.match(await c.ulid(), ULID);
        const decoded = parse(s1);
        assert.ok(Math.abs(decoded.unix_ms - Date.now()) < 60_000, `${url}: ${decoded.time}`);
        workers.set(url, decoded.worker);
      } finally {
        c.close();
      }
    }
  }
  // One registry: the two servers hold different worker ids, each on both protocols.
  assert.equal(workers.get(a.http), workers.get(a.resp));
  assert.equal(workers.get(b.http), workers.get(b.resp));
  assert.notEqual(workers.get(a.http), workers.get(b.http));
});

test("a wrong request rejects at once with IdforgeError, without failover", async () => {
  for (const servers of [[a.http, b.resp], [a.resp, b.http]]) {
    const c = new Client(servers);
    try {
      const started = Date.now();
      await assert.rejects(c.segment("no-such-tag"), (e) => {
        assert.ok(e instanceof IdforgeError);
        assert.ok(!(e instanceof IdforgeUnavailable));
        assert.equal(e.code, "not_found");
        assert.match(e.message, /unknown tag 'no-such-tag'/);
        assert.equal(e.server, servers[0]);
        return true;
      });
      assert.ok(Date.now() - started < 500);
      assert.equal(serverStats(c, servers[0]).requests, 1);
      assert.equal(serverStats(c, servers[0]).failures, 0);
      assert.equal(serverStats(c, servers[1]).requests, 0, "the second server was asked");
    } finally {
      c.close();
    }
  }
  // A count above the server's limits.max_count is wrong everywhere too.
  const big = new Client([a.resp, b.http], { batch: 20_000 });
  await assert.rejects(big.snowflake(), (e) => e instanceof IdforgeError && e.code === "out_of_range");
  assert.equal(serverStats(big, b.http).requests, 0);
  big.close();
});

test("the buffer serves without a round trip, refills in the background, stays bounded", async () => {
  const c = new Client([a.http], { batch: 10, refillBelow: 4 });
  try {
    const first = await c.segment("order");
    assert.equal(serverStats(c, a.http).requests, 1);
    // 9 left: five more come from the buffer, no request.
    for (let i = 1; i <= 5; i++) assert.equal(await c.segment("order"), first + BigInt(i));
    assert.equal(serverStats(c, a.http).requests, 1);
    await c.segment("order"); // 3 left, below 4: a refill starts
    assert.equal(c.stats().buffers[0].refilling, true);
    await sleep(100);
    const buffer = c.stats().buffers[0];
    assert.equal(buffer.refilling, false);
    assert.equal(buffer.size, 13);
    assert.equal(serverStats(c, a.http).requests, 2);
    // Taken steadily, the buffer never holds more than batch + refillBelow.
    const seen = new Set();
    for (let i = 0; i < 200; i++) {
      seen.add(await c.segment("order"));
      if (i % 3 === 0) await yieldToIo();
      assert.ok(c.stats().buffers[0].size <= 14);
    }
    assert.equal(seen.size, 200);
  } finally {
    c.close();
  }
});

test("time-ordered IDs older than maxAgeMs are dropped; segment IDs are kept", async () => {
  const c = new Client([b.resp], { batch: 50, maxAgeMs: 200 });
  try {
    const s1 = await c.snowflake();
    const g1 = await c.segment("order");
    await sleep(400);
    const s2 = await c.snowflake();
    const g2 = await c.segment("order");
    // s2 comes from a new request (the server's cached clock may lag a little under load).
    assert.equal(serverStats(c, b.resp).requests, 3, "a stale Snowflake ID was served");
    assert.ok(parse(s2).unix_ms - parse(s1).unix_ms >= 100, `${parse(s1).time} ${parse(s2).time}`);
    assert.equal(g2, g1 + 1n, "segment IDs have no age limit by default");
    const snowflakeBuffer = c.stats().buffers.find((x) => x.kind === "snowflake");
    assert.equal(snowflakeBuffer.dropped, 49);
  } finally {
    c.close();
  }
});

test("a SIGSTOPped server costs one timeout, then is skipped", async () => {
  const timeoutMs = 400;
  const unbuffered = new Client([a.http, b.http], { buffer: false, timeoutMs, backoffMs: 5000 });
  const buffered = new Client([a.resp, b.resp], { batch: 5, refillBelow: 2, timeoutMs, backoffMs: 5000 });
  try {
    await unbuffered.snowflake();
    await buffered.snowflake();
    await a.stop();
    for (const [c, stopped] of [[unbuffered, a.http], [buffered, a.resp]]) {
      const started = Date.now();
      const times = [];
      for (let i = 0; i < 30; i++) {
        const t = Date.now();
        await c.snowflake();
        times.push(Date.now() - t);
        await yieldToIo();
      }
      const total = Date.now() - started;
      // One timeout in all (30 would be 12 s), plus 30 quick calls.
      assert.ok(total < timeoutMs * 4, `30 IDs took ${total} ms: more than one timeout (${times})`);
      assert.ok(total >= timeoutMs - 20, `${total} ms: the stopped server was not waited for`);
      assert.equal(times.filter((t) => t >= timeoutMs * 0.75).length, 1, `slow calls: ${times}`);
      const s = serverStats(c, stopped);
      assert.equal(s.failures, 1);
      assert.match(s.lastError, /no answer within 400 ms/);
      assert.ok(s.backoffLeftMs > 3000);
    }
  } finally {
    await a.cont();
    unbuffered.close();
    buffered.close();
  }
});

test("pulling through kill -9 of each server and its restart loses no request and repeats no ID", async () => {
  const clients = [
    new Client([a.http, b.resp], { batch: 16, timeoutMs: 1000 }),
    new Client([a.resp, b.http], { buffer: false, timeoutMs: 1000 }),
  ];
  const seen = new Set();
  const duplicates = [];
  const errors = [];
  let phase = "both up";
  const perPhase = {};
  let stop = false;
  const pull = async (c, kind) => {
    while (!stop) {
      try {
        const id = kind === "segment" ? await c.segment("order") : await c.snowflake();
        const key = `${kind}:${id}`;
        if (seen.has(key)) duplicates.push(key);
        seen.add(key);
        perPhase[phase] = (perPhase[phase] ?? 0) + 1;
      } catch (e) {
        errors.push(`${phase}: ${e.message}`);
      }
      await yieldToIo();
    }
  };
  const loops = clients.flatMap((c) => [pull(c, "snowflake"), pull(c, "segment")]);
  try {
    await sleep(300);
    phase = "a killed";
    await a.kill9();
    await sleep(300);
    phase = "a restarted";
    await a.start();
    await sleep(300);
    phase = "b killed";
    await b.kill9();
    await sleep(400);
    phase = "b restarted";
    await b.start();
    await sleep(300);
  } finally {
    stop = true;
    await Promise.all(loops);
    for (const c of clients) c.close();
  }
  assert.deepEqual(errors, [], "a call failed");
  assert.deepEqual(duplicates, [], "an ID was issued twice");
  for (const p of ["both up", "a killed", "a restarted", "b killed", "b restarted"]) {
    assert.ok((perPhase[p] ?? 0) > 20, `only ${perPhase[p]} IDs while ${p}: ${JSON.stringify(perPhase)}`);
  }
  // Each client failed over once each way: both servers failed once, and answered after.
  for (const c of clients) {
    for (const s of c.stats().servers) assert.ok(s.answers > 1 && s.lastError !== "", JSON.stringify(s));
  }
});

test("a server still backing off is tried, last, before a request fails", async () => {
  const c = new Client([a.http, b.resp], { buffer: false, backoffMs: 10_000 });
  try {
    await c.snowflake();
    await a.kill9();
    await c.snowflake(); // a refuses: b answers, a backs off for 10 s
    assert.ok(serverStats(c, a.http).backoffLeftMs > 5000);
    await a.start();
    await b.kill9();
    assert.equal(typeof (await c.snowflake()), "bigint"); // b refuses: a, backing off, answers
    assert.equal(c.stats().current, a.http);
    await b.start();
  } finally {
    c.close();
  }
});

test("during a full outage the buffer serves until empty, then IdforgeUnavailable names each server", async () => {
  const c = new Client([a.http, b.resp], { batch: 20, refillBelow: 10, timeoutMs: 500 });
  const unbuffered = new Client([b.http, a.resp], { buffer: false, timeoutMs: 500 });
  try {
    await c.snowflake();
    await unbuffered.snowflake();
    await sleep(50);
    const left = c.stats().buffers[0].size;
    assert.equal(left, 19);
    await Promise.all([a.kill9(), b.kill9()]);
    const started = Date.now();
    for (let i = 0; i < left; i++) await c.snowflake();
    assert.ok(Date.now() - started < 500, "the buffer did not serve at once");
    for (const client of [c, unbuffered]) {
      await assert.rejects(client.snowflake(), (e) => {
        assert.ok(e instanceof IdforgeUnavailable, String(e));
        assert.ok(e instanceof IdforgeError);
        assert.equal(e.code, "unavailable");
        assert.equal(e.servers.length, 2);
        for (const s of e.servers) {
          assert.ok(e.message.includes(s.url), `${s.url} not named in: ${e.message}`);
          assert.match(s.error, /ECONNREFUSED|closed|reset/, s.error);
        }
        return true;
      });
    }
    // A server back: the next call that reaches it gets IDs again.
    await a.start();
    let id;
    for (let i = 0; i < 40 && id === undefined; i++) {
      try {
        id = await c.snowflake();
      } catch (e) {
        assert.ok(e instanceof IdforgeUnavailable);
        await sleep(100);
      }
    }
    assert.equal(typeof id, "bigint");
  } finally {
    c.close();
    unbuffered.close();
  }
});

test("a kept connection the server closed while the application was busy is no failure", async () => {
  const c3 = await cluster.start("c", ["--idle-timeout-ms", "200"]);
  try {
    for (const url of [c3.resp, c3.http]) {
      const c = new Client([url], { buffer: false });
      await c.snowflake();
      const until = Date.now() + 400;
      while (Date.now() < until); // busy: the server's close is not read before the next write
      await c.snowflake();
      assert.equal(serverStats(c, url).failures, 0);
      c.close();
    }
  } finally {
    await c3.kill9();
  }
});

test("close() rejects waiting and later calls", async () => {
  if (!a.child || a.child.exitCode !== null) await a.start();
  const c = new Client([a.http]);
  const pending = c.snowflake();
  c.close();
  await assert.rejects(pending, (e) => e instanceof IdforgeError && e.code === "closed");
  await assert.rejects(c.segment("order"), (e) => e instanceof IdforgeError && e.code === "closed");
});
