package dev.idforge.client;

/**
 * An error of the idforge client (docs/clients.md, "Errors").
 *
 * <p>Thrown as it is when a server said the request itself is wrong: {@link #code()} is
 * the server's code ({@code not_found}, {@code invalid_argument}, {@code out_of_range},
 * {@code already_exists}), {@link #getMessage()} its text, {@link #server()} the URL of
 * the server that answered and {@link #status()} the HTTP status (0 for the Redis
 * protocol). Such a request is never retried on another server: every server would give
 * the same answer. A call on a closed client throws one with code {@code closed};
 * {@link IdforgeUnavailableException}, a subclass, says that no server could answer.
 *
 * <p>Unchecked, as a client that can fail over on its own leaves little for a caller to
 * do at each call but pass the error on.
 */
public class IdforgeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String code;
  private final String server;
  private final int status;

  /** An error with the server's code and text, the server's URL and its HTTP status. */
  public IdforgeException(String message, String code, String server, int status) {
    super(message);
    this.code = code;
    this.server = server;
    this.status = status;
  }

  /** An error that no server gave (code {@code closed}, {@code interrupted}, ...). */
  public IdforgeException(String message, String code) {
    this(message, code, null, 0);
  }

  /** The server's error code, or the client's ({@code closed}, {@code unavailable}). */
  public String code() {
    return code;
  }

  /** The URL of the server that answered, or null. */
  public String server() {
    return server;
  }

  /** The HTTP status of the answer; 0 for the Redis protocol or no answer. */
  public int status() {
    return status;
  }

  /** "code: message (from URL)". */
  @Override
  public String toString() {
    return code + ": " + getMessage() + (server != null ? " (from " + server + ")" : "");
  }

  /**
   * The same error as a new instance: one failed refill is reported to every caller that
   * waited for it, each with a stack trace of its own.
   */
  IdforgeException copy() {
    IdforgeException e = new IdforgeException(getMessage(), code, server, status);
    e.initCause(this);
    return e;
  }
}
