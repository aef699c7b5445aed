// The Redis protocol (RESP2, docs/api.md "RESP") over node:net. Node.js only: the
// client imports this module lazily, the first time a redis:// server is used, so the
// package still loads in a browser.
import net from "node:net";
import { Buffer } from "node:buffer";
import { IdforgeError, ServerFailure } from "./errors.js";

const NEED_MORE = Symbol("need more bytes");

/** A RESP error reply (`-ERR ...`), as a value: it may sit inside an array. */
export class RespErrorReply {
  constructor(text) {
    this.text = text;
  }
}

/**
 * An incremental RESP2 reply parser: feed() bytes as they come, next() returns one whole
 * reply or NEED_MORE. Simple strings and bulk strings become strings (a null bulk or
 * array: null), integers BigInts, errors RespErrorReply, arrays arrays.
 */
export class RespParser {
  constructor() {
    this.buf = Buffer.alloc(0);
    this.pos = 0;
  }

  feed(chunk) {
    this.buf = this.pos >= this.buf.length ? chunk : Buffer.concat([this.buf.subarray(this.pos), chunk]);
    this.pos = 0;
  }

  /** One reply, or NEED_MORE; throws on bytes that are not RESP2. */
  next() {
    const start = this.pos;
    const value = this.#value();
    if (value === NEED_MORE) this.pos = start;
    return value;
  }

  #line() {
    const end = this.buf.indexOf("\r\n", this.pos);
    if (end < 0) return NEED_MORE;
    const text = this.buf.toString("latin1", this.pos + 1, end);
    this.pos = end + 2;
    return text;
  }

  #length(text) {
    if (!/^-?[0-9]+$/.test(text)) throw new Error(`bad RESP length "${text}"`);
    return Number(text);
  }

  // ":123\r\n", the bulk of an answer of IDs: checked byte by byte, no regular expression.
  #integer() {
    const buf = this.buf;
    const start = this.pos + 1;
    let i = start;
    if (buf[i] === 0x2d) i++; // '-'
    const digits = i;
    while (i < buf.length && buf[i] >= 0x30 && buf[i] <= 0x39) i++;
    if (i + 1 >= buf.length) return NEED_MORE;
    if (i === digits || buf[i] !== 0x0d || buf[i + 1] !== 0x0a) {
      throw new Error(`bad RESP integer "${buf.toString("latin1", start, Math.min(i + 1, start + 30))}"`);
    }
    this.pos = i + 2;
    return BigInt(buf.toString("latin1", start, i));
  }

  #value() {
    if (this.pos >= this.buf.length) return NEED_MORE;
    const type = this.buf[this.pos];
    if (type === 0x3a) return this.#integer(); // ':'
    const line = this.#line();
    if (line === NEED_MORE) return NEED_MORE;
    switch (type) {
      case 0x2b: // '+'
        return line;
      case 0x2d: // '-'
        return new RespErrorReply(line);
      case 0x24: { // '$'
        const n = this.#length(line);
        if (n < 0) return null;
        if (this.buf.length < this.pos + n + 2) return NEED_MORE;
        const text = this.buf.toString("utf8", this.pos, this.pos + n);
        this.pos += n + 2;
        return text;
      }
      case 0x2a: { // '*'
        const n = this.#length(line);
        if (n < 0) return null;
        const items = new Array(n);
        for (let i = 0; i < n; i++) {
          const item = this.#value();
          if (item === NEED_MORE) return NEED_MORE;
          items[i] = item;
        }
        return items;
      }
      default:
        throw new Error(`unexpected RESP type byte 0x${type.toString(16)}`);
    }
  }
}

/** A command as a RESP array of bulk strings. */
export function encodeCommand(args) {
  let out = `*${args.length}\r\n`;
  for (const arg of args) out += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  return out;
}

function describeSocketError(error) {
  if (error?.message) return error.message; // "connect ECONNREFUSED 127.0.0.1:6380"
  return String(error?.code ?? error);
}

/**
 * One connection to one server, with requests pipelined on it: answers come back in
 * order. A timeout, a reset or a bad reply ends the connection and fails every request
 * waiting on it (a later answer could no longer be matched to its request); the next
 * request opens a new one. The socket holds the process open only while requests wait.
 */
class RespConnection {
  constructor(host, port) {
    this.pending = [];
    this.dead = null;
    this.answered = 0;
    this.parser = new RespParser();
    this.socket = net.createConnection({ host, port });
    this.socket.setNoDelay(true);
    this.socket.unref();
    this.socket.on("data", (chunk) => this.#onData(chunk));
    this.socket.on("error", (e) => this.kill(new ServerFailure(describeSocketError(e))));
    this.socket.on("close", () => this.kill(new ServerFailure("connection closed by the server")));
  }

  request(args, timeoutMs) {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject, timer: null };
      entry.timer = setTimeout(() => {
        const error = new ServerFailure(`no answer within ${timeoutMs} ms`);
        error.timedOut = true;
        this.kill(error);
      }, timeoutMs);
      this.pending.push(entry);
      if (this.pending.length === 1) this.socket.ref();
      this.socket.write(encodeCommand(args));
    });
  }

  #onData(chunk) {
    this.parser.feed(chunk);
    for (;;) {
      let reply;
      try {
        reply = this.parser.next();
      } catch (e) {
        this.kill(new ServerFailure(`not a Redis-protocol answer: ${e.message}`));
        return;
      }
      if (reply === NEED_MORE) return;
      const entry = this.pending.shift();
      if (!entry) {
        this.kill(new ServerFailure("an answer to no request"));
        return;
      }
      clearTimeout(entry.timer);
      this.answered++;
      if (this.pending.length === 0) this.socket.unref();
      entry.resolve(reply);
    }
  }

  kill(error) {
    if (this.dead) return;
    this.dead = error;
    if (error instanceof ServerFailure) error.reused = this.answered > 0;
    this.socket.destroy();
    const pending = this.pending;
    this.pending = [];
    for (const entry of pending) {
      clearTimeout(entry.timer);
      entry.reject(error);
    }
  }
}

const COMMANDS = { snowflake: "ID.SNOWFLAKE", uuid7: "ID.UUID7", ulid: "ID.ULID" };
// RESP error codes that say the request itself is wrong (docs/clients.md).
const WRONG_REQUEST_CODES = new Set(["invalid_argument", "out_of_range", "not_found", "already_exists"]);

export class RespServer {
  constructor(url, host, port) {
    this.url = url;
    this.host = host;
    this.port = port;
    this.connection = null;
  }

  /**
   * Fetches `count` IDs: BigInts for snowflake and segment, strings for uuid7 and ulid.
   * Rejects with IdforgeError (a wrong request) or ServerFailure.
   */
  async fetchIds(kind, tag, count, timeoutMs, closeSignal) {
    if (closeSignal.aborted) throw new IdforgeError("the client was closed", { code: "closed" });
    const args = kind === "segment" ? ["ID.NEXT", tag, String(count)] : [COMMANDS[kind], String(count)];
    const started = Date.now();
    let reply;
    try {
      reply = await this.#connection().request(args, timeoutMs);
    } catch (error) {
      // A kept connection the server closed (idle_timeout_ms) just as this request went
      // out: try once more on a new one, within what is left of the timeout. A timeout
      // or a new connection's failure is the server's.
      const left = timeoutMs - (Date.now() - started);
      if (!(error instanceof ServerFailure) || error.timedOut || !error.reused || left <= 0 ||
          closeSignal.aborted) throw error;
      reply = await this.#connection().request(args, left);
    }
    if (reply instanceof RespErrorReply) {
      const match = /^ERR ([a-z_]+): ([\s\S]*)$/.exec(reply.text);
      if (match && WRONG_REQUEST_CODES.has(match[1])) {
        throw new IdforgeError(match[2], { code: match[1], server: this.url });
      }
      // unavailable, clock_backwards, lease_lost, ...; io_error and internal (a 500
      // over HTTP); an unknown command (not an idforge server): another may answer.
      throw new ServerFailure(reply.text);
    }
    const scalar = kind === "snowflake" || kind === "segment" ? "bigint" : "string";
    if (!Array.isArray(reply) || reply.length !== count || !reply.every((x) => typeof x === scalar)) {
      throw new ServerFailure(`answer to ${args[0]} is not ${count} IDs`);
    }
    return reply;
  }

  #connection() {
    if (!this.connection || this.connection.dead) {
      this.connection = new RespConnection(this.host, this.port);
    }
    return this.connection;
  }

  close() {
    this.connection?.kill(new IdforgeError("the client was closed", { code: "closed" }));
    this.connection = null;
  }
}
