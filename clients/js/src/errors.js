// The errors a Client rejects with (docs/clients.md, "Errors").

/**
 * A request the servers refused as wrong (an unknown tag, a bad count): every server
 * would give the same answer, so it is not retried elsewhere. `code` is the server's
 * error code (`not_found`, `invalid_argument`, `out_of_range`, ...), `message` its text.
 */
export class IdforgeError extends Error {
  constructor(message, { code = "error", server, status, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "IdforgeError";
    /** The server's error code, e.g. "not_found"; "unavailable" or "closed" from the client. */
    this.code = code;
    /** The URL of the server that answered, when one did. */
    this.server = server;
    /** The HTTP status, for an http:// server's answer. */
    this.status = status;
  }
}

/**
 * No server could answer: each was tried (or is backing off) and failed. `servers` lists
 * every server of the client with why it failed: `[{ url, error }]`.
 */
export class IdforgeUnavailable extends IdforgeError {
  constructor(message, servers = []) {
    super(message, { code: "unavailable" });
    this.name = "IdforgeUnavailable";
    this.servers = servers;
  }
}

/**
 * Internal: one server failed to answer (refused, reset, timed out, a 5xx or a RESP
 * "unavailable"-class error). The request moves on to the next server.
 */
export class ServerFailure extends Error {
  constructor(message) {
    super(message);
    this.name = "ServerFailure";
  }
}
