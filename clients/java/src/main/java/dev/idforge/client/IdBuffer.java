package dev.idforge.client;

import java.util.ArrayDeque;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The buffered IDs of one kind (and segment tag): the batches in the order they came,
 * each with the time its request was sent, and the state of its refill. Every field is
 * guarded by {@link #lock}.
 */
final class IdBuffer {
  static final int IDLE = 0;
  static final int QUEUED = 1; // for the refill thread
  static final int RUNNING = 2;

  /** A caller waiting on the empty buffer: a refill hands it an ID before keeping any. */
  static final class Waiter {
    Batch batch;
    int index = -1;
  }

  final Kind kind;
  final String tag;
  final String what;
  /** 0: no age limit. */
  final long maxAgeNanos;
  final ReentrantLock lock = new ReentrantLock();
  final Condition changed = lock.newCondition();
  final ArrayDeque<Batch> batches = new ArrayDeque<>();
  final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
  int size;
  int state = IDLE;
  /** Counts finished refills. */
  long generation;
  /** The last refill's error; null when it worked. */
  IdforgeException error;
  /** No background refill before this (Clock.now()); 0: none. */
  long retryAt;
  long dropped;
  long refills;

  IdBuffer(Kind kind, String tag, long maxAgeMs) {
    this.kind = kind;
    this.tag = tag;
    this.what = tag == null ? kind + " IDs" : "segment IDs of tag '" + tag + "'";
    this.maxAgeNanos = Clock.nanos(maxAgeMs);
  }

  /** Drops the batches fetched more than the age limit ago. */
  void expire(long now) {
    Batch first;
    while ((first = batches.peekFirst()) != null && now - first.fetchedAt > maxAgeNanos) {
      batches.pollFirst();
      size -= first.left();
      dropped += first.left();
    }
  }

  /** The oldest batch; the caller takes its ID at {@code next} and calls {@link #took}. */
  Batch first() {
    return batches.peekFirst();
  }

  void took(Batch b) {
    if (++b.next == b.size) batches.pollFirst();
    size--;
  }

  void clear() {
    batches.clear();
    size = 0;
  }
}
