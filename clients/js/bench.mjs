// Benchmark (not a test): IDs per second from the client, against what they compare with.
//   1. snowflake() with the buffer vs. a plain in-process counter behind the same
//      promise-returning call, in the same run;
//   2. snowflake() without the buffer (one request per ID, over redis:// and http://) vs.
//      one RESP request per ID the way redis-cli sends them (a raw socket, one command,
//      wait for its answer, next; and `redis-cli -r N` itself when it is installed).
// It starts its own `idforge serve` ($IDFORGE_BIN, default build/idforge) on loopback.
// Usage: node bench.mjs [seconds per measurement, default 1.5]
import net from "node:net";
import { spawnSync } from "node:child_process";
import { Client } from "./src/index.js";
import { Cluster } from "./test-support/servers.mjs";

const seconds = Number(process.argv[2] ?? 1.5);

const turn = () => new Promise((resolve) => setImmediate(resolve));

// Calls next() in a loop for `seconds`. With `yieldEvery`, the loop gives the event loop
// a turn after that many IDs, as an application between its own requests does; without,
// it never does, so a refill in the background can complete only when the buffer is
// empty and next() waits for it.
async function measure(name, next, yieldEvery = 0) {
  for (let i = 0; i < 2000; i++) await next(); // warm up
  const until = performance.now() + seconds * 1000;
  let n = 0;
  const start = performance.now();
  while (performance.now() < until) {
    for (let i = 0; i < 1000; i++) {
      await next();
      if (yieldEvery && i % yieldEvery === 0) await turn();
    }
    n += 1000;
  }
  const rate = n / ((performance.now() - start) / 1000);
  console.log(`${name.padEnd(58)} ${Math.round(rate).toLocaleString("en-US").padStart(12)} IDs/s`);
  return rate;
}

// One command, wait for its one-line answer (":N\r\n"), send the next: what redis-cli does.
function rawResp(port) {
  const socket = net.createConnection({ host: "127.0.0.1", port });
  socket.setNoDelay(true);
  const command = "*1\r\n$12\r\nID.SNOWFLAKE\r\n";
  let waiting = null;
  let pending = "";
  socket.setEncoding("latin1");
  socket.on("data", (text) => {
    pending += text;
    const end = pending.indexOf("\r\n");
    if (end >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 2);
      const resolve = waiting;
      waiting = null;
      resolve(BigInt(line.slice(1)));
    }
  });
  return {
    ready: new Promise((resolve) => socket.once("connect", resolve)),
    next: () => new Promise((resolve) => {
      waiting = resolve;
      socket.write(command);
    }),
    close: () => socket.destroy(),
  };
}

const cluster = new Cluster();
try {
  const server = await cluster.start("bench");
  console.log(`idforge serve at ${server.http}/ and ${server.resp}; ${seconds} s per line; node ${process.version}\n`);

  console.log("With the buffer (batch 256, the default), from the same process:");
  let counter = 0n;
  const plain = () => Promise.resolve(++counter);
  for (const yieldEvery of [0, 64]) {
    console.log(yieldEvery ? `- a turn of the event loop every ${yieldEvery} IDs:` : "- a tight loop (await next(), nothing else):");
    const counterRate = await measure("plain in-process counter (Promise.resolve(++n))", plain, yieldEvery);
    for (const url of [server.resp, server.http]) {
      const c = new Client([url]);
      const rate = await measure(`client.snowflake(), buffered, ${url.split(":")[0]}://`, () => c.snowflake(), yieldEvery);
      console.log(`${"".padEnd(58)} ${(rate / counterRate * 100).toFixed(0).padStart(11)}% of the counter`);
      c.close();
    }
    const big = new Client([server.resp], { batch: 4096 });
    await measure("client.snowflake(), buffered, batch 4096, redis://", () => big.snowflake(), yieldEvery);
    big.close();
  }

  // The cost of one next() that the buffer serves, apart from refills: a buffer of
  // 10,000 filled once (refillBelow 0: no refill while 9,999 are taken).
  const full = new Client([server.resp], { batch: 10_000, refillBelow: 0 });
  let best = 0;
  for (let round = 0; round < 20; round++) {
    await full.snowflake();
    const t0 = performance.now();
    for (let i = 0; i < 9_999; i++) await full.snowflake();
    best = Math.max(best, 9_999 / ((performance.now() - t0) / 1000));
  }
  full.close();
  console.log(`${"client.snowflake() served from a filled buffer (best of 20)".padEnd(58)} ${Math.round(best).toLocaleString("en-US").padStart(12)} IDs/s`);

  console.log("\nWithout the buffer: one request per ID:");
  const raw = rawResp(server.respPort);
  await raw.ready;
  const rawRate = await measure("raw RESP, one ID.SNOWFLAKE per round trip (redis-cli's way)", raw.next);
  raw.close();
  for (const url of [server.resp, server.http]) {
    const c = new Client([url], { buffer: false });
    const rate = await measure(`client.snowflake(), buffer: false, ${url.split(":")[0]}://`, () => c.snowflake());
    console.log(`${"".padEnd(58)} ${(rate / rawRate * 100).toFixed(0).padStart(11)}% of raw RESP`);
    c.close();
  }
  const n = 20000;
  const t = performance.now();
  const cli = spawnSync("redis-cli", ["-p", String(server.respPort), "-r", String(n), "ID.SNOWFLAKE"],
                        { stdio: ["ignore", "ignore", "ignore"] });
  if (cli.status === 0) {
    const rate = n / ((performance.now() - t) / 1000);
    console.log(`${`redis-cli -r ${n} ID.SNOWFLAKE (the process itself)`.padEnd(58)} ${Math.round(rate).toLocaleString("en-US").padStart(12)} IDs/s`);
  } else {
    console.log("redis-cli not found: its line is skipped (Debian: redis-tools)");
  }
} finally {
  await cluster.close();
}
