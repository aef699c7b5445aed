package dev.idforge.client;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * IDs from a list of idforge servers, through the loss of any of them (docs/clients.md).
 *
 * <pre>{@code
 * try (Client ids = Client.builder("http://10.0.0.1:8080", "redis://10.0.0.2:6380")
 *     .timeoutMs(1000).build()) {
 *   long order = ids.segment("order");   // 1001
 *   long event = ids.snowflake();        // 910499571847892992
 *   String key = ids.uuid7();            // "019a..."; ids.ulid() likewise
 * }
 * Client.parse(910499571847892992L).get("worker");  // 25, no server
 * }</pre>
 *
 * <p>A request goes to the server that answered last; a server that fails (no answer
 * within {@code timeoutMs}, a refused or reset connection, any answer but the IDs asked
 * for or a wrong-request error) is skipped for a back-off period that doubles with each
 * failure in a row, and the request moves on to the next server. A wrong request (an
 * unknown tag, a count above the server's limit) is an {@link IdforgeException} at once.
 * Each kind and segment tag has a buffer of {@code batch} IDs, refilled in the background
 * by one thread per client; {@code buffer(false)} makes each call one request.
 *
 * <p>Thread-safe: one client per process, shared by its threads. Close it when done: it
 * stops the refill thread and ends the connections; buffered IDs are dropped (never
 * issued again: a gap).
 *
 * <p>This class holds the options and the public calls; the server order and back-off
 * are in {@code Failover}, the buffers and their refill thread in {@code IdBuffers}.
 *
 * <p>Snowflake and segment IDs are 64-bit unsigned numbers in a {@code long}: those from
 * 2^63 up (not issued by today's layouts and counters) would be negative longs; print
 * them with {@link Long#toUnsignedString(long)} and compare them with
 * {@link Long#compareUnsigned(long, long)}.
 */
public final class Client implements AutoCloseable {

  /** The options of a client; {@link #build()} checks them. */
  public static final class Builder {
    private final List<String> servers;
    private int timeoutMs = 1000;
    private int batch = 256;
    private Integer refillBelow;
    private long maxAgeMs = 2000;
    private long segmentMaxAgeMs = 0;
    private long backoffMs = 500;
    private long maxBackoffMs = 30000;
    private boolean buffer = true;

    private Builder(List<String> servers) {
      if (servers == null) throw new IllegalArgumentException("a Client needs a list of server URLs, got null");
      this.servers = new ArrayList<>(servers); // a null URL is refused by build()
    }

    /** One request, connect to last byte (default 1000). */
    public Builder timeoutMs(int timeoutMs) {
      this.timeoutMs = timeoutMs;
      return this;
    }

    /** IDs per request (default 256); at most the server's {@code limits.max_count}. */
    public Builder batch(int batch) {
      this.batch = batch;
      return this;
    }

    /** A background refill starts below this many IDs (0..batch, default batch / 2). */
    public Builder refillBelow(int refillBelow) {
      this.refillBelow = refillBelow;
      return this;
    }

    /** Snowflake, UUIDv7 and ULID IDs fetched longer ago are dropped (default 2000; 0: never). */
    public Builder maxAgeMs(long maxAgeMs) {
      this.maxAgeMs = maxAgeMs;
      return this;
    }

    /** The same for segment IDs (default 0: never). */
    public Builder segmentMaxAgeMs(long segmentMaxAgeMs) {
      this.segmentMaxAgeMs = segmentMaxAgeMs;
      return this;
    }

    /** A failed server is skipped this long, doubling with each failure in a row (default 500). */
    public Builder backoffMs(long backoffMs) {
      this.backoffMs = backoffMs;
      return this;
    }

    /** ... up to this (default 30000). */
    public Builder maxBackoffMs(long maxBackoffMs) {
      this.maxBackoffMs = maxBackoffMs;
      return this;
    }

    /** false (or a batch of 1): each call is one request (default true). */
    public Builder buffer(boolean buffer) {
      this.buffer = buffer;
      return this;
    }

    /** The client; IllegalArgumentException for a bad URL or option. */
    public Client build() {
      return new Client(this);
    }
  }

  /** One server's failover state, as {@link #serverStates()} shows it. */
  public record ServerState(String url, int failures, long backingOffMs, String lastError, boolean current) {}

  /** One buffer's state, as {@link #bufferStates()} shows it; {@code tag} null but for segments. */
  public record BufferState(Kind kind, String tag, int size, long dropped, long refills,
      boolean refilling, String lastError) {}

  /** Options of servers given as URLs: {@code http://HOST:PORT} or {@code redis://HOST:PORT}. */
  public static Builder builder(String... servers) {
    return new Builder(servers == null ? null : Arrays.asList(servers));
  }

  public static Builder builder(List<String> servers) {
    return new Builder(servers);
  }

  private final Failover failover;
  private final IdBuffers buffers;
  private final int batch;
  private final boolean buffered;
  private volatile boolean closed;

  /** A client of these servers with the default options. */
  public Client(String... servers) {
    this(builder(servers));
  }

  private Client(Builder o) {
    if (o.servers.isEmpty()) throw new IllegalArgumentException("a Client needs at least one server URL");
    List<Endpoint> list = new ArrayList<>();
    for (String url : o.servers) list.add(new Endpoint(url));
    int timeoutMs = atLeast("timeoutMs", o.timeoutMs, 1);
    this.batch = atLeast("batch", o.batch, 1);
    int below = o.refillBelow == null ? batch / 2 : o.refillBelow;
    if (below < 0 || below > batch) {
      throw new IllegalArgumentException("refillBelow must be from 0 to batch (" + batch + "), got " + below);
    }
    long maxAgeMs = atLeast("maxAgeMs", o.maxAgeMs, 0);
    long segmentMaxAgeMs = atLeast("segmentMaxAgeMs", o.segmentMaxAgeMs, 0);
    long backoffMs = atLeast("backoffMs", o.backoffMs, 0);
    long maxBackoffMs = atLeast("maxBackoffMs", o.maxBackoffMs, backoffMs);
    this.buffered = o.buffer && batch > 1;
    this.failover = new Failover(list, timeoutMs, backoffMs, maxBackoffMs, () -> closed);
    this.buffers = new IdBuffers(failover, timeoutMs, batch, below, maxAgeMs, segmentMaxAgeMs, () -> closed);
  }

  private static int atLeast(String name, int value, int low) {
    if (value < low) throw new IllegalArgumentException(name + " must be >= " + low + ", got " + value);
    return value;
  }

  private static long atLeast(String name, long value, long low) {
    if (value < low) throw new IllegalArgumentException(name + " must be >= " + low + ", got " + value);
    return value;
  }

  // -- the IDs ----------------------------------------------------------------------------

  /** The next Snowflake ID. */
  public long snowflake() {
    return nextNumber(Kind.SNOWFLAKE, null, buffers.of(Kind.SNOWFLAKE));
  }

  /** The next segment ID of {@code tag}. */
  public long segment(String tag) {
    checkTag(tag);
    return nextNumber(Kind.SEGMENT, tag, buffered ? buffers.segment(tag) : null);
  }

  /** The next UUIDv7, as text. */
  public String uuid7() {
    return nextText(Kind.UUID7, buffers.of(Kind.UUID7));
  }

  /** The next ULID, as text. */
  public String ulid() {
    return nextText(Kind.ULID, buffers.of(Kind.ULID));
  }

  /** {@code n} Snowflake IDs: from the buffer, or without it in requests of up to batch. */
  public long[] snowflakes(int n) {
    return manyNumbers(Kind.SNOWFLAKE, null, n);
  }

  /** {@code n} segment IDs of {@code tag}. */
  public long[] segments(String tag, int n) {
    checkTag(tag);
    return manyNumbers(Kind.SEGMENT, tag, n);
  }

  /** {@code n} UUIDv7s. */
  public List<String> uuid7s(int n) {
    return manyTexts(Kind.UUID7, n);
  }

  /** {@code n} ULIDs. */
  public List<String> ulids(int n) {
    return manyTexts(Kind.ULID, n);
  }

  private static void checkTag(String tag) {
    if (tag == null || tag.isEmpty()) throw new IllegalArgumentException("a segment tag is a non-empty string");
  }

  /** One ID: from buffer {@code b}, or without the buffer in a request of its own. */
  private long nextNumber(Kind kind, String tag, IdBuffer b) {
    if (closed) throw closedError();
    if (!buffered) return failover.request(kind, tag, 1, true, 0).numbers[0];
    return buffers.nextNumber(b);
  }

  private String nextText(Kind kind, IdBuffer b) {
    if (closed) throw closedError();
    if (!buffered) return failover.request(kind, null, 1, true, 0).texts[0];
    return buffers.nextText(b);
  }

  private long[] manyNumbers(Kind kind, String tag, int n) {
    if (n < 0) throw new IllegalArgumentException("n must be >= 0, got " + n);
    long[] out = new long[n];
    if (buffered) {
      IdBuffer b = kind == Kind.SEGMENT ? buffers.segment(tag) : buffers.of(Kind.SNOWFLAKE);
      for (int i = 0; i < n; i++) out[i] = nextNumber(kind, tag, b);
      return out;
    }
    if (closed) throw closedError();
    for (int done = 0; done < n; ) {
      Batch got = failover.request(kind, tag, Math.min(batch, n - done), true, 0);
      System.arraycopy(got.numbers, 0, out, done, got.size);
      done += got.size;
    }
    return out;
  }

  private List<String> manyTexts(Kind kind, int n) {
    if (n < 0) throw new IllegalArgumentException("n must be >= 0, got " + n);
    List<String> out = new ArrayList<>(n);
    if (buffered) {
      IdBuffer b = buffers.of(kind);
      for (int i = 0; i < n; i++) out.add(nextText(kind, b));
      return out;
    }
    if (closed) throw closedError();
    while (out.size() < n) {
      out.addAll(Arrays.asList(failover.request(kind, null, Math.min(batch, n - out.size()), true, 0).texts));
    }
    return out;
  }

  // -- decoding without a server ----------------------------------------------------------

  /** A Twitter-layout Snowflake ID decoded: the fields of {@code idforge parse --json}. */
  public static ParsedId parse(long id) {
    return Layout.of("twitter").decode(id);
  }

  /** An ID decoded with a preset (any case) or a custom spec. */
  public static ParsedId parse(long id, String layout) {
    return Layout.of(layout).decode(id);
  }

  /** ... with an epoch (Unix ms) and tick (ms) in place of the layout's own when not null. */
  public static ParsedId parse(long id, String layout, Long epochMs, Long tickMs) {
    return Layout.of(layout, epochMs, tickMs).decode(id);
  }

  /** An ID given as decimal text, up to 18446744073709551615. */
  public static ParsedId parse(String id) {
    return parse(id, "twitter", null, null);
  }

  public static ParsedId parse(String id, String layout) {
    return parse(id, layout, null, null);
  }

  public static ParsedId parse(String id, String layout, Long epochMs, Long tickMs) {
    if (id == null) throw new IllegalArgumentException("ID is null");
    long value = ParsedId.parseUnsigned(id, "ID");
    return Layout.of(layout, epochMs, tickMs).decode(value);
  }

  // -- looking inside ---------------------------------------------------------------------

  /** The servers' URLs as the client writes them ({@code http://HOST:PORT}). */
  public List<String> servers() {
    return failover.urls();
  }

  /** How many IDs the buffer of {@code kind} holds now (not for segments). */
  public int buffered(Kind kind) {
    if (kind == Kind.SEGMENT) throw new IllegalArgumentException("a segment buffer is per tag: buffered(Kind.SEGMENT, tag)");
    return IdBuffers.sizeOf(buffers.of(kind));
  }

  /** How many IDs the buffer of segment {@code tag} holds now. */
  public int buffered(Kind kind, String tag) {
    if (kind != Kind.SEGMENT) return buffered(kind);
    return buffers.segmentSize(tag);
  }

  /** Each server's failures in a row, back-off left, last error and whether it answered last. */
  public List<ServerState> serverStates() {
    return failover.states();
  }

  /** Each buffer used so far: size, IDs dropped by the age limit, refills, last error. */
  public List<BufferState> bufferStates() {
    return buffers.states();
  }

  /** For the tests: counts a failure of server {@code index} now, as a failed request would. */
  void recordFailure(int index, String reason) {
    failover.recordFailure(index, reason);
  }

  @Override
  public String toString() {
    return "Client" + servers();
  }

  // -- closing ----------------------------------------------------------------------------

  /**
   * Stops the refill thread, ends every connection (a request under way fails at once),
   * drops the buffered IDs and wakes the callers waiting, which throw
   * {@link IdforgeException} code {@code closed}, as every later call does.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) return;
      closed = true;
    }
    buffers.stop();
    failover.close();
    buffers.joinRefillThread();
  }

  /** What a call on a closed client throws (also from Failover and IdBuffers). */
  static IdforgeException closedError() {
    return new IdforgeException("the client is closed", "closed");
  }
}
