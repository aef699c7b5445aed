package dev.idforge.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A Snowflake layout: a preset ({@code twitter}, {@code discord}, {@code instagram},
 * {@code sonyflake}, {@code baidu}; any case) or a custom spec such as
 * {@code "time:41,datacenter:5,worker:5,sequence:12"}, with an epoch and a tick. The
 * rules and messages are those of {@code idforge parse} (src/core/layout.cc), so what
 * the CLI refuses, this refuses with an {@link IllegalArgumentException}.
 *
 * <pre>{@code
 * Layout.of("discord").decode(175928847299117063L).get("increment");  // 7
 * Layout.of("time:41,shard:10,seq:12", 0L, null);                     // custom, epoch 1970
 * }</pre>
 *
 * <p>Immutable: thread-safe.
 */
public final class Layout {
  /** What a field of a layout holds. */
  public enum Role {
    TIME,
    NODE,
    SEQUENCE
  }

  /** One field: its name, width in bits and role (from its name). */
  public record Field(String name, int bits, Role role) {}

  /** The preset names, in the CLI's order. */
  public static final List<String> PRESETS =
      List.of("twitter", "discord", "instagram", "sonyflake", "baidu");

  /** The most ms a tick may last, as the CLI's --tick-ms allows: a day. */
  public static final long MAX_TICK_MS = 86_400_000L;

  private static final int ID_BITS = 64;
  private static final int MAX_FIELD_BITS = 63;
  private static final int MAX_FIELDS = 16;
  private static final long TWITTER_EPOCH_MS = 1288834974657L;
  private static final String SPEC_EXAMPLE = "time:41,datacenter:5,worker:5,sequence:12";
  private static final List<String> RESERVED_KEYS = List.of("id", "layout", "unix_ms", "time");

  private static final Map<String, Layout> PRESET_LAYOUTS = new LinkedHashMap<>();

  static {
    // docs/snowflake.md, "Layouts"; the same table as src/core/layout.cc.
    preset("twitter", TWITTER_EPOCH_MS, 1, "time", 41, "datacenter", 5, "worker", 5, "sequence", 12);
    preset("discord", 1420070400000L, 1, "time", 42, "worker", 5, "process", 5, "increment", 12);
    preset("instagram", 1314220021721L, 1, "time", 41, "shard", 13, "sequence", 10);
    preset("sonyflake", 1409529600000L, 10, "time", 39, "sequence", 8, "machine", 16);
    // uid-generator reads its epoch "2016-05-20" in China time (UTC+8).
    preset("baidu", 1463673600000L, 1000, "time", 28, "worker", 22, "sequence", 13);
  }

  private static void preset(String name, long epochMs, long tickMs, Object... nameBits) {
    List<Field> fields = new ArrayList<>();
    for (int i = 0; i < nameBits.length; i += 2) {
      String field = (String) nameBits[i];
      fields.add(new Field(field, (Integer) nameBits[i + 1], roleOf(field)));
    }
    PRESET_LAYOUTS.put(name, create(name, epochMs, tickMs, fields));
  }

  private final String name;
  private final long epochMs;
  private final long tickMs;
  private final List<Field> fields;
  private final int[] shifts;
  private final int totalBits;
  private final int timeIndex;

  private Layout(String name, long epochMs, long tickMs, List<Field> fields, int[] shifts,
      int totalBits, int timeIndex) {
    this.name = name;
    this.epochMs = epochMs;
    this.tickMs = tickMs;
    this.fields = List.copyOf(fields);
    this.shifts = shifts;
    this.totalBits = totalBits;
    this.timeIndex = timeIndex;
  }

  /** The layout's name: the preset's (lower case) or {@code custom}. */
  public String name() {
    return name;
  }

  public long epochMs() {
    return epochMs;
  }

  public long tickMs() {
    return tickMs;
  }

  /** The fields, most significant first. */
  public List<Field> fields() {
    return fields;
  }

  /** The sum of the field widths: an ID of this layout has at most this many bits. */
  public int totalBits() {
    return totalBits;
  }

  /** A preset (any case) or a custom spec, with its own epoch and tick. */
  public static Layout of(String layout) {
    return of(layout, null, null);
  }

  /**
   * A preset (any case) or a custom spec; {@code epochMs} (Unix ms, not before 1970) and
   * {@code tickMs} (1..86400000) replace the layout's own when not null. A custom spec
   * has the Twitter epoch and 1 ms ticks unless given.
   */
  public static Layout of(String layout, Long epochMs, Long tickMs) {
    if (layout == null) throw new IllegalArgumentException("layout must be a preset name or a spec, got null");
    long epoch = -1;
    if (epochMs != null) {
      if (epochMs < 0) throw new IllegalArgumentException("epoch_ms must not be before 1970-01-01");
      epoch = epochMs;
    }
    long tick = -1;
    if (tickMs != null) {
      if (tickMs < 1 || tickMs > MAX_TICK_MS) {
        throw new IllegalArgumentException(
            "tick_ms must be from 1 to " + MAX_TICK_MS + ", got " + tickMs);
      }
      tick = tickMs;
    }
    return resolve(layout, epoch, tick);
  }

  /**
   * The layout of the CLI's flags as text: --layout, --epoch (Unix ms or ISO-8601; null
   * for the layout's own) and --tick-ms (null for the layout's own).
   */
  public static Layout fromFlags(String layout, String epoch, String tickMs) {
    long epochMs = -1;
    if (epoch != null) {
      try {
        epochMs = IsoTime.parse(epoch);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--epoch: " + e.getMessage());
      }
      if (epochMs < 0) throw new IllegalArgumentException("--epoch must not be before 1970-01-01");
    }
    long tick = -1;
    if (tickMs != null) {
      tick = ParsedId.parseUnsigned(tickMs, "--tick-ms");
      if (tick == 0 || Long.compareUnsigned(tick, MAX_TICK_MS) > 0) {
        throw new IllegalArgumentException(
            "--tick-ms must be from 1 to " + MAX_TICK_MS + ", got " + Long.toUnsignedString(tick));
      }
    }
    return resolve(layout == null ? "" : layout, epochMs, tick);
  }

  /** resolve_layout_spec: epoch and tick negative for the layout's own. */
  private static Layout resolve(String spec, long epochMs, long tickMs) {
    if (spec.isEmpty()) spec = "twitter";
    // A word without ':' can only be a preset (as given: no trimming here, as the CLI).
    if (spec.indexOf(':') < 0 && preset(spec) == null) {
      throw new IllegalArgumentException(
          "unknown layout '" + spec + "' (presets: " + String.join(", ", PRESETS) + ")");
    }
    try {
      String text = trim(spec);
      if (text.indexOf(':') < 0) {
        Layout p = preset(text);
        if (epochMs < 0 && tickMs <= 0) return p;
        return create(p.name, epochMs >= 0 ? epochMs : p.epochMs, tickMs > 0 ? tickMs : p.tickMs,
            p.fields);
      }
      return create("custom", epochMs >= 0 ? epochMs : TWITTER_EPOCH_MS, tickMs > 0 ? tickMs : 1,
          parseSpec(text));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid layout '" + spec + "': " + e.getMessage());
    }
  }

  private static Layout preset(String name) {
    return PRESET_LAYOUTS.get(name.toLowerCase(Locale.ROOT));
  }

  private static Role roleOf(String name) {
    switch (name) {
      case "time":
        return Role.TIME;
      case "sequence":
      case "seq":
      case "increment":
        return Role.SEQUENCE;
      default:
        return Role.NODE;
    }
  }

  private static String trim(String s) {
    int a = 0;
    int b = s.length();
    while (a < b && (s.charAt(a) == ' ' || s.charAt(a) == '\t')) a++;
    while (b > a && (s.charAt(b - 1) == ' ' || s.charAt(b - 1) == '\t')) b--;
    return s.substring(a, b);
  }

  private static List<Field> parseSpec(String spec) {
    List<Field> fields = new ArrayList<>();
    for (String raw : spec.split(",", -1)) {
      String item = trim(raw);
      if (item.isEmpty()) {
        throw new IllegalArgumentException("layout spec \"" + spec
            + "\" has an empty item; expected name:bits,... like " + SPEC_EXAMPLE);
      }
      int colon = item.indexOf(':');
      if (colon < 0 || item.indexOf(':', colon + 1) >= 0) {
        throw new IllegalArgumentException(
            "layout spec item \"" + item + "\" is not name:bits (e.g. worker:5)");
      }
      String name = trim(item.substring(0, colon));
      String bitsText = trim(item.substring(colon + 1));
      // Widths beyond three digits cannot be valid.
      if (bitsText.isEmpty() || bitsText.length() > 3 || !IsoTime.allDigits(bitsText)) {
        throw new IllegalArgumentException("layout spec item \"" + item + "\": width \""
            + bitsText + "\" is not a number of bits");
      }
      fields.add(new Field(name, Integer.parseInt(bitsText), roleOf(name)));
    }
    return fields;
  }

  private static boolean validFieldName(String name) {
    if (name.isEmpty() || name.charAt(0) < 'a' || name.charAt(0) > 'z') return false;
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
  }

  private static IllegalArgumentException fieldError(String field, String what) {
    return new IllegalArgumentException("layout field '" + field + "': " + what);
  }

  private static IllegalArgumentException layoutError(String layout, String what) {
    return new IllegalArgumentException(
        "layout " + (layout.isEmpty() ? "(unnamed)" : layout) + ": " + what);
  }

  /** Layout::create: the same checks in the same order. */
  private static Layout create(String name, long epochMs, long tickMs, List<Field> fields) {
    if (fields.isEmpty() || fields.size() > MAX_FIELDS) {
      throw layoutError(name, "has " + fields.size() + " fields; a layout has 1.." + MAX_FIELDS
          + " (one time, one sequence, any node fields)");
    }
    int total = 0;
    int timeIndex = -1;
    int sequenceIndex = -1;
    for (int i = 0; i < fields.size(); i++) {
      Field f = fields.get(i);
      if (!validFieldName(f.name())) {
        throw new IllegalArgumentException("layout field \"" + f.name()
            + "\": a name is a lower-case letter then letters, digits or '_'");
      }
      for (int j = 0; j < i; j++) {
        if (fields.get(j).name().equals(f.name())) throw fieldError(f.name(), "the name is used twice");
      }
      if (f.bits() < 1 || f.bits() > MAX_FIELD_BITS) {
        throw fieldError(f.name(), "width " + f.bits() + " is not in 1.." + MAX_FIELD_BITS);
      }
      total += f.bits();
      if (total > ID_BITS) {
        throw fieldError(f.name(), "the widths up to this field sum to " + total
            + " bits, more than the 64 of an ID");
      }
      if (f.role() == Role.TIME || f.role() == Role.SEQUENCE) {
        boolean time = f.role() == Role.TIME;
        int other = time ? timeIndex : sequenceIndex;
        if (other >= 0) {
          throw fieldError(f.name(), "a layout has one " + (time ? "time" : "sequence")
              + " field and '" + fields.get(other).name() + "' is already it");
        }
        if (time) {
          timeIndex = i;
        } else {
          sequenceIndex = i;
        }
      }
    }
    if (timeIndex < 0) throw layoutError(name, "has no time field (a custom spec names it 'time')");
    if (sequenceIndex < 0) {
      throw layoutError(name,
          "has no sequence field (a custom spec names it 'sequence', 'seq' or 'increment')");
    }
    if (tickMs < 1) throw layoutError(name, "tick_ms " + tickMs + " is not >= 1");
    if (epochMs < 0) throw layoutError(name, "epoch_ms " + epochMs + " is before 1970");
    // The time of the largest tick must be an int64 of Unix ms.
    Field time = fields.get(timeIndex);
    long maxTick = (1L << time.bits()) - 1;
    if (maxTick > (Long.MAX_VALUE - epochMs) / tickMs) {
      throw fieldError(time.name(), time.bits() + " bits of " + tickMs + " ms ticks from epoch "
          + epochMs + " run past the largest int64 Unix ms");
    }
    int[] shifts = new int[fields.size()];
    int shift = 0;
    for (int i = fields.size() - 1; i >= 0; i--) {
      shifts[i] = shift;
      shift += fields.get(i).bits();
    }
    return new Layout(name, epochMs, tickMs, fields, shifts, total, timeIndex);
  }

  /**
   * Decodes an ID, a 64-bit unsigned number held in a long (so IDs from 2^63 up are
   * negative longs; {@link Long#parseUnsignedLong} reads their text). Throws
   * IllegalArgumentException when the ID has more bits than the layout.
   */
  public ParsedId decode(long id) {
    if (totalBits < ID_BITS && (id >>> totalBits) != 0) {
      throw new IllegalArgumentException("ID " + Long.toUnsignedString(id) + " does not fit layout '"
          + name + "', whose IDs have " + totalBits + " bits (largest " + ((1L << totalBits) - 1) + ")");
    }
    long unixMs = 0;
    LinkedHashMap<String, Long> values = new LinkedHashMap<>();
    for (int i = 0; i < fields.size(); i++) {
      Field f = fields.get(i);
      long value = (id >>> shifts[i]) & ((1L << f.bits()) - 1);
      if (i == timeIndex) {
        unixMs = epochMs + value * tickMs;
      } else {
        // A custom field named like a fixed key gets a prefix; a key seen twice keeps its
        // first place and takes the later value, as in the CLI's JSON object.
        String key = RESERVED_KEYS.contains(f.name()) ? "field_" + f.name() : f.name();
        values.put(key, value);
      }
    }
    return new ParsedId(id, name, unixMs, IsoTime.format(unixMs), values);
  }

  @Override
  public String toString() {
    StringBuilder spec = new StringBuilder();
    for (Field f : fields) spec.append(spec.length() == 0 ? "" : ",").append(f.name()).append(':').append(f.bits());
    return name + " (" + spec + ", epoch " + epochMs + " ms, tick " + tickMs + " ms)";
  }
}
