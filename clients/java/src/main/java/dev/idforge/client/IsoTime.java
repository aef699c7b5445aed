package dev.idforge.client;

import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

/**
 * Unix milliseconds as ISO-8601 UTC text and back, by the rules of idforge's CLI
 * (format_iso8601_utc and parse_time in include/idforge/time_format.h): years
 * 0000..9999 only, other times as the number; an epoch given as Unix ms or ISO-8601.
 */
final class IsoTime {
  private IsoTime() {}

  private static final long MS_PER_DAY = 86_400_000L;
  /** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z, in Unix ms. */
  static final long MIN_ISO_MS = LocalDate.of(0, 1, 1).toEpochDay() * MS_PER_DAY;
  static final long MAX_ISO_MS = LocalDate.of(10000, 1, 1).toEpochDay() * MS_PER_DAY - 1;

  private static final String EXPECTED =
      "is neither Unix ms nor an ISO-8601 time like 2017-09-20T13:43:08.849Z, "
          + "2017-09-20 15:43:08+02:00 or 2017-09-20";

  /** "2017-09-20T13:43:08.849Z"; outside years 0000..9999 the milliseconds as text. */
  static String format(long unixMs) {
    if (unixMs < MIN_ISO_MS || unixMs > MAX_ISO_MS) return Long.toString(unixMs);
    LocalDateTime t =
        LocalDateTime.ofEpochSecond(
            Math.floorDiv(unixMs, 1000L), (int) Math.floorMod(unixMs, 1000L) * 1_000_000, ZoneOffset.UTC);
    char[] out = new char[24];
    put(out, 0, t.getYear(), 4);
    out[4] = '-';
    put(out, 5, t.getMonthValue(), 2);
    out[7] = '-';
    put(out, 8, t.getDayOfMonth(), 2);
    out[10] = 'T';
    put(out, 11, t.getHour(), 2);
    out[13] = ':';
    put(out, 14, t.getMinute(), 2);
    out[16] = ':';
    put(out, 17, t.getSecond(), 2);
    out[19] = '.';
    put(out, 20, t.getNano() / 1_000_000, 3);
    out[23] = 'Z';
    return new String(out);
  }

  private static void put(char[] out, int at, int value, int width) {
    for (int i = width - 1; i >= 0; i--) {
      out[at + i] = (char) ('0' + value % 10);
      value /= 10;
    }
  }

  private static IllegalArgumentException error(String text, String why) {
    return new IllegalArgumentException("time \"" + text + "\" " + why);
  }

  /**
   * Unix ms from decimal text ("1505914988849", "-1") or an ISO-8601 date-time
   * ("2017-09-20T13:43:08.849Z", "2017-09-20 15:43:08+02:00", "2017-09-20"), as the
   * CLI's --epoch reads it. Throws IllegalArgumentException naming what is wrong.
   */
  static long parse(String text) {
    if (text.isEmpty()) throw error(text, EXPECTED);
    if (text.charAt(0) == '-' || allDigits(text)) return parseDecimal(text);
    Scanner s = new Scanner(text);
    int year = s.digits(4);
    if (year < 0 || !s.take('-')) throw error(text, EXPECTED);
    int month = s.digits(2);
    if (month < 0 || !s.take('-')) throw error(text, EXPECTED);
    int day = s.digits(2);
    if (day < 0) throw error(text, EXPECTED);
    if (month < 1 || month > 12) throw error(text, "has month " + month + ", not 01..12");
    if (day < 1 || day > LocalDate.of(year, month, 1).lengthOfMonth()) {
      throw error(text, "has day " + day + ", which month " + month + " of " + year + " does not have");
    }
    long ms = LocalDate.of(year, month, day).toEpochDay() * MS_PER_DAY;
    if (s.done()) return ms; // a date alone: midnight UTC

    if (!(s.take('T') || s.take('t') || s.take(' '))) throw error(text, EXPECTED);
    int hour = s.digits(2);
    if (hour < 0 || !s.take(':')) throw error(text, EXPECTED);
    int minute = s.digits(2);
    if (minute < 0) throw error(text, EXPECTED);
    int second = 0;
    int fraction = 0;
    if (s.take(':')) {
      second = s.digits(2);
      if (second < 0) throw error(text, EXPECTED);
      if (s.take('.') || s.take(',')) {
        fraction = s.fractionMs();
        if (fraction < 0) throw error(text, EXPECTED);
      }
    }
    if (hour > 23 || minute > 59 || second > 59) {
      throw error(text, "has a time of day outside 00:00:00..23:59:59");
    }
    ms += hour * 3_600_000L + minute * 60_000L + second * 1000L + fraction;
    if (s.done() || s.take('Z') || s.take('z')) {
      if (!s.done()) throw error(text, EXPECTED);
      return ms;
    }
    char sign = s.peek();
    if (!(s.take('+') || s.take('-'))) throw error(text, EXPECTED);
    int offHours = s.digits(2);
    if (offHours < 0) throw error(text, EXPECTED);
    int offMinutes = 0;
    if (!s.done()) {
      s.take(':'); // +HH:MM and +HHMM are both ISO-8601
      offMinutes = s.digits(2);
      if (offMinutes < 0 || !s.done()) throw error(text, EXPECTED);
    }
    if (offHours > 23 || offMinutes > 59) {
      throw error(text, "has a zone offset outside -23:59..+23:59");
    }
    long offset = offHours * 3_600_000L + offMinutes * 60_000L;
    return sign == '+' ? ms - offset : ms + offset; // local = UTC + offset
  }

  private static long parseDecimal(String text) {
    boolean negative = text.charAt(0) == '-';
    String digits = negative ? text.substring(1) : text;
    if (digits.isEmpty() || !allDigits(digits)) throw error(text, EXPECTED);
    long magnitude;
    try {
      magnitude = Long.parseUnsignedLong(digits);
    } catch (NumberFormatException e) {
      throw error(text, EXPECTED); // beyond 64 bits
    }
    if (Long.compareUnsigned(magnitude, Long.MAX_VALUE + (negative ? 1L : 0L)) > 0) {
      throw error(text, "does not fit a 64-bit count of milliseconds");
    }
    return negative ? -magnitude : magnitude;
  }

  static boolean allDigits(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < '0' || c > '9') return false;
    }
    return true;
  }

  /** A cursor over the text; every reader consumes nothing when it does not match. */
  private static final class Scanner {
    private final String text;
    private int pos;

    Scanner(String text) {
      this.text = text;
    }

    boolean done() {
      return pos == text.length();
    }

    char peek() {
      return done() ? '\0' : text.charAt(pos);
    }

    boolean take(char c) {
      if (peek() != c) return false;
      pos++;
      return true;
    }

    /** Exactly {@code count} digits as a number, or -1. */
    int digits(int count) {
      if (text.length() - pos < count) return -1;
      int v = 0;
      for (int i = 0; i < count; i++) {
        char c = text.charAt(pos + i);
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
      }
      pos += count;
      return v;
    }

    /** One or more digits read as a fraction of a second, cut to ms; -1 for none. */
    int fractionMs() {
      int start = pos;
      int value = 0;
      while (!done() && peek() >= '0' && peek() <= '9') {
        if (pos - start < 3) value = value * 10 + (peek() - '0');
        pos++;
      }
      int n = pos - start;
      if (n == 0) return -1;
      for (int i = n; i < 3; i++) value *= 10;
      return value;
    }
  }
}
