package dev.idforge.client;

import dev.idforge.client.IdforgeUnavailableException.ServerError;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * A client's servers and which one a request goes to (docs/clients.md, "The behaviour"):
 * the one that answered last first, then the others in list order; one backing off is
 * skipped, each failure in a row doubling its period up to maxBackoffMs. Kept apart from
 * {@link Client} so that these rules and the one lock guarding them read in one place;
 * a call without the buffer and a refill of {@link IdBuffers} both ask through here.
 */
final class Failover {
  final List<Endpoint> servers;
  private final int timeoutMs;
  private final long backoffMs;
  private final long maxBackoffMs;
  private final BooleanSupplier clientClosed;

  private final Object lock = new Object(); // current and each Endpoint's back-off state
  private int current; // the server that answered last

  Failover(List<Endpoint> servers, int timeoutMs, long backoffMs, long maxBackoffMs, BooleanSupplier clientClosed) {
    this.servers = List.copyOf(servers);
    this.timeoutMs = timeoutMs;
    this.backoffMs = backoffMs;
    this.maxBackoffMs = maxBackoffMs;
    this.clientClosed = clientClosed;
  }

  /** The servers' URLs as the client writes them ({@code http://HOST:PORT}). */
  List<String> urls() {
    List<String> out = new ArrayList<>();
    for (Endpoint s : servers) out.add(s.url);
    return out;
  }

  /** Each server's failures in a row, back-off left, last error and whether it answered last. */
  List<Client.ServerState> states() {
    List<Client.ServerState> out = new ArrayList<>();
    synchronized (lock) {
      long now = Clock.now();
      for (int i = 0; i < servers.size(); i++) {
        Endpoint s = servers.get(i);
        out.add(new Client.ServerState(s.url, s.failures, Math.max(0, Clock.roundMs(s.until - now)),
            s.lastError, i == current));
      }
    }
    return out;
  }

  /** Ends every connection: a request under way fails at once. */
  void close() {
    for (Endpoint s : servers) s.close();
  }

  /**
   * {@code count} IDs from the first server that answers: from the one that answered
   * last, in list order, those not backing off; then, when mustTry, those backing off,
   * the one whose period ends first first. Each server at most once, each try within
   * timeoutMs and the deadline (0: none). Null when mustTry is false and every server
   * was backing off.
   */
  Batch request(Kind kind, String tag, int count, boolean mustTry, long deadline) {
    int n = servers.size();
    int start;
    synchronized (lock) {
      start = current;
    }
    String[] tried = new String[n];
    boolean any = false;
    for (int k = 0; k < n; k++) {
      int i = (start + k) % n;
      synchronized (lock) {
        if (Clock.now() < servers.get(i).until) continue;
      }
      if (deadline != 0 && deadline - Clock.now() <= Clock.nanos(1)) break;
      Batch got = attempt(i, kind, tag, count, deadline, tried);
      if (got != null) return got;
      any = true;
    }
    if (!any && !mustTry) return null;
    if (mustTry) {
      // Every server left is backing off: a caller waiting for an ID tries them too, so a
      // server just back answers rather than the call failing untried there.
      List<Integer> rest = new ArrayList<>();
      synchronized (lock) {
        for (int j = 0; j < n; j++) {
          if (tried[j] == null) rest.add(j);
        }
        rest.sort(Comparator.comparingLong(j -> servers.get(j).until));
      }
      for (int i : rest) {
        if (any && deadline != 0 && deadline - Clock.now() <= Clock.nanos(1)) break;
        Batch got = attempt(i, kind, tag, count, deadline, tried);
        if (got != null) return got;
        any = true;
      }
    }
    List<ServerError> errors = serverErrors(tried);
    String what = tag == null ? kind + " IDs" : "segment IDs of tag '" + tag + "'";
    throw new IdforgeUnavailableException("no idforge server could give " + what + ": " + join(errors), errors);
  }

  private Batch attempt(int i, Kind kind, String tag, int count, long deadline, String[] tried) {
    if (clientClosed.getAsBoolean()) throw Client.closedError();
    Endpoint server = servers.get(i);
    long t0 = Clock.now();
    int timeout = timeoutMs;
    if (deadline != 0) timeout = (int) Math.max(1, Math.min(timeout, Clock.roundMs(deadline - t0)));
    try {
      Batch got = server.fetch(kind, tag, count, timeout);
      answered(i);
      got.fetchedAt = t0;
      return got;
    } catch (ServerFailure f) {
      if (clientClosed.getAsBoolean()) throw Client.closedError();
      failed(server, f.reason, t0);
      tried[i] = f.reason;
      return null;
    } catch (IdforgeException e) {
      answered(i); // the server is well; the request is wrong
      throw e;
    }
  }

  private void answered(int i) {
    synchronized (lock) {
      Endpoint s = servers.get(i);
      s.failures = 0;
      s.until = 0;
      s.lastError = "";
      current = i;
    }
  }

  /** For the tests (through Client): counts a failure of server {@code index} now, as a failed request would. */
  void recordFailure(int index, String reason) {
    failed(servers.get(index), reason, Clock.now());
  }

  private void failed(Endpoint server, String reason, long started) {
    synchronized (lock) {
      long now = Clock.now();
      server.lastError = reason;
      if (server.lastFailure >= started) return; // another thread's failure in this same attempt
      server.failures++;
      long period = backoffMs;
      for (int k = 1; k < server.failures && period < maxBackoffMs; k++) period *= 2;
      server.until = now + Clock.nanos(Math.min(period, maxBackoffMs));
      server.lastFailure = now;
    }
  }

  /** When a background refill may start again after one that got no IDs (error null: none tried). */
  long retryTime(IdforgeException error) {
    long now = Clock.now();
    if (error != null && !(error instanceof IdforgeUnavailableException)) {
      return now + Clock.nanos(backoffMs); // a wrong request: not again on every call
    }
    synchronized (lock) {
      long first = Long.MAX_VALUE;
      for (Endpoint s : servers) first = Math.min(first, s.until);
      return Math.max(now, first);
    }
  }

  /** An unavailable error that names each server's state now. */
  IdforgeUnavailableException unavailable(String why) {
    List<ServerError> errors = serverErrors(new String[servers.size()]);
    return new IdforgeUnavailableException(why + "; servers: " + join(errors), errors);
  }

  /** Every server and why: its error in this request, or its back-off, in list order. */
  private List<ServerError> serverErrors(String[] tried) {
    List<ServerError> out = new ArrayList<>();
    synchronized (lock) {
      long now = Clock.now();
      for (int i = 0; i < servers.size(); i++) {
        Endpoint s = servers.get(i);
        String why;
        if (tried[i] != null) {
          why = "failed: " + tried[i];
        } else if (s.until > now) {
          why = "skipped: backing off " + Clock.roundMs(s.until - now) + " ms more after " + s.failures
              + (s.failures == 1 ? " failure" : " failures") + " in a row (last: " + s.lastError + ")";
        } else if (!s.lastError.isEmpty()) {
          why = "last failed: " + s.lastError;
        } else {
          why = "not tried";
        }
        out.add(new ServerError(s.url, why));
      }
    }
    return out;
  }

  private static String join(List<ServerError> errors) {
    StringBuilder out = new StringBuilder();
    for (ServerError e : errors) out.append(out.length() == 0 ? "" : "; ").append(e.url()).append(' ').append(e.error());
    return out.toString();
  }
}
