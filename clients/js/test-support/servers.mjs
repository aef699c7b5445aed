// Real `idforge serve` processes for the client's tests: loopback ports, temporary data
// directories, one shared worker-id registry and segment store (so the servers hold
// different worker ids and share the segment counters), kill -9, SIGSTOP and restart.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
/** The idforge binary: $IDFORGE_BIN, else build/idforge of this checkout. */
export const IDFORGE_BIN = process.env.IDFORGE_BIN || path.resolve(here, "../../../build/idforge");

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `idforge ARGS...` to its end; returns { status, stdout, stderr }. */
export function idforge(...args) {
  const run = spawnSync(IDFORGE_BIN, args, { encoding: "utf8", timeout: 10_000 });
  if (run.error) throw run.error;
  return run;
}

const live = new Set();
process.on("exit", () => {
  for (const server of live) {
    try {
      process.kill(server.child.pid, "SIGKILL");
    } catch {}
  }
});

export class Server {
  constructor(cluster, name, extraArgs = []) {
    this.cluster = cluster;
    this.name = name;
    this.extraArgs = extraArgs;
    this.dataDir = path.join(cluster.dir, name);
    this.httpPort = 0;
    this.respPort = 0;
    this.child = null;
    this.stderr = "";
  }

  get http() {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  get resp() {
    return `redis://127.0.0.1:${this.respPort}`;
  }

  /** Starts (or restarts, on the same ports, data dir and identity) and waits until it listens. */
  async start() {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#spawn();
        return this;
      } catch (error) {
        // A port of the run before may still be held for a moment after kill -9.
        if (attempt >= 20 || this.httpPort === 0 || !/in use|bind/i.test(error.message)) throw error;
        await sleep(100);
      }
    }
  }

  #spawn() {
    const shared = this.cluster.shared;
    const args = [
      "serve",
      "--http", `127.0.0.1:${this.httpPort}`,
      "--resp", `127.0.0.1:${this.respPort}`,
      "--data-dir", this.dataDir,
      "--registry", `local:${shared}/workers`,
      "--store", `sqlite:${shared}/segments.db`,
      "--identity", this.name,
      "--io-threads", "1",
      "--worker-threads", "1",
      "--log-level", "warn",
      ...this.extraArgs,
    ];
    const child = spawn(IDFORGE_BIN, args, { stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    this.stderr = "";
    live.add(this);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text) => {
      this.stderr += text;
    });
    child.on("exit", () => live.delete(this));
    return new Promise((resolve, reject) => {
      let out = "";
      let http = 0;
      let resp = 0;
      const timer = setTimeout(() => fail(new Error(`${this.name}: not listening after 10 s`)), 10_000);
      const fail = (error) => {
        clearTimeout(timer);
        child.kill("SIGKILL");
        reject(error);
      };
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (text) => {
        out += text;
        const h = /^idforge serve: http http:\/\/127\.0\.0\.1:(\d+)\//m.exec(out);
        const r = /^idforge serve: resp redis:\/\/127\.0\.0\.1:(\d+)/m.exec(out);
        if (h) http = Number(h[1]);
        if (r) resp = Number(r[1]);
        if (http && resp) {
          clearTimeout(timer);
          this.httpPort = http;
          this.respPort = resp;
          resolve();
        }
      });
      child.on("exit", (code, signal) => {
        if (!(http && resp)) {
          clearTimeout(timer);
          reject(new Error(`${this.name}: idforge serve exited (${code ?? signal}) before listening: ${this.stderr}`));
        }
      });
    });
  }

  /** Sends `signal`; for SIGKILL and SIGTERM, waits until the process is gone. */
  async signal(signal) {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill(signal);
    if (signal === "SIGKILL" || signal === "SIGTERM") await gone;
  }

  kill9() {
    return this.signal("SIGKILL");
  }

  stop() {
    return this.signal("SIGSTOP");
  }

  cont() {
    return this.signal("SIGCONT");
  }

  async shutdown() {
    await this.signal("SIGCONT");
    await this.signal("SIGKILL");
  }
}

/** Servers sharing one registry and one segment store, in a temporary directory. */
export class Cluster {
  constructor() {
    this.dir = mkdtempSync(path.join(tmpdir(), "idforge-js-client-"));
    this.shared = path.join(this.dir, "shared");
    mkdirSync(this.shared);
    this.servers = [];
  }

  /** Creates a segment tag in the shared store. */
  createTag(tag, step = 1000) {
    const run = idforge("tag", "create", tag, "--step", String(step), "--store", `sqlite:${this.shared}/segments.db`);
    if (run.status !== 0) throw new Error(`idforge tag create ${tag}: ${run.stderr}`);
  }

  /** Starts a server; `extraArgs` are more flags of `idforge serve`. */
  async start(name, extraArgs = []) {
    const server = new Server(this, name, extraArgs);
    this.servers.push(server);
    return server.start();
  }

  async close() {
    for (const server of this.servers) await server.shutdown();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
