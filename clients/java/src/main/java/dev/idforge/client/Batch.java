package dev.idforge.client;

/**
 * The IDs of one answer: numbers for Snowflake and segment IDs, text for UUIDv7 and ULID.
 * In a buffer, {@code next} is the first not yet handed out (changed under the buffer's
 * lock; the arrays are never written after the answer was read).
 */
final class Batch {
  final long[] numbers;
  final String[] texts;
  final int size;
  int next;
  /** When the request that fetched them was sent (Clock.now()). */
  long fetchedAt;

  Batch(long[] numbers) {
    this.numbers = numbers;
    this.texts = null;
    this.size = numbers.length;
  }

  Batch(String[] texts) {
    this.numbers = null;
    this.texts = texts;
    this.size = texts.length;
  }

  int left() {
    return size - next;
  }
}
