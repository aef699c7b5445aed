// The JSON API (docs/api.md, "HTTP") through fetch: Node 18+ and browsers alike.
import { IdforgeError, ServerFailure } from "./errors.js";

// Answers that say the request itself is wrong: every server would say the same.
const WRONG_REQUEST_STATUS = new Set([400, 404, 409]);

function describe(error) {
  // Node's fetch wraps the socket error: "fetch failed", cause "connect ECONNREFUSED ...".
  const cause = error?.cause;
  if (cause && typeof cause === "object") {
    if (cause.message) return cause.code && !cause.message.includes(cause.code) ? `${cause.code}: ${cause.message}` : cause.message;
    if (cause.code) return String(cause.code);
  }
  return error?.message ? String(error.message) : String(error);
}

export class HttpServer {
  constructor(url, base) {
    this.url = url;
    this.base = base; // no trailing slash
  }

  /**
   * Fetches `count` IDs of `kind` (and `tag`): BigInts for snowflake and segment, strings
   * for uuid7 and ulid. Rejects with IdforgeError (a wrong request) or
   * ServerFailure (anything that another server might answer).
   */
  async fetchIds(kind, tag, count, timeoutMs, closeSignal) {
    const path = kind === "segment" ? `/v1/segment/${encodeURIComponent(tag)}` : `/v1/${kind}`;
    const target = `${this.base}${path}?count=${count}`;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onClose = () => controller.abort();
    closeSignal.addEventListener("abort", onClose);
    let status;
    let text;
    try {
      // No custom header, so a cross-origin GET would be a simple request (no preflight).
      const response = await fetch(target, { signal: controller.signal });
      status = response.status;
      text = await response.text();
    } catch (error) {
      if (timedOut) throw new ServerFailure(`no answer within ${timeoutMs} ms`);
      if (closeSignal.aborted) throw new IdforgeError("the client was closed", { code: "closed" });
      throw new ServerFailure(describe(error));
    } finally {
      clearTimeout(timer);
      closeSignal.removeEventListener("abort", onClose);
    }

    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (status === 200) {
      const ids = body?.ids;
      if (!Array.isArray(ids) || ids.length !== count || !ids.every((x) => typeof x === "string")) {
        throw new ServerFailure(`HTTP 200 without ${count} IDs in its body: ${text.slice(0, 200)}`);
      }
      if (kind !== "snowflake" && kind !== "segment") return ids;
      try {
        return ids.map((x) => BigInt(x));
      } catch {
        throw new ServerFailure(`HTTP 200 with an ID that is not a number: ${text.slice(0, 200)}`);
      }
    }
    const code = body?.error?.code;
    const message = body?.error?.message ?? text.slice(0, 200);
    if (WRONG_REQUEST_STATUS.has(status)) {
      throw new IdforgeError(message || `HTTP ${status}`, { code: code ?? `http_${status}`, server: this.url, status });
    }
    // 5xx, and any other answer that does not say the request is wrong (a proxy's 401,
    // 403, 429, ...): another server may answer.
    throw new ServerFailure(`HTTP ${status}${code ? ` ${code}` : ""}${message ? `: ${message}` : ""}`);
  }

  close() {}
}
