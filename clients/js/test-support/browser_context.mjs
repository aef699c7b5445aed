// Loads the package's entry in a context with a browser's globals only (no process,
// Buffer, require, no node: module), then fetches IDs from an http:// "server" (a fetch
// that answers as idforge does) and decodes one. Prints "ok" when all holds.
// Run with: node --experimental-vm-modules test-support/browser_context.mjs
import vm from "node:vm";
import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const entry = pathToFileURL(path.resolve(here, "../src/index.js")).href;

const requested = [];
async function fakeFetch(url, init) {
  requested.push(String(url));
  if (init?.signal?.aborted) throw new Error("aborted");
  const u = new URL(url);
  const count = Number(u.searchParams.get("count"));
  if (u.pathname === "/v1/segment/nope") {
    return new Response('{"error":{"code":"not_found","message":"unknown tag \'nope\'"}}', { status: 404 });
  }
  const ids = Array.from({ length: count }, (_, i) =>
    u.pathname === "/v1/uuid7" ? `01a21618-1db9-767d-921a-5a7e28b89b${String(i).padStart(2, "0")}` : String(910499571847892992n + BigInt(i)));
  return new Response(JSON.stringify({ kind: "x", ids }), { status: 200 });
}

// What a page has: no process, Buffer, require, module, global.
const context = vm.createContext({
  fetch: fakeFetch, Response, URL, AbortController, AbortSignal, EventTarget, Event,
  setTimeout, clearTimeout, queueMicrotask, TextEncoder, TextDecoder, console,
});
for (const name of ["process", "Buffer", "require", "module", "global"]) {
  if (vm.runInContext(`typeof ${name}`, context) !== "undefined") throw new Error(`the context has ${name}`);
}

const modules = new Map();
async function load(url) {
  if (modules.has(url)) return modules.get(url);
  const module = new vm.SourceTextModule(readFileSync(fileURLToPath(url), "utf8"), {
    identifier: url,
    context,
    importModuleDynamically: () => {
      throw new Error("dynamic import is not expected on the http:// path");
    },
  });
  modules.set(url, module);
  return module;
}

async function linker(specifier, referencing) {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) {
    throw new Error(`${referencing.identifier} imports "${specifier}": a browser cannot load it`);
  }
  return load(new URL(specifier, referencing.identifier).href);
}

const main = new vm.SourceTextModule(`
  import { Client, IdforgeError, parse } from "./index.js";
  const c = new Client(["http://idforge.example:8080"], { batch: 4 });
  const a = await c.snowflake();
  const b = await c.snowflake();
  if (typeof a !== "bigint" || b !== a + 1n) throw new Error("snowflake: " + a + " " + b);
  const u = await c.uuid7();
  if (!/^01a21618-/.test(u)) throw new Error("uuid7: " + u);
  let wrong;
  try { await c.segment("nope"); } catch (e) { wrong = e; }
  if (!(wrong instanceof IdforgeError) || wrong.code !== "not_found") throw new Error("segment(nope): " + wrong);
  if (parse(a).worker !== 25) throw new Error("parse: " + JSON.stringify(parse(a).worker));
  let redis;
  try { new Client(["redis://127.0.0.1:6380"]); } catch (e) { redis = e; }
  if (!(redis instanceof TypeError) || !/Node/.test(redis.message)) throw new Error("redis:// in a browser: " + redis);
  c.close();
  globalThis.result = "ok";
`, { identifier: new URL("./browser-check.js", entry).href, context });

await main.link(linker);
await main.evaluate();
if (context.result !== "ok") throw new Error("the check did not finish");
if (!requested.some((u) => u.startsWith("http://idforge.example:8080/v1/snowflake?count=4"))) {
  throw new Error(`unexpected requests: ${requested.join(", ")}`);
}
console.log("ok");
