package dev.idforge.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A client's buffers, one per kind and segment tag, and what fills them: a refill queued
 * when a buffer falls below refillBelow and run by one background thread per client, or
 * run by a caller that finds its buffer empty. Kept apart from {@link Client} because it
 * is the one part with a thread of its own and a hand-off protocol between callers and
 * refills (IdBuffer's IDLE, QUEUED and RUNNING, and its waiters); {@link IdBuffer} is one
 * buffer's data, this is the set of them and the machinery.
 */
final class IdBuffers {
  private static final IdBuffer STOP = new IdBuffer(Kind.SNOWFLAKE, null, 0);
  private static final long REFILL_THREAD_IDLE_MS = 30_000;

  private final Failover failover;
  private final int timeoutMs;
  private final int batch;
  private final int refillBelow;
  private final long segmentMaxAgeMs;
  private final BooleanSupplier clientClosed;

  private final IdBuffer snowflakeBuffer;
  private final IdBuffer uuid7Buffer;
  private final IdBuffer ulidBuffer;
  private final ConcurrentHashMap<String, IdBuffer> segmentBuffers = new ConcurrentHashMap<>();

  private final LinkedBlockingQueue<IdBuffer> refillQueue = new LinkedBlockingQueue<>();
  private Thread refiller; // guarded by refillQueue

  IdBuffers(Failover failover, int timeoutMs, int batch, int refillBelow, long maxAgeMs, long segmentMaxAgeMs,
      BooleanSupplier clientClosed) {
    this.failover = failover;
    this.timeoutMs = timeoutMs;
    this.batch = batch;
    this.refillBelow = refillBelow;
    this.segmentMaxAgeMs = segmentMaxAgeMs;
    this.clientClosed = clientClosed;
    this.snowflakeBuffer = new IdBuffer(Kind.SNOWFLAKE, null, maxAgeMs);
    this.uuid7Buffer = new IdBuffer(Kind.UUID7, null, maxAgeMs);
    this.ulidBuffer = new IdBuffer(Kind.ULID, null, maxAgeMs);
  }

  private boolean closed() {
    return clientClosed.getAsBoolean();
  }

  // -- which buffer, and what is in it ----------------------------------------------------

  /** The buffer of a kind other than segment. */
  IdBuffer of(Kind kind) {
    switch (kind) {
      case SNOWFLAKE:
        return snowflakeBuffer;
      case UUID7:
        return uuid7Buffer;
      default:
        return ulidBuffer;
    }
  }

  /** The buffer of segment {@code tag}, made on first use. */
  IdBuffer segment(String tag) {
    IdBuffer b = segmentBuffers.get(tag);
    if (b == null) b = segmentBuffers.computeIfAbsent(tag, t -> new IdBuffer(Kind.SEGMENT, t, segmentMaxAgeMs));
    return b;
  }

  /** How many IDs the buffer of segment {@code tag} holds now (0 if it was never used). */
  int segmentSize(String tag) {
    return sizeOf(segmentBuffers.get(tag));
  }

  static int sizeOf(IdBuffer b) {
    if (b == null) return 0;
    b.lock.lock();
    try {
      return b.size;
    } finally {
      b.lock.unlock();
    }
  }

  /** Each buffer used so far: size, IDs dropped by the age limit, refills, last error. */
  List<Client.BufferState> states() {
    List<IdBuffer> all = new ArrayList<>(List.of(snowflakeBuffer, uuid7Buffer, ulidBuffer));
    all.addAll(segmentBuffers.values());
    List<Client.BufferState> out = new ArrayList<>();
    for (IdBuffer b : all) {
      b.lock.lock();
      try {
        if (b.tag == null && b.refills == 0 && b.size == 0 && b.error == null) continue;
        out.add(new Client.BufferState(b.kind, b.tag, b.size, b.dropped, b.refills, b.state != IdBuffer.IDLE,
            b.error == null ? "" : b.error.toString()));
      } finally {
        b.lock.unlock();
      }
    }
    return out;
  }

  // -- closing ----------------------------------------------------------------------------

  /**
   * Called once the client is closed: tells the refill thread to stop, drops the buffered
   * IDs and wakes the callers waiting (they find the client closed).
   */
  void stop() {
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
  }

  /** Waits a moment for the refill thread to end (after stop() and the connections closed). */
  void joinRefillThread() {
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

  // -- taking an ID -----------------------------------------------------------------------

  // nextNumber and nextText are the same steps on a long[] and a String[]: one generic
  // version would box every Snowflake and segment ID on the path a buffered call takes.

  /** The next ID of {@code b}, a buffer of numbers; the caller checked that the client is open. */
  long nextNumber(IdBuffer b) {
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

  /** The next ID of {@code b}, a buffer of texts; the caller checked that the client is open. */
  String nextText(IdBuffer b) {
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

  /**
   * The buffer is empty: wait for the refill in progress or run one in this thread, for
   * at most timeoutMs times the number of servers. Returns where the ID is.
   */
  private IdBuffer.Waiter takeSlow(IdBuffer b) {
    int serverCount = failover.servers.size();
    long waitNanos = Clock.nanos((long) timeoutMs * serverCount);
    long deadline = Clock.now() + waitNanos;
    while (true) {
      b.lock.lock();
      try {
        if (closed()) throw Client.closedError();
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
            while (me.batch == null && b.generation == generation && !closed()) {
              long left = deadline - Clock.now();
              if (left <= 0) {
                throw failover.unavailable("no " + b.what + " within " + Clock.roundMs(waitNanos) + " ms (timeoutMs x "
                    + serverCount + " servers): the refill in progress has not finished");
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
          if (closed()) throw Client.closedError();
          if (b.size == 0 && b.error != null) throw b.error.copy();
          continue;
        }
        // Idle, or queued for the refill thread: this thread runs it now (the refill
        // thread skips a buffer no longer queued), in the time left.
        if (deadline - Clock.now() <= Clock.nanos(1)) {
          throw failover.unavailable("no " + b.what + " within " + Clock.roundMs(waitNanos) + " ms (timeoutMs x "
              + serverCount + " servers): other callers took the IDs of the refills");
        }
        b.state = IdBuffer.RUNNING;
      } finally {
        b.lock.unlock();
      }
      IdBuffer.Waiter got = refill(b, true, true, deadline);
      if (got != null) return got;
    }
  }

  // -- refilling --------------------------------------------------------------------------

  /** Queues a background refill: called with b.lock held, b below refillBelow and idle. */
  private void maybeRefill(IdBuffer b) {
    if (closed() || (b.retryAt != 0 && Clock.now() < b.retryAt)) return; // a failed refill asked to wait
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
      if (b == STOP || closed()) return;
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
      got = failover.request(b.kind, b.tag, batch, mustTry, deadline);
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
        if (!closed()) {
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
        b.retryAt = failover.retryTime(error);
      } else {
        // Nothing tried (the refill thread, every server backing off): a caller that
        // finds the buffer empty tries them, rather than failing.
        b.error = null;
        b.retryAt = failover.retryTime(null);
      }
      b.changed.signalAll();
    } finally {
      b.lock.unlock();
    }
    if (error != null) throw error;
    return mine;
  }
}
