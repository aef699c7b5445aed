package dev.idforge.client;

/**
 * A monotonic clock in nanoseconds that starts above 0, so that 0 can mean "none" and
 * times compare with {@code <} for the next 292 years.
 */
final class Clock {
  private Clock() {}

  private static final long ORIGIN = System.nanoTime() - 1;

  static long now() {
    return System.nanoTime() - ORIGIN;
  }

  /** Milliseconds as nanoseconds. */
  static long nanos(long ms) {
    return ms * 1_000_000L;
  }

  /** Nanoseconds as whole milliseconds, rounded. */
  static long roundMs(long nanos) {
    return Math.round(nanos / 1e6);
  }
}
