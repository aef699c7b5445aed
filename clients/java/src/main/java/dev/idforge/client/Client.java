package dev.idforge.client;

import dev.idforge.client.IdforgeUnavailableException.ServerError;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

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

  private static final IdBuffer STOP = new IdBuffer(Kind.SNOWFLAKE, null, 0);
  private static final long REFILL_THREAD_IDLE_MS = 30_000;

  private final List<Endpoint> servers;
  private final int timeoutMs;
  private final int batch;
  private final int refillBelow;
  private final long maxAgeMs;
  private final long segmentMaxAgeMs;
  private final long backoffMs;
  private final long maxBackoffMs;
  private final boolean buffered;

  private final Object failover = new Object(); // the servers' back-off state and current
  private int current; // the server that answered last

  private final IdBuffer snowflakeBuffer;
  private final IdBuffer uuid7Buffer;
  private final IdBuffer ulidBuffer;
  private final ConcurrentHashMap<String, IdBuffer> segmentBuffers = new ConcurrentHashMap<>();

  private final LinkedBlockingQueue<IdBuffer> refillQueue = new LinkedBlockingQueue<>();
  private Thread refiller; // guarded by refillQueue
  private volatile boolean closed;

  /** A client of these servers with the default options. */
  public Client(String... servers) {
    this(builder(servers));
  }

  private Client(Builder o) {
    if (o.servers.isEmpty()) throw new IllegalArgumentException("a Client needs at least one server URL");
    List<Endpoint> list = new ArrayList<>();
    for (String url : o.servers) list.add(new Endpoint(url));
    this.servers = List.copyOf(list);
    this.timeoutMs = atLeast("timeoutMs", o.timeoutMs, 1);
    this.batch = atLeast("batch", o.batch, 1);
    int below = o.refillBelow == null ? batch / 2 : o.refillBelow;
    if (below < 0 || below > batch) {
      throw new IllegalArgumentException("refillBelow must be from 0 to batch (" + batch + "), got " + below);
    }
    this.refillBelow = below;
    this.maxAgeMs = atLeast("maxAgeMs", o.maxAgeMs, 0);
    this.segmentMaxAgeMs = atLeast("segmentMaxAgeMs", o.segmentMaxAgeMs, 0);
    this.backoffMs = atLeast("backoffMs", o.backoffMs, 0);
    this.maxBackoffMs = atLeast("maxBackoffMs", o.maxBackoffMs, backoffMs);
    this.buffered = o.buffer && batch > 1;
    this.snowflakeBuffer = new IdBuffer(Kind.SNOWFLAKE, null, maxAgeMs);
    this.uuid7Buffer = new IdBuffer(Kind.UUID7, null, maxAgeMs);
    this.ulidBuffer = new IdBuffer(Kind.ULID, null, maxAgeMs);
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
    return nextNumber(Kind.SNOWFLAKE, null, snowflakeBuffer);
  }

  /** The next segment ID of {@code tag}. */
  public long segment(String tag) {
    checkTag(tag);
    return nextNumber(Kind.SEGMENT, tag, buffered ? segmentBuffer(tag) : null);
  }

  /** The next UUIDv7, as text. */
  public String uuid7() {
    return nextText(Kind.UUID7, uuid7Buffer);
  }

  /** The next ULID, as text. */
  public String ulid() {
    return nextText(Kind.ULID, ulidBuffer);
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
    List<String> out = new ArrayList<>();
    for (Endpoint s : servers) out.add(s.url);
    return out;
  }

  /** How many IDs the buffer of {@code kind} holds now (not for segments). */
  public int buffered(Kind kind) {
    if (kind == Kind.SEGMENT) throw new IllegalArgumentException("a segment buffer is per tag: buffered(Kind.SEGMENT, tag)");
    return sizeOf(bufferOf(kind));
  }

  /** How many IDs the buffer of segment {@code tag} holds now. */
  public int buffered(Kind kind, String tag) {
    if (kind != Kind.SEGMENT) return buffered(kind);
    return sizeOf(segmentBuffers.get(tag));
  }

  private static int sizeOf(IdBuffer b) {
    if (b == null) return 0;
    b.lock.lock();
    try {
      return b.size;
    } finally {
      b.lock.unlock();
    }
  }

  /** Each server's failures in a row, back-off left, last error and whether it answered last. */
  public List<ServerState> serverStates() {
    List<ServerState> out = new ArrayList<>();
    synchronized (failover) {
      long now = Clock.now();
      for (int i = 0; i < servers.size(); i++) {
        Endpoint s = servers.get(i);
        out.add(new ServerState(s.url, s.failures, Math.max(0, Clock.roundMs(s.until - now)),
            s.lastError, i == current));
      }
    }
    return out;
  }

  /** Each buffer used so far: size, IDs dropped by the age limit, refills, last error. */
  public List<BufferState> bufferStates() {
    List<IdBuffer> all = new ArrayList<>(List.of(snowflakeBuffer, uuid7Buffer, ulidBuffer));
    all.addAll(segmentBuffers.values());
    List<BufferState> out = new ArrayList<>();
    for (IdBuffer b : all) {
      b.lock.lock();
      try {
        if (b.tag == null && b.refills == 0 && b.size == 0 && b.error == null) continue;
        out.add(new BufferState(b.kind, b.tag, b.size, b.dropped, b.refills, b.state != IdBuffer.IDLE,
            b.error == null ? "" : b.error.toString()));
      } finally {
        b.lock.unlock();
      }
    }
    return out;
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
    refillQueue.offer(STOP);
    List<IdBuffer> all = new ArrayList<>(List.of(snowflakeBuffer, uuid7Buffer, ulidBuffer));
    all.addAll(segmentBuffers.values());
    for (IdBuffer b : all) {
      b.lock.lock();
      try {
        b.clear();
        b.changed.signalAll();
      } finally {
        b.lock.unlock();
      }
    }
    for (Endpoint s : servers) s.close();
    Thread t;
    synchronized (refillQueue) {
      t = refiller;
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static IdforgeException closedError() {
    return new IdforgeException("the client is closed", "closed");
  }

  // -- the buffer -------------------------------------------------------------------------

  private static void checkTag(String tag) {
    if (tag == null || tag.isEmpty()) throw new IllegalArgumentException("a segment tag is a non-empty string");
  }

  private IdBuffer bufferOf(Kind kind) {
    switch (kind) {
      case SNOWFLAKE:
        return snowflakeBuffer;
      case UUID7:
        return uuid7Buffer;
      default:
        return ulidBuffer;
    }
  }

  private IdBuffer segmentBuffer(String tag) {
    IdBuffer b = segmentBuffers.get(tag);
    if (b == null) b = segmentBuffers.computeIfAbsent(tag, t -> new IdBuffer(Kind.SEGMENT, t, segmentMaxAgeMs));
    return b;
  }

  private long nextNumber(Kind kind, String tag, IdBuffer b) {
    if (closed) throw closedError();
    if (!buffered) return request(kind, tag, 1, true, 0).numbers[0];
    b.lock.lock();
    try {
      if (b.maxAgeNanos > 0) b.expire(Clock.now());
      Batch first = b.first();
      if (first != null) {
        long id = first.numbers[first.next];
        b.took(first);
        if (b.size < refillBelow && b.state == IdBuffer.IDLE) maybeRefill(b);
        return id;
      }
    } finally {
      b.lock.unlock();
    }
    IdBuffer.Waiter got = takeSlow(b);
    return got.batch.numbers[got.index];
  }

  private String nextText(Kind kind, IdBuffer b) {
    if (closed) throw closedError();
    if (!buffered) return request(kind, null, 1, true, 0).texts[0];
    b.lock.lock();
    try {
      if (b.maxAgeNanos > 0) b.expire(Clock.now());
      Batch first = b.first();
      if (first != null) {
        String id = first.texts[first.next];
        b.took(first);
        if (b.size < refillBelow && b.state == IdBuffer.IDLE) maybeRefill(b);
        return id;
      }
    } finally {
      b.lock.unlock();
    }
    IdBuffer.Waiter got = takeSlow(b);
    return got.batch.texts[got.index];
  }

  private long[] manyNumbers(Kind kind, String tag, int n) {
    if (n < 0) throw new IllegalArgumentException("n must be >= 0, got " + n);
    long[] out = new long[n];
    if (buffered) {
      IdBuffer b = kind == Kind.SEGMENT ? segmentBuffer(tag) : snowflakeBuffer;
      for (int i = 0; i < n; i++) out[i] = nextNumber(kind, tag, b);
      return out;
    }
    if (closed) throw closedError();
    for (int done = 0; done < n; ) {
      Batch got = request(kind, tag, Math.min(batch, n - done), true, 0);
      System.arraycopy(got.numbers, 0, out, done, got.size);
      done += got.size;
    }
    return out;
  }

  private List<String> manyTexts(Kind kind, int n) {
    if (n < 0) throw new IllegalArgumentException("n must be >= 0, got " + n);
    List<String> out = new ArrayList<>(n);
    if (buffered) {
      IdBuffer b = bufferOf(kind);
      for (int i = 0; i < n; i++) out.add(nextText(kind, b));
      return out;
    }
    if (closed) throw closedError();
    while (out.size() < n) out.addAll(Arrays.asList(request(kind, null, Math.min(batch, n - out.size()), true, 0).texts));
    return out;
  }

  /**
   * The buffer is empty: wait for the refill in progress or run one in this thread, for
   * at most timeoutMs times the number of servers. Returns where the ID is.
   */
  private IdBuffer.Waiter takeSlow(IdBuffer b) {
    long waitNanos = Clock.nanos((long) timeoutMs * servers.size());
    long deadline = Clock.now() + waitNanos;
    while (true) {
      b.lock.lock();
      try {
        if (closed) throw closedError();
        if (b.maxAgeNanos > 0) b.expire(Clock.now());
        Batch first = b.first();
        if (first != null) {
          IdBuffer.Waiter got = new IdBuffer.Waiter();
          got.batch = first;
          got.index = first.next;
          b.took(first);
          if (b.size < refillBelow && b.state == IdBuffer.IDLE) maybeRefill(b);
          return got;
        }
        if (b.state == IdBuffer.RUNNING) {
          long generation = b.generation;
          IdBuffer.Waiter me = new IdBuffer.Waiter();
          b.waiters.addLast(me);
          try {
            while (me.batch == null && b.generation == generation && !closed) {
              long left = deadline - Clock.now();
              if (left <= 0) {
                throw unavailable("no " + b.what + " within " + Clock.roundMs(waitNanos) + " ms (timeoutMs x "
                    + servers.size() + " servers): the refill in progress has not finished");
              }
              b.changed.awaitNanos(left);
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IdforgeException("interrupted while waiting for " + b.what, "interrupted");
          } finally {
            if (me.batch == null) b.waiters.remove(me);
          }
          if (me.batch != null) return me;
          if (closed) throw closedError();
          if (b.size == 0 && b.error != null) throw b.error.copy();
          continue;
        }
        // Idle, or queued for the refill thread: this thread runs it now (the refill
        // thread skips a buffer no longer queued), in the time left.
        if (deadline - Clock.now() <= Clock.nanos(1)) {
          throw unavailable("no " + b.what + " within " + Clock.roundMs(waitNanos) + " ms (timeoutMs x "
              + servers.size() + " servers): other callers took the IDs of the refills");
        }
        b.state = IdBuffer.RUNNING;
      } finally {
        b.lock.unlock();
      }
      IdBuffer.Waiter got = refill(b, true, true, deadline);
      if (got != null) return got;
    }
  }

  /** An unavailable error that names each server's state now. */
  private IdforgeUnavailableException unavailable(String why) {
    List<ServerError> errors = serverErrors(new String[servers.size()]);
    return new IdforgeUnavailableException(why + "; servers: " + join(errors), errors);
  }

  /** Queues a background refill: called with b.lock held, b below refillBelow and idle. */
  private void maybeRefill(IdBuffer b) {
    if (closed || (b.retryAt != 0 && Clock.now() < b.retryAt)) return; // a failed refill asked to wait
    b.state = IdBuffer.QUEUED;
    refillQueue.add(b);
    synchronized (refillQueue) {
      if (refiller == null) {
        refiller = new Thread(this::refillLoop, "idforge-client-refill");
        refiller.setDaemon(true);
        refiller.start();
      }
    }
  }

  /**
   * The refill thread: runs the refills next() queued, one at a time. Idle for a while it
   * ends (the next refill starts another), so a client dropped without close() is not
   * kept alive by it for long.
   */
  private void refillLoop() {
    while (true) {
      IdBuffer b;
      try {
        b = refillQueue.poll(REFILL_THREAD_IDLE_MS, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        b = null;
      }
      if (b == null) {
        synchronized (refillQueue) {
          if (refillQueue.isEmpty()) {
            refiller = null;
            return;
          }
        }
        continue;
      }
      if (b == STOP || closed) return;
      b.lock.lock();
      try {
        if (b.state != IdBuffer.QUEUED) continue; // a caller that found it empty runs it
        b.state = IdBuffer.RUNNING;
      } finally {
        b.lock.unlock();
      }
      try {
        refill(b, false, false, 0);
      } catch (RuntimeException e) {
        // kept in b.error: a caller meets it when the buffer is empty
      }
    }
  }

  /**
   * One request of {@code batch} IDs into {@code b}, whose state is RUNNING. mustTry
   * false (the refill thread): when every server is backing off, none is tried. takeOne:
   * the first ID is the caller's. Then the callers waiting get one each, the rest is kept.
   * The error, if any, is kept in b.error and thrown.
   */
  private IdBuffer.Waiter refill(IdBuffer b, boolean mustTry, boolean takeOne, long deadline) {
    Batch got = null;
    IdforgeException error = null;
    try {
      got = request(b.kind, b.tag, batch, mustTry, deadline);
    } catch (IdforgeException e) {
      error = e;
    } catch (RuntimeException e) {
      error = new IdforgeException("refill failed: " + e, "internal");
    }
    IdBuffer.Waiter mine = null;
    b.lock.lock();
    try {
      b.state = IdBuffer.IDLE;
      b.generation++;
      if (got != null) {
        b.refills++;
        b.error = null;
        b.retryAt = 0;
        if (!closed) {
          if (takeOne) {
            mine = new IdBuffer.Waiter();
            mine.batch = got;
            mine.index = got.next++;
          }
          IdBuffer.Waiter w;
          while (got.next < got.size && (w = b.waiters.pollFirst()) != null) {
            w.batch = got;
            w.index = got.next++;
          }
          if (got.next < got.size) {
            b.batches.addLast(got);
            b.size += got.left();
          }
        }
      } else if (error != null) {
        b.error = error;
        b.retryAt = retryTime(error);
      } else {
        // Nothing tried (the refill thread, every server backing off): a caller that
        // finds the buffer empty tries them, rather than failing.
        b.error = null;
        b.retryAt = retryTime(null);
      }
      b.changed.signalAll();
    } finally {
      b.lock.unlock();
    }
    if (error != null) throw error;
    return mine;
  }

  /** When a background refill may start again after one that got no IDs. */
  private long retryTime(IdforgeException error) {
    long now = Clock.now();
    if (error != null && !(error instanceof IdforgeUnavailableException)) {
      return now + Clock.nanos(backoffMs); // a wrong request: not again on every call
    }
    synchronized (failover) {
      long first = Long.MAX_VALUE;
      for (Endpoint s : servers) first = Math.min(first, s.until);
      return Math.max(now, first);
    }
  }

  // -- failover ---------------------------------------------------------------------------

  /**
   * {@code count} IDs from the first server that answers: from the one that answered
   * last, in list order, those not backing off; then, when mustTry, those backing off,
   * the one whose period ends first first. Each server at most once, each try within
   * timeoutMs and the deadline (0: none). Null when mustTry is false and every server
   * was backing off.
   */
  private Batch request(Kind kind, String tag, int count, boolean mustTry, long deadline) {
    int n = servers.size();
    int start;
    synchronized (failover) {
      start = current;
    }
    String[] tried = new String[n];
    boolean any = false;
    for (int k = 0; k < n; k++) {
      int i = (start + k) % n;
      synchronized (failover) {
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
      synchronized (failover) {
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
    if (closed) throw closedError();
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
      if (closed) throw closedError();
      failed(server, f.reason, t0);
      tried[i] = f.reason;
      return null;
    } catch (IdforgeException e) {
      answered(i); // the server is well; the request is wrong
      throw e;
    }
  }

  private void answered(int i) {
    synchronized (failover) {
      Endpoint s = servers.get(i);
      s.failures = 0;
      s.until = 0;
      s.lastError = "";
      current = i;
    }
  }

  /** For the tests: counts a failure of server {@code index} now, as a failed request would. */
  void recordFailure(int index, String reason) {
    failed(servers.get(index), reason, Clock.now());
  }

  private void failed(Endpoint server, String reason, long started) {
    synchronized (failover) {
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

  /** Every server and why: its error in this request, or its back-off, in list order. */
  private List<ServerError> serverErrors(String[] tried) {
    List<ServerError> out = new ArrayList<>();
    synchronized (failover) {
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
