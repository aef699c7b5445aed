package dev.idforge.client;

import java.io.EOFException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One server of a client: its URL, its back-off state (guarded by {@link Failover}) and its
 * kept-alive connections, and one request for IDs over HTTP/1.1 (the JSON API) or RESP2
 * (the Redis protocol) within a deadline.
 */
final class Endpoint {
  /** docs/clients.md: the answers that say the request itself is wrong. */
  private static final Set<String> WRONG_REQUEST_CODES =
      Set.of("invalid_argument", "out_of_range", "not_found");
  private static final Set<Integer> WRONG_REQUEST_STATUSES = Set.of(400, 404, 409);
  /** Idle connections kept per server; more concurrent requests open their own. */
  private static final int IDLE_CONNECTIONS = 8;

  final boolean http;
  final String host;
  final int port;
  final String url;
  private final String hostHeader;

  private final ArrayDeque<Connection> idle = new ArrayDeque<>();
  private final Set<Connection> busy = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  // Back-off state, guarded by Failover's lock.
  int failures;
  long until; // Clock.now() when its back-off ends; 0: none
  long lastFailure;
  String lastError = "";

  Endpoint(String url) {
    if (url == null) throw new IllegalArgumentException("a server is a URL, got null");
    String text = url.strip();
    int sep = text.indexOf("://");
    String scheme = sep < 0 ? "" : text.substring(0, sep).toLowerCase(Locale.ROOT);
    if (!scheme.equals("http") && !scheme.equals("redis")) {
      throw new IllegalArgumentException("server '" + url
          + "': the scheme must be http:// (the JSON API) or redis:// (the Redis protocol)");
    }
    String rest = text.substring(sep + 3);
    if (rest.endsWith("/")) rest = rest.substring(0, rest.length() - 1);
    if (rest.contains("/") || rest.contains("?") || rest.contains("#")) {
      throw new IllegalArgumentException("server '" + url + "': give only scheme://HOST:PORT");
    }
    if (rest.contains("@")) {
      throw new IllegalArgumentException("server '" + url + "': idforge servers take no user or password");
    }
    String h;
    String portText = null;
    if (rest.startsWith("[")) {
      int close = rest.indexOf(']');
      if (close < 0) throw new IllegalArgumentException("server '" + url + "': an unclosed '[' in the host");
      h = rest.substring(1, close);
      String after = rest.substring(close + 1);
      if (!after.isEmpty()) {
        if (!after.startsWith(":")) throw new IllegalArgumentException("server '" + url + "': text after the host");
        portText = after.substring(1);
      }
    } else {
      int colon = rest.indexOf(':');
      if (colon >= 0 && rest.indexOf(':', colon + 1) >= 0) {
        throw new IllegalArgumentException("server '" + url + "': an IPv6 host is written [::1]");
      }
      h = colon < 0 ? rest : rest.substring(0, colon);
      if (colon >= 0) portText = rest.substring(colon + 1);
    }
    if (h.isEmpty()) throw new IllegalArgumentException("server '" + url + "' has no host");
    int p = scheme.equals("http") ? 80 : 6380; // the URL's default; idforge's RESP port
    if (portText != null) {
      if (portText.isEmpty() || portText.length() > 5 || !IsoTime.allDigits(portText)
          || Integer.parseInt(portText) < 1 || Integer.parseInt(portText) > 65535) {
        throw new IllegalArgumentException("server '" + url + "': port '" + portText + "' is not 1..65535");
      }
      p = Integer.parseInt(portText);
    }
    this.http = scheme.equals("http");
    this.host = h;
    this.port = p;
    String shown = h.contains(":") ? "[" + h + "]" : h;
    this.url = scheme + "://" + shown + ":" + p;
    this.hostHeader = shown + ":" + p;
  }

  // -- connections ----------------------------------------------------------------------

  private Connection takeIdle() {
    synchronized (idle) {
      return idle.pollLast();
    }
  }

  private void release(Connection c) {
    busy.remove(c);
    c.used = true;
    if (!closed && c.reusable && !c.hasBufferedBytes()) {
      synchronized (idle) {
        if (idle.size() < IDLE_CONNECTIONS) {
          idle.addLast(c);
          if (!closed) return;
          idle.remove(c);
        }
      }
    }
    c.close();
  }

  private void discard(Connection c) {
    if (c == null) return;
    busy.remove(c);
    c.close();
  }

  /** Closes the idle connections, e.g. after one of them turned out closed by the server. */
  private void dropIdle() {
    Connection[] all;
    synchronized (idle) {
      all = idle.toArray(new Connection[0]);
      idle.clear();
    }
    for (Connection c : all) c.close();
  }

  /** Closes every connection, also those of a request under way (it fails at once). */
  void close() {
    closed = true;
    dropIdle();
    for (Connection c : busy) c.close();
  }

  // -- one request ----------------------------------------------------------------------

  /**
   * {@code count} IDs of {@code kind} within {@code timeoutMs}, connect to last byte.
   * ServerFailure: try another server. IdforgeException: the request is wrong.
   */
  Batch fetch(Kind kind, String tag, int count, int timeoutMs) throws ServerFailure {
    long deadline = Clock.now() + Clock.nanos(timeoutMs);
    Connection conn = takeIdle();
    while (true) {
      try {
        if (conn == null) conn = Connection.open(host, port, deadline);
        busy.add(conn);
        if (closed) throw new SocketException("the client was closed");
        conn.gotBytes = false;
        Batch batch = http ? http(conn, kind, tag, count, deadline) : resp(conn, kind, tag, count, deadline);
        release(conn);
        if (batch.size != count) {
          // docs/clients.md: any answer other than the IDs asked for is a failure.
          throw new ServerFailure("answered " + batch.size + " IDs, asked for " + count);
        }
        return batch;
      } catch (IdforgeException e) {
        release(conn); // a whole answer: the connection is fine
        throw e;
      } catch (ServerFailure f) {
        discard(conn);
        throw f;
      } catch (IOException e) {
        boolean stale = conn != null && conn.used && !conn.gotBytes && !(e instanceof SocketTimeoutException);
        discard(conn);
        if (stale && !closed) {
          // A kept-alive connection the server has closed (its idle timeout, a restart):
          // a fresh one within the same deadline; the other idle ones likely went too.
          dropIdle();
          conn = null;
          continue;
        }
        throw new ServerFailure(reason(e, timeoutMs));
      } catch (RuntimeException e) {
        discard(conn);
        throw new ServerFailure("a malformed answer (" + e.getMessage() + ")");
      }
    }
  }

  static String reason(IOException e, int timeoutMs) {
    String m = e.getMessage() == null ? "" : e.getMessage();
    if (e instanceof SocketTimeoutException) return "timed out after " + timeoutMs + " ms";
    if (e instanceof ConnectException) {
      return m.toLowerCase(Locale.ROOT).contains("refused") ? "connection refused" : "cannot connect: " + m;
    }
    if (e instanceof UnknownHostException) return "cannot resolve host: " + m;
    if (e instanceof NoRouteToHostException) return "no route to host";
    if (e instanceof EOFException) return "the server closed the connection";
    if (m.equalsIgnoreCase("connection reset")) return "connection reset";
    if (m.toLowerCase(Locale.ROOT).contains("broken pipe")) return "connection closed while sending";
    return m.isEmpty() ? e.getClass().getSimpleName() : m;
  }

  private static String encodePathSegment(String tag) {
    StringBuilder out = new StringBuilder();
    for (byte b : tag.getBytes(StandardCharsets.UTF_8)) {
      char c = (char) (b & 0xff);
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
          || c == '-' || c == '.' || c == '_' || c == '~') {
        out.append(c);
      } else {
        out.append('%').append(Character.toUpperCase(Character.forDigit((b >> 4) & 0xf, 16)))
            .append(Character.toUpperCase(Character.forDigit(b & 0xf, 16)));
      }
    }
    return out.toString();
  }

  private static String excerpt(String text) {
    text = text.strip();
    return text.length() > 80 ? text.substring(0, 80) + "..." : text;
  }

  // -- HTTP -----------------------------------------------------------------------------

  private Batch http(Connection c, Kind kind, String tag, int count, long deadline)
      throws IOException, ServerFailure {
    String path = kind == Kind.SEGMENT ? kind.path + encodePathSegment(tag) : kind.path;
    String request = "GET " + path + "?count=" + count + " HTTP/1.1\r\nHost: " + hostHeader
        + "\r\nUser-Agent: idforge-java\r\nAccept: application/json\r\n\r\n";
    c.send(request.getBytes(StandardCharsets.ISO_8859_1), deadline);

    String statusLine = c.readLine(deadline);
    String[] parts = statusLine.split(" ", 3);
    if (parts.length < 2 || !parts[0].startsWith("HTTP/1.") || parts[1].length() != 3
        || !IsoTime.allDigits(parts[1])) {
      throw new ServerFailure("not an HTTP answer: " + excerpt(statusLine));
    }
    int status = Integer.parseInt(parts[1]);
    boolean close = parts[0].equals("HTTP/1.0");
    long length = -1;
    int headerBytes = 0;
    while (true) {
      String line = c.readLine(deadline);
      headerBytes += line.length() + 2;
      if (headerBytes > Connection.MAX_LINE) throw new ServerFailure("the answer's headers are too large");
      if (line.isEmpty()) break;
      int colon = line.indexOf(':');
      if (colon <= 0) continue;
      String name = line.substring(0, colon).strip().toLowerCase(Locale.ROOT);
      String value = line.substring(colon + 1).strip();
      switch (name) {
        case "content-length":
          if (value.isEmpty() || value.length() > 9 || !IsoTime.allDigits(value)
              || Long.parseLong(value) > Connection.MAX_BODY) {
            throw new ServerFailure("bad Content-Length '" + excerpt(value) + "'");
          }
          length = Long.parseLong(value);
          break;
        case "connection":
          String v = value.toLowerCase(Locale.ROOT);
          close = v.contains("close") || (close && !v.contains("keep-alive"));
          break;
        case "transfer-encoding":
          throw new ServerFailure("a Transfer-Encoding answer (idforge sends Content-Length)");
        default:
          break;
      }
    }
    int n;
    if (length < 0) {
      n = c.readToEof(deadline);
      close = true;
    } else {
      n = (int) length;
      c.need(n, deadline);
    }
    String body = new String(c.buf, c.start, n, StandardCharsets.UTF_8);
    c.start += n;
    if (close) c.reusable = false;

    Object doc;
    try {
      doc = Json.parse(body);
    } catch (IllegalArgumentException e) {
      doc = null;
    }
    if (status < 200 || status > 299) {
      String code = "http_" + status;
      String message = body.isBlank() ? "HTTP " + status : excerpt(body);
      if (doc instanceof Map && ((Map<?, ?>) doc).get("error") instanceof Map) {
        Map<?, ?> error = (Map<?, ?>) ((Map<?, ?>) doc).get("error");
        if (error.get("code") instanceof String) code = (String) error.get("code");
        if (error.get("message") instanceof String) message = (String) error.get("message");
      }
      if (WRONG_REQUEST_STATUSES.contains(status)) throw new IdforgeException(message, code, url, status);
      // 5xx, a proxy's 401, 403, 429, ...: another server may answer.
      throw new ServerFailure("HTTP " + status + " " + code + ": " + message);
    }
    Object ids = doc instanceof Map ? ((Map<?, ?>) doc).get("ids") : null;
    if (!(ids instanceof List) || ((List<?>) ids).isEmpty()) {
      throw new ServerFailure("a malformed answer (no ids): " + excerpt(body));
    }
    List<?> list = (List<?>) ids;
    if (kind.numeric) {
      long[] out = new long[list.size()];
      for (int i = 0; i < out.length; i++) {
        Object x = list.get(i);
        if (!(x instanceof String) || !validId((String) x)) {
          throw new ServerFailure("a malformed answer (an ID that is not a decimal string): " + excerpt(body));
        }
        out[i] = Long.parseUnsignedLong((String) x);
      }
      return new Batch(out);
    }
    String[] out = new String[list.size()];
    for (int i = 0; i < out.length; i++) {
      Object x = list.get(i);
      if (!(x instanceof String) || ((String) x).isEmpty()) {
        throw new ServerFailure("a malformed answer (an ID that is not text): " + excerpt(body));
      }
      out[i] = (String) x;
    }
    return new Batch(out);
  }

  private static boolean validId(String text) {
    if (text.isEmpty() || text.length() > 20 || !IsoTime.allDigits(text)) return false;
    try {
      Long.parseUnsignedLong(text);
      return true;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  // -- RESP -----------------------------------------------------------------------------

  private Batch resp(Connection c, Kind kind, String tag, int count, long deadline)
      throws IOException, ServerFailure {
    byte[][] args = kind == Kind.SEGMENT
        ? new byte[][] {ascii(kind.command), tag.getBytes(StandardCharsets.UTF_8), ascii(Integer.toString(count))}
        : new byte[][] {ascii(kind.command), ascii(Integer.toString(count))};
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(64);
    out.write(ascii("*" + args.length + "\r\n"));
    for (byte[] a : args) {
      out.write(ascii("$" + a.length + "\r\n"));
      out.write(a);
      out.write('\r');
      out.write('\n');
    }
    c.send(out.toByteArray(), deadline);

    int e = c.lineEnd(deadline);
    byte type = e > c.start ? c.buf[c.start] : 0;
    if (type == '-') {
      String text = new String(c.buf, c.start + 1, e - c.start - 1, StandardCharsets.UTF_8);
      c.consumeLine(e);
      // -ERR not_found: unknown tag 'x' ... (src/server/resp/resp_reply.cc)
      int space = text.indexOf(' ');
      String word = space < 0 ? text : text.substring(0, space);
      String rest = space < 0 ? "" : text.substring(space + 1);
      int colon = rest.indexOf(':');
      if (word.equals("ERR") && colon >= 0 && WRONG_REQUEST_CODES.contains(rest.substring(0, colon).strip())) {
        throw new IdforgeException(rest.substring(colon + 1).strip(), rest.substring(0, colon).strip(), url, 0);
      }
      throw new ServerFailure(text);
    }
    if (type != '*') {
      throw new ServerFailure("unexpected answer " + excerpt(new String(c.buf, c.start, e - c.start, StandardCharsets.ISO_8859_1)));
    }
    long n = number(c, c.start + 1, e);
    c.consumeLine(e);
    if (n < 0 || n > 1_000_000) throw new ServerFailure("unexpected answer *" + n);
    int size = (int) n;
    if (kind.numeric) {
      long[] ids = new long[size];
      for (int i = 0; i < size; i++) {
        e = c.lineEnd(deadline);
        if (e == c.start || c.buf[c.start] != ':') {
          throw new ServerFailure("a malformed answer (an ID that is not an integer)");
        }
        if (e > c.start + 1 && c.buf[c.start + 1] == '-') {
          throw new ServerFailure("a malformed answer (a negative ID)");
        }
        ids[i] = number(c, c.start + 1, e);
        c.consumeLine(e);
      }
      return new Batch(ids);
    }
    String[] ids = new String[size];
    for (int i = 0; i < size; i++) {
      e = c.lineEnd(deadline);
      if (e == c.start || c.buf[c.start] != '$') {
        throw new ServerFailure("a malformed answer (an ID that is not a bulk string)");
      }
      long len = number(c, c.start + 1, e);
      c.consumeLine(e);
      if (len < 1 || len > Connection.MAX_LINE) throw new ServerFailure("a malformed answer (a bulk string of " + len + ")");
      c.need((int) len + 2, deadline);
      ids[i] = new String(c.buf, c.start, (int) len, StandardCharsets.UTF_8);
      c.start += (int) len + 2;
    }
    return new Batch(ids);
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.ISO_8859_1);
  }

  /**
   * A RESP integer in buf[from, to): optional '-', then digits; without a sign up to
   * 2^64 - 1 (read as unsigned bits).
   */
  private static long number(Connection c, int from, int to) throws ServerFailure {
    boolean negative = from < to && c.buf[from] == '-';
    int i = negative ? from + 1 : from;
    if (i == to || to - i > 20) throw new ServerFailure("a malformed answer (a bad RESP number)");
    long v = 0;
    for (; i < to; i++) {
      int d = c.buf[i] - '0';
      if (d < 0 || d > 9) throw new ServerFailure("a malformed answer (a bad RESP number)");
      // unsigned overflow check: v * 10 + d <= 2^64 - 1
      if (Long.compareUnsigned(v, Long.divideUnsigned(-1L - d, 10)) > 0) {
        throw new ServerFailure("a malformed answer (a RESP number above 64 bits)");
      }
      v = v * 10 + d;
    }
    return negative ? -v : v;
  }
}
