package dev.idforge.client;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;

/**
 * A decoded Snowflake ID: the keys and values of {@code idforge parse --json}.
 *
 * <p>{@link #id()} is the 64-bit unsigned ID in a long (an ID from 2^63 up is a negative
 * long: {@link #idText()} is its decimal text); {@link #fields()} holds each non-time
 * field in layout order under the CLI's key ({@code datacenter}, {@code worker},
 * {@code sequence}, ...; {@code field_id} for a custom field named {@code id}), and
 * {@link #toJson()} is the CLI's exact line. Immutable.
 */
public final class ParsedId {
  private final long id;
  private final String layout;
  private final long unixMs;
  private final String time;
  private final Map<String, Long> fields;

  ParsedId(long id, String layout, long unixMs, String time, Map<String, Long> fields) {
    this.id = id;
    this.layout = layout;
    this.unixMs = unixMs;
    this.time = time;
    this.fields = Collections.unmodifiableMap(fields);
  }

  /** The ID's 64 bits (unsigned: see {@link #idText()}). */
  public long id() {
    return id;
  }

  /** The ID in decimal, read as unsigned: "910499571847892992". */
  public String idText() {
    return Long.toUnsignedString(id);
  }

  /** The layout's name: a preset's or {@code custom}. */
  public String layout() {
    return layout;
  }

  /** The time field as Unix milliseconds. */
  public long unixMs() {
    return unixMs;
  }

  /** ISO-8601 UTC with milliseconds; outside years 0000..9999 the ms as text. */
  public String time() {
    return time;
  }

  /** The non-time fields, in layout order, under the CLI's keys. */
  public Map<String, Long> fields() {
    return fields;
  }

  /** One field's value by its key; IllegalArgumentException for a key the layout lacks. */
  public long get(String key) {
    Long value = fields.get(key);
    if (value == null) {
      throw new IllegalArgumentException("layout " + layout + " has no field '" + key + "'; its keys are " + fields.keySet());
    }
    return value;
  }

  /** The exact line of {@code idforge parse --json} (without the newline). */
  public String toJson() {
    StringBuilder out = new StringBuilder(128);
    out.append("{\"id\":\"").append(idText()).append("\",\"layout\":\"").append(layout)
        .append("\",\"unix_ms\":").append(unixMs).append(",\"time\":\"").append(time).append('"');
    // Keys are field names ([a-z][a-z0-9_]*) and layout names: nothing to escape.
    for (Map.Entry<String, Long> e : fields.entrySet()) {
      out.append(",\"").append(e.getKey()).append("\":").append(e.getValue());
    }
    return out.append('}').toString();
  }

  @Override
  public String toString() {
    return toJson();
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ParsedId)) return false;
    ParsedId p = (ParsedId) o;
    return id == p.id && unixMs == p.unixMs && layout.equals(p.layout) && time.equals(p.time)
        && fields.equals(p.fields);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, layout, unixMs, fields);
  }

  /**
   * An unsigned 64-bit number from decimal text, as the CLI reads an ID: digits only
   * (leading zeros allowed), up to 18446744073709551615.
   */
  static long parseUnsigned(String text, String what) {
    if (text.isEmpty()) throw new IllegalArgumentException(what + " is empty");
    if (!IsoTime.allDigits(text)) {
      throw new IllegalArgumentException(what + " must be a non-negative whole number, got '" + text + "'");
    }
    try {
      return Long.parseUnsignedLong(text);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          what + " '" + text + "' is too large (the largest is 18446744073709551615)");
    }
  }
}
