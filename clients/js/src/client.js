// The client of docs/clients.md: a list of servers with failover and back-off, and a
// local buffer per kind and tag refilled in the background.
import { IdforgeError, IdforgeUnavailable, ServerFailure } from "./errors.js";
import { HttpServer } from "./http.js";
import { parse } from "./parse.js";

const isNode = () => typeof globalThis.process?.versions?.node === "string";

// node:net is imported only when a redis:// server is first used, so that this module
// loads in a browser (which can use http:// servers only).
let respModule = null;
const loadResp = () => (respModule ??= import("./resp.js"));

const closedError = () => new IdforgeError("the client was closed", { code: "closed" });

function intOption(options, name, fallback, min, max = Number.MAX_SAFE_INTEGER) {
  const value = options[name];
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new TypeError(`option ${name} must be an integer, got ${String(value)}`);
  }
  if (value < min || value > max) throw new RangeError(`option ${name} must be from ${min} to ${max}, got ${value}`);
  return value;
}

const KNOWN_OPTIONS = new Set([
  "timeoutMs", "batch", "refillBelow", "maxAgeMs", "segmentMaxAgeMs", "backoffMs", "maxBackoffMs", "buffer",
]);

// One server of the list and its back-off state.
class Endpoint {
  constructor(url) {
    let parsed;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(`server "${url}" is not a URL like http://HOST:PORT or redis://HOST:PORT`);
    }
    this.url = url.replace(/\/+$/, "");
    this.failures = 0; // failures in a row
    this.until = 0; // Date.now() at which its back-off period ends
    this.lastFailAt = 0;
    this.lastError = "";
    this.requests = 0;
    this.answers = 0;
    if (parsed.protocol === "http:" || parsed.protocol === "https:") {
      this.transport = new HttpServer(this.url, parsed.origin + parsed.pathname.replace(/\/+$/, ""));
    } else if (parsed.protocol === "redis:") {
      if (!isNode()) {
        throw new TypeError(`server ${url}: the Redis protocol needs Node.js (node:net); a browser can use http:// servers only`);
      }
      if (!parsed.hostname) throw new TypeError(`server "${url}" has no host`);
      this.transport = null; // made on first use, once resp.js is loaded
      this.host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
      this.port = parsed.port === "" ? 6380 : Number(parsed.port);
    } else {
      throw new TypeError(`server "${url}": the protocol must be http:// or redis://`);
    }
  }

  async fetchIds(kind, tag, count, timeoutMs, closeSignal) {
    if (this.transport === null) {
      let resp;
      try {
        resp = await loadResp();
      } catch (e) {
        throw new ServerFailure(`the Redis protocol needs Node.js (node:net): ${e.message}`);
      }
      this.transport ??= new resp.RespServer(this.url, this.host, this.port);
    }
    return this.transport.fetchIds(kind, tag, count, timeoutMs, closeSignal);
  }

  close() {
    this.transport?.close();
  }
}

// The buffer of one kind (and tag): batches in the order they came, each with the time
// its request was sent (its IDs were made after that).
class IdQueue {
  constructor(kind, tag, maxAgeMs) {
    this.kind = kind;
    this.tag = tag;
    this.maxAgeMs = maxAgeMs; // 0: no age limit
    this.batches = [];
    this.size = 0;
    this.refill = null; // the refill in progress, a promise
    this.retryAt = 0; // no background refill before this, after one failed
    this.lastError = null;
    this.dropped = 0;
  }

  push(ids, at) {
    if (ids.length === 0) return;
    this.batches.push({ ids, pos: 0, at });
    this.size += ids.length;
  }

  dropStale(now) {
    while (this.batches.length > 0 && now - this.batches[0].at > this.maxAgeMs) {
      const batch = this.batches.shift();
      this.size -= batch.ids.length - batch.pos;
      this.dropped += batch.ids.length - batch.pos;
    }
  }

  take() {
    const batch = this.batches[0];
    const id = batch.ids[batch.pos++];
    if (batch.pos === batch.ids.length) this.batches.shift();
    this.size--;
    return id;
  }

  clear() {
    this.batches = [];
    this.size = 0;
  }
}

export class Client {
  /**
   * @param {string[]|string} servers  `http://HOST:PORT` (JSON API) and/or `redis://HOST:PORT`
   *   (Redis protocol, Node.js only), tried in this order
   * @param {object} [options]
   * @param {number} [options.timeoutMs=1000]  per request: connect, send and the whole answer
   * @param {number} [options.batch=256]  IDs per request; at most the server's limits.max_count
   * @param {number} [options.refillBelow]  refill in the background below this many (batch / 2)
   * @param {number} [options.maxAgeMs=2000]  drop Snowflake/UUIDv7/ULID IDs fetched longer ago (0: never)
   * @param {number} [options.segmentMaxAgeMs=0]  the same for segment IDs (0: never)
   * @param {number} [options.backoffMs=500]  skip a failed server this long, doubling per failure in a row
   * @param {number} [options.maxBackoffMs=30000]  up to this
   * @param {boolean} [options.buffer=true]  false: every call is one request
   */
  constructor(servers, options = {}) {
    const list = typeof servers === "string" ? [servers] : servers;
    if (!Array.isArray(list) || list.length === 0) {
      throw new TypeError("a Client needs a list of servers, e.g. [\"http://127.0.0.1:8080\"]");
    }
    if (options === null || typeof options !== "object") throw new TypeError("options must be an object");
    for (const key of Object.keys(options)) {
      if (!KNOWN_OPTIONS.has(key)) throw new TypeError(`unknown option ${key}`);
    }
    this._servers = list.map((url) => {
      if (typeof url !== "string") throw new TypeError(`a server is a URL string, not ${typeof url}`);
      return new Endpoint(url);
    });
    this._timeoutMs = intOption(options, "timeoutMs", 1000, 1);
    this._batch = intOption(options, "batch", 256, 1);
    this._refillBelow = intOption(options, "refillBelow", Math.floor(this._batch / 2), 0, this._batch);
    this._maxAgeMs = intOption(options, "maxAgeMs", 2000, 0);
    this._segmentMaxAgeMs = intOption(options, "segmentMaxAgeMs", 0, 0);
    this._backoffMs = intOption(options, "backoffMs", 500, 0);
    this._maxBackoffMs = intOption(options, "maxBackoffMs", 30000, 0);
    if (options.buffer !== undefined && typeof options.buffer !== "boolean") {
      throw new TypeError("option buffer must be true or false");
    }
    this._buffered = options.buffer !== false && this._batch > 1;
    this._current = 0; // the server that answered last
    this._closed = false;
    this._closer = new AbortController();
    this._queues = new Map(); // "kind" or "segment:TAG" -> IdQueue
  }

  /** The next Snowflake ID, a BigInt. */
  snowflake() {
    return this._next("snowflake", "");
  }

  /** The next ID of segment tag `tag`, a BigInt. */
  segment(tag) {
    if (typeof tag !== "string") return Promise.reject(new TypeError(`a tag is a string, not ${typeof tag}`));
    return this._next("segment", tag);
  }

  /** The next UUIDv7, as text. */
  uuid7() {
    return this._next("uuid7", "");
  }

  /** The next ULID, as text. */
  ulid() {
    return this._next("ulid", "");
  }

  /**
   * Drops the buffers (their IDs are never issued again: a gap), ends every connection
   * and rejects calls still waiting, and any later call, with IdforgeError code "closed".
   */
  close() {
    if (this._closed) return;
    this._closed = true;
    this._closer.abort();
    for (const server of this._servers) server.close();
    for (const queue of this._queues.values()) queue.clear();
  }

  /** What the client sees now: each server's back-off state and each buffer's size. */
  stats() {
    const now = Date.now();
    return {
      current: this._servers[this._current].url,
      servers: this._servers.map((s) => ({
        url: s.url,
        failures: s.failures,
        backoffLeftMs: Math.max(0, s.until - now),
        lastError: s.lastError,
        requests: s.requests,
        answers: s.answers,
      })),
      buffers: [...this._queues.values()].map((q) => ({
        kind: q.kind,
        ...(q.kind === "segment" ? { tag: q.tag } : {}),
        size: q.size,
        refilling: q.refill !== null,
        dropped: q.dropped,
        lastError: q.lastError ? q.lastError.message : "",
      })),
    };
  }

  /** Client.parse(id, { layout, epochMs, tickMs }): parse() of parse.js, no server. */
  static parse = parse;

  _queue(kind, tag) {
    const key = kind === "segment" ? `segment:${tag}` : kind;
    let queue = this._queues.get(key);
    if (!queue) {
      const maxAge = kind === "segment" ? this._segmentMaxAgeMs : this._maxAgeMs;
      queue = new IdQueue(kind, tag, maxAge);
      this._queues.set(key, queue);
    }
    return queue;
  }

  _next(kind, tag) {
    if (this._closed) return Promise.reject(closedError());
    if (!this._buffered) return this._request(kind, tag, 1).then((got) => got.ids[0]);
    const queue = this._queue(kind, tag);
    if (queue.maxAgeMs > 0 && queue.size > 0) queue.dropStale(Date.now());
    if (queue.size > 0) {
      const id = queue.take();
      if (queue.size < this._refillBelow) this._backgroundRefill(queue);
      return Promise.resolve(id);
    }
    return this._wait(queue);
  }

  _backgroundRefill(queue) {
    if (queue.refill !== null || this._closed || Date.now() < queue.retryAt) return;
    this._startRefill(queue);
  }

  _startRefill(queue) {
    const refill = this._request(queue.kind, queue.tag, this._batch)
      .then(
        ({ ids, at }) => {
          if (this._closed) throw closedError();
          queue.push(ids, at);
          queue.retryAt = 0;
          queue.lastError = null;
        },
        (error) => {
          queue.lastError = error;
          // In the background, try again once a server's back-off has passed; a caller
          // that finds the buffer empty tries at once.
          queue.retryAt = error instanceof IdforgeUnavailable ? this._nextTryAt() : Date.now() + this._backoffMs;
          throw error;
        },
      )
      .finally(() => {
        queue.refill = null;
      });
    refill.catch(() => {}); // a background refill's failure is kept in lastError, not thrown
    queue.refill = refill;
    return refill;
  }

  // An empty buffer: wait for the refill in progress, or start one, up to timeoutMs for
  // each server (a refill tries each server once, each within timeoutMs).
  async _wait(queue) {
    const started = Date.now();
    const deadline = started + this._timeoutMs * this._servers.length;
    for (;;) {
      await (queue.refill ?? this._startRefill(queue));
      if (this._closed) throw closedError();
      if (queue.size > 0) {
        // The batch just fetched is served even if it took longer than maxAgeMs to come.
        const id = queue.take();
        if (queue.size < this._refillBelow) this._backgroundRefill(queue);
        return id;
      }
      if (Date.now() >= deadline) {
        throw new IdforgeUnavailable(
          `no ${queue.kind} ID within ${Date.now() - started} ms: other callers took each batch fetched meanwhile`,
          this._report(new Map()),
        );
      }
    }
  }

  _nextTryAt() {
    return Math.max(Date.now(), Math.min(...this._servers.map((s) => s.until)));
  }

  _failed(server, message, startedAt) {
    server.lastError = message;
    // A request sent before the failure already counted (concurrent requests caught by
    // one outage) is part of that failure, not another one in a row.
    if (startedAt < server.lastFailAt) return;
    server.failures++;
    server.lastFailAt = Date.now();
    const period = Math.min(this._backoffMs * 2 ** Math.min(server.failures - 1, 40), this._maxBackoffMs);
    server.until = server.lastFailAt + period;
  }

  _report(errors) {
    const now = Date.now();
    return this._servers.map((s, k) => {
      let error = errors.get(k);
      if (error === undefined) {
        error = s.until > now
          ? `skipped: backing off ${s.until - now} ms more after ${s.failures} failure${s.failures === 1 ? "" : "s"} in a row (last: ${s.lastError})`
          : `not tried${s.lastError ? ` (last error: ${s.lastError})` : ""}`;
      }
      return { url: s.url, error };
    });
  }

  // One request for `count` IDs with failover, each server tried at most once: from the
  // server that answered last, in list order, those not backing off; when every server
  // left is backing off, the one whose period ends first. Resolves with { ids, at } (at:
  // when the successful attempt was sent).
  async _request(kind, tag, count) {
    const servers = this._servers;
    const n = servers.length;
    const tried = new Array(n).fill(false);
    const errors = new Map();
    for (;;) {
      if (this._closed) throw closedError();
      const now = Date.now();
      let pick = -1;
      for (let i = 0; i < n; i++) {
        const k = (this._current + i) % n;
        if (!tried[k] && servers[k].until <= now) {
          pick = k;
          break;
        }
      }
      if (pick < 0) {
        // Every server left is backing off: the one whose period ends first, rather than
        // failing without trying it.
        for (let k = 0; k < n; k++) {
          if (!tried[k] && (pick < 0 || servers[k].until < servers[pick].until)) pick = k;
        }
      }
      if (pick < 0) {
        const report = this._report(errors);
        throw new IdforgeUnavailable(
          `no idforge server could answer: ${report.map((r) => `${r.url} (${r.error})`).join("; ")}`,
          report,
        );
      }
      tried[pick] = true;
      const server = servers[pick];
      const at = Date.now();
      server.requests++;
      try {
        const ids = await server.fetchIds(kind, tag, count, this._timeoutMs, this._closer.signal);
        server.failures = 0;
        server.until = 0;
        server.answers++;
        this._current = pick;
        return { ids, at };
      } catch (error) {
        if (this._closed) throw closedError();
        if (error instanceof IdforgeError) {
          // The server answered that the request is wrong: every server would.
          server.failures = 0;
          server.until = 0;
          server.answers++;
          this._current = pick;
          throw error;
        }
        if (!(error instanceof ServerFailure)) throw error;
        this._failed(server, error.message, at);
        errors.set(pick, error.message);
      }
    }
  }
}
