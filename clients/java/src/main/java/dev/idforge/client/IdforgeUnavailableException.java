package dev.idforge.client;

import java.util.List;

/**
 * No server could answer: each failed, timed out or was backing off (code
 * {@code unavailable}). {@link #servers()} lists every server of the client and why, in
 * the order of the client's list; the message says the same.
 */
public class IdforgeUnavailableException extends IdforgeException {
  private static final long serialVersionUID = 1L;

  /** One server of the client and why it gave no IDs. */
  public record ServerError(String url, String error) {
    @Override
    public String toString() {
      return url + " " + error;
    }
  }

  private final List<ServerError> servers;

  public IdforgeUnavailableException(String message, List<ServerError> servers) {
    super(message, "unavailable");
    this.servers = List.copyOf(servers);
  }

  /** Every server of the client, in list order, and why it gave no IDs. */
  public List<ServerError> servers() {
    return servers;
  }

  @Override
  public String toString() {
    return getMessage();
  }

  @Override
  IdforgeUnavailableException copy() {
    IdforgeUnavailableException e = new IdforgeUnavailableException(getMessage(), servers);
    e.initCause(this);
    return e;
  }
}
