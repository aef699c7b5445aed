// Decoding Snowflake IDs without a server: the layouts, rules, keys and values of
// `idforge parse --json` (docs/clients.md, "Decoding without a server"; the layouts are
// those of docs/snowflake.md).
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Idforge.Client
{
    /// <summary>A decoded Snowflake ID: what <c>idforge parse --json</c> prints.</summary>
    public sealed class ParsedId
    {
        readonly List<KeyValuePair<string, ulong>> fields;

        internal ParsedId(ulong id, string layout, long unixMs, List<KeyValuePair<string, ulong>> fields)
        {
            Id = id;
            Layout = layout;
            UnixMs = unixMs;
            Time = Snowflake.FormatTime(unixMs);
            this.fields = fields;
        }

        /// <summary>The ID (printed as text in the JSON, as the server does).</summary>
        public ulong Id { get; }

        /// <summary>The preset's name (lower case) or <c>custom</c>.</summary>
        public string Layout { get; }

        /// <summary>The ID's time as Unix milliseconds.</summary>
        public long UnixMs { get; }

        /// <summary>ISO-8601 UTC with milliseconds; outside the years 0000-9999 the milliseconds as text.</summary>
        public string Time { get; }

        /// <summary>Each non-time field under its key, in layout order (a custom field named
        /// <c>id</c>, <c>layout</c>, <c>unix_ms</c> or <c>time</c> is keyed <c>field_NAME</c>).</summary>
        public IReadOnlyList<KeyValuePair<string, ulong>> Fields => fields;

        /// <summary>The value of field <paramref name="key"/>; <see cref="KeyNotFoundException"/> if the layout has none.</summary>
        public ulong this[string key]
        {
            get
            {
                ulong value;
                if (!TryGetField(key, out value))
                    throw new KeyNotFoundException("layout '" + Layout + "' has no field '" + key + "'");
                return value;
            }
        }

        /// <summary>The value of field <paramref name="key"/>, if the layout has it.</summary>
        public bool TryGetField(string key, out ulong value)
        {
            foreach (var kv in fields)
            {
                if (kv.Key == key)
                {
                    value = kv.Value;
                    return true;
                }
            }
            value = 0;
            return false;
        }

        /// <summary>The exact line of <c>idforge parse --json</c> (without the newline).</summary>
        public string ToJson()
        {
            var sb = new StringBuilder(160);
            sb.Append("{\"id\":\"").Append(Id.ToString(CultureInfo.InvariantCulture)).Append('"');
            sb.Append(",\"layout\":");
            Snowflake.AppendJsonString(sb, Layout);
            sb.Append(",\"unix_ms\":").Append(UnixMs.ToString(CultureInfo.InvariantCulture));
            sb.Append(",\"time\":");
            Snowflake.AppendJsonString(sb, Time);
            foreach (var kv in fields)
            {
                sb.Append(',');
                Snowflake.AppendJsonString(sb, kv.Key);
                sb.Append(':').Append(kv.Value.ToString(CultureInfo.InvariantCulture));
            }
            return sb.Append('}').ToString();
        }

        /// <summary>The same as <see cref="ToJson"/>.</summary>
        public override string ToString() => ToJson();
    }

    /// <summary>The layouts and the decoding behind <see cref="Client.Parse(ulong, string, long?, long?)"/>.</summary>
    internal static class Snowflake
    {
        internal const int IdBits = 64;
        const int MaxFieldBits = 63;
        const int MaxFields = 16;
        internal const long MaxTickMs = 86400000; // the CLI's bound of --tick-ms
        const long TwitterEpochMs = 1288834974657;
        const string SpecExample = "time:41,datacenter:5,worker:5,sequence:12";
        const long MaxIsoMs = 253402300799999; // 9999-12-31T23:59:59.999Z

        internal enum Role { Time, Node, Sequence }

        internal sealed class Field
        {
            public readonly string Name;
            public readonly int Bits;
            public readonly Role Role;
            public int Shift;

            public Field(string name, int bits)
            {
                Name = name;
                Bits = bits;
                Role = RoleOf(name);
            }
        }

        internal sealed class Layout
        {
            public string Name;
            public long EpochMs;
            public long TickMs;
            public Field[] Fields;
            public int TotalBits;
        }

        sealed class Preset
        {
            public string Name;
            public long EpochMs;
            public long TickMs;
            public string Spec;
        }

        // docs/snowflake.md, "Layouts".
        static readonly Preset[] Presets =
        {
            new Preset { Name = "twitter", EpochMs = TwitterEpochMs, TickMs = 1, Spec = "time:41,datacenter:5,worker:5,sequence:12" },
            new Preset { Name = "discord", EpochMs = 1420070400000, TickMs = 1, Spec = "time:42,worker:5,process:5,increment:12" },
            new Preset { Name = "instagram", EpochMs = 1314220021721, TickMs = 1, Spec = "time:41,shard:13,sequence:10" },
            new Preset { Name = "sonyflake", EpochMs = 1409529600000, TickMs = 10, Spec = "time:39,sequence:8,machine:16" },
            new Preset { Name = "baidu", EpochMs = 1463673600000, TickMs = 1000, Spec = "time:28,worker:22,sequence:13" },
        };

        internal static IReadOnlyList<string> PresetNames
        {
            get
            {
                var names = new List<string>();
                foreach (var p in Presets) names.Add(p.Name);
                return names.AsReadOnly();
            }
        }

        static Role RoleOf(string name)
        {
            if (name == "time") return Role.Time;
            if (name == "sequence" || name == "seq" || name == "increment") return Role.Sequence;
            return Role.Node;
        }

        static ArgumentException Error(string message) => new ArgumentException(message);

        // Only ASCII letters change case, as in the CLI.
        static string AsciiLower(string s)
        {
            var chars = s.ToCharArray();
            for (int i = 0; i < chars.Length; i++)
                if (chars[i] >= 'A' && chars[i] <= 'Z') chars[i] = (char)(chars[i] - 'A' + 'a');
            return new string(chars);
        }

        static string Trim(string s) => s.Trim(' ', '\t');

        static bool AllDigits(string s)
        {
            foreach (char c in s)
                if (c < '0' || c > '9') return false;
            return true;
        }

        static bool ValidFieldName(string name)
        {
            if (name.Length == 0 || name[0] < 'a' || name[0] > 'z') return false;
            foreach (char c in name)
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
            return true;
        }

        static string PresetList() => string.Join(", ", PresetNames);

        /// <summary>A preset name (any case, not trimmed) or a custom spec; epochMs &lt; 0 and
        /// tickMs &lt;= 0 mean the layout's own. The checks of the CLI, in its order.</summary>
        internal static Layout Resolve(string spec, long epochMs, long tickMs)
        {
            if (spec == null) throw new ArgumentNullException(nameof(spec), "a layout is a preset name or a spec like " + SpecExample);
            if (spec.Length == 0) spec = "twitter";
            if (spec.IndexOf(':') < 0)
            {
                string wanted = AsciiLower(spec);
                foreach (var p in Presets)
                {
                    if (p.Name != wanted) continue;
                    try
                    {
                        return Create(p.Name, epochMs >= 0 ? epochMs : p.EpochMs, tickMs > 0 ? tickMs : p.TickMs,
                                      ParseSpec(p.Spec));
                    }
                    catch (ArgumentException e)
                    {
                        throw Error("invalid layout '" + spec + "': " + e.Message);
                    }
                }
                throw Error("unknown layout '" + spec + "' (presets: " + PresetList() + ")");
            }
            try
            {
                return Create("custom", epochMs >= 0 ? epochMs : TwitterEpochMs, tickMs > 0 ? tickMs : 1,
                              ParseSpec(Trim(spec)));
            }
            catch (ArgumentException e)
            {
                throw Error("invalid layout '" + spec + "': " + e.Message);
            }
        }

        static List<Field> ParseSpec(string spec)
        {
            var fields = new List<Field>();
            foreach (string raw in spec.Split(','))
            {
                string item = Trim(raw);
                if (item.Length == 0)
                    throw Error("layout spec \"" + spec + "\" has an empty item; expected name:bits,... like " + SpecExample);
                int colon = item.IndexOf(':');
                if (colon < 0 || item.IndexOf(':', colon + 1) >= 0)
                    throw Error("layout spec item \"" + item + "\" is not name:bits (e.g. worker:5)");
                string name = Trim(item.Substring(0, colon));
                string bitsText = Trim(item.Substring(colon + 1));
                if (bitsText.Length == 0 || bitsText.Length > 3 || !AllDigits(bitsText))
                    throw Error("layout spec item \"" + item + "\": width \"" + bitsText + "\" is not a number of bits");
                fields.Add(new Field(name, int.Parse(bitsText, NumberStyles.None, CultureInfo.InvariantCulture)));
            }
            return fields;
        }

        static string FieldError(string field, string what) => "layout field '" + field + "': " + what;

        static Layout Create(string name, long epochMs, long tickMs, List<Field> fields)
        {
            if (fields.Count == 0 || fields.Count > MaxFields)
                throw Error("layout " + name + ": has " + fields.Count + " fields; a layout has 1.." + MaxFields +
                            " (one time, one sequence, any node fields)");
            int total = 0, timeIndex = -1, sequenceIndex = -1;
            for (int i = 0; i < fields.Count; i++)
            {
                Field f = fields[i];
                if (!ValidFieldName(f.Name))
                    throw Error("layout field \"" + f.Name + "\": a name is a lower-case letter then letters, digits or '_'");
                for (int j = 0; j < i; j++)
                    if (fields[j].Name == f.Name) throw Error(FieldError(f.Name, "the name is used twice"));
                if (f.Bits < 1 || f.Bits > MaxFieldBits)
                    throw Error(FieldError(f.Name, "width " + f.Bits + " is not in 1.." + MaxFieldBits));
                total += f.Bits;
                if (total > IdBits)
                    throw Error(FieldError(f.Name, "the widths up to this field sum to " + total + " bits, more than the 64 of an ID"));
                if (f.Role != Role.Node)
                {
                    bool isTime = f.Role == Role.Time;
                    int other = isTime ? timeIndex : sequenceIndex;
                    if (other >= 0)
                        throw Error(FieldError(f.Name, "a layout has one " + (isTime ? "time" : "sequence") + " field and '" +
                                                       fields[other].Name + "' is already it"));
                    if (isTime) timeIndex = i;
                    else sequenceIndex = i;
                }
            }
            if (timeIndex < 0) throw Error("layout " + name + ": has no time field (a custom spec names it 'time')");
            if (sequenceIndex < 0)
                throw Error("layout " + name + ": has no sequence field (a custom spec names it 'sequence', 'seq' or 'increment')");
            if (tickMs < 1) throw Error("layout " + name + ": tick_ms " + tickMs + " is not >= 1");
            if (epochMs < 0) throw Error("layout " + name + ": epoch_ms " + epochMs + " is before 1970");
            // The last tick's Unix ms must fit an int64, so that every decodable ID has a time.
            Field time = fields[timeIndex];
            ulong maxTick = (1UL << time.Bits) - 1;
            ulong headroom = (ulong)(long.MaxValue - epochMs);
            if (maxTick > headroom / (ulong)tickMs)
                throw Error(FieldError(time.Name, time.Bits + " bits of " + tickMs + " ms ticks from epoch " + epochMs +
                                                  " run past the largest int64 Unix ms"));
            int shift = 0;
            for (int i = fields.Count - 1; i >= 0; i--)
            {
                fields[i].Shift = shift;
                shift += fields[i].Bits;
            }
            return new Layout { Name = name, EpochMs = epochMs, TickMs = tickMs, Fields = fields.ToArray(), TotalBits = total };
        }

        internal static ParsedId Decode(ulong id, string layout, long? epochMs, long? tickMs)
        {
            if (epochMs.HasValue && epochMs.Value < 0)
                throw Error("epoch_ms must not be before 1970-01-01, got " + epochMs.Value);
            if (tickMs.HasValue && (tickMs.Value < 1 || tickMs.Value > MaxTickMs))
                throw Error("tick_ms must be from 1 to " + MaxTickMs + ", got " + tickMs.Value);
            Layout lay = Resolve(layout, epochMs ?? -1, tickMs ?? -1);
            if (lay.TotalBits < IdBits && (id >> lay.TotalBits) != 0)
                throw Error("ID " + id + " does not fit layout '" + lay.Name + "', whose IDs have " + lay.TotalBits +
                            " bits (largest " + ((1UL << lay.TotalBits) - 1) + ")");
            long unixMs = 0;
            var values = new List<KeyValuePair<string, ulong>>(lay.Fields.Length);
            foreach (Field f in lay.Fields)
            {
                ulong v = (id >> f.Shift) & ((1UL << f.Bits) - 1);
                if (f.Role == Role.Time)
                {
                    unixMs = lay.EpochMs + (long)v * lay.TickMs; // within int64: checked by Create
                    continue;
                }
                string key = f.Name == "id" || f.Name == "layout" || f.Name == "unix_ms" || f.Name == "time"
                    ? "field_" + f.Name
                    : f.Name;
                // Two fields with one key ("id" and "field_id"): one key, the later value.
                int same = values.FindIndex(kv => kv.Key == key);
                if (same >= 0) values[same] = new KeyValuePair<string, ulong>(key, v);
                else values.Add(new KeyValuePair<string, ulong>(key, v));
            }
            return new ParsedId(id, lay.Name, unixMs, values);
        }

        /// <summary>An unsigned 64-bit decimal number as the CLI reads one: digits only.</summary>
        internal static ulong ParseNumber(string text, string what)
        {
            if (text == null) throw new ArgumentNullException(what, what + " is null");
            if (text.Length == 0) throw Error(what + " is empty");
            ulong value = 0;
            bool tooLarge = false;
            foreach (char c in text)
            {
                if (c < '0' || c > '9') throw Error(what + " must be a non-negative whole number, got '" + text + "'");
                ulong digit = (ulong)(c - '0');
                if (value > (ulong.MaxValue - digit) / 10) tooLarge = true;
                else value = value * 10 + digit;
            }
            if (tooLarge) throw Error(what + " '" + text + "' is too large (the largest is " + ulong.MaxValue + ")");
            return value;
        }

        // -- time ------------------------------------------------------------------------

        static bool IsLeap(long year) => (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

        static int DaysInMonth(long year, int month)
        {
            int[] days = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
            return month == 2 && IsLeap(year) ? 29 : days[month - 1];
        }

        // Days from 0000-01-01 (proleptic Gregorian, year 0 a leap year) to January 1st of year.
        static long DaysBeforeYear(long year)
        {
            if (year <= 0) return 0;
            long y = year - 1;
            return 365 * year + y / 4 - y / 100 + y / 400 + 1;
        }

        static long DaysFromCivil(long year, int month, int day)
        {
            long days = DaysBeforeYear(year) - DaysBeforeYear(1970);
            for (int m = 1; m < month; m++) days += DaysInMonth(year, m);
            return days + day - 1;
        }

        internal static string FormatTime(long unixMs)
        {
            if (unixMs < 0 || unixMs > MaxIsoMs) return unixMs.ToString(CultureInfo.InvariantCulture);
            var t = new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc).AddTicks(unixMs * TimeSpan.TicksPerMillisecond);
            return t.ToString("yyyy'-'MM'-'dd'T'HH':'mm':'ss'.'fff'Z'", CultureInfo.InvariantCulture);
        }

        const string Expected = "is neither Unix ms nor an ISO-8601 time like 2017-09-20T13:43:08.849Z, " +
                                "2017-09-20 15:43:08+02:00 or 2017-09-20";

        static ArgumentException TimeError(string text, string why) => Error("time \"" + text + "\" " + why);

        /// <summary>Unix ms, or ISO-8601 (a date, a date and time with an optional fraction and
        /// zone), as the CLI reads <c>--epoch</c>.</summary>
        internal static long ParseTime(string text)
        {
            if (text == null) throw new ArgumentNullException(nameof(text));
            if (text.Length == 0) throw TimeError(text, Expected);
            if (text[0] == '-' || AllDigits(text))
            {
                bool negative = text[0] == '-';
                string digits = negative ? text.Substring(1) : text;
                if (digits.Length == 0 || !AllDigits(digits)) throw TimeError(text, Expected);
                ulong magnitude;
                try
                {
                    magnitude = ParseNumber(digits, "time");
                }
                catch (ArgumentException)
                {
                    throw TimeError(text, Expected);
                }
                if (magnitude > (ulong)long.MaxValue + (negative ? 1UL : 0UL))
                    throw TimeError(text, "does not fit a 64-bit count of milliseconds");
                return negative ? (long)(0UL - magnitude) : (long)magnitude;
            }
            int pos = 0;
            int year, month, day;
            if (!Digits(text, ref pos, 4, out year) || !Take(text, ref pos, '-') || !Digits(text, ref pos, 2, out month) ||
                !Take(text, ref pos, '-') || !Digits(text, ref pos, 2, out day))
                throw TimeError(text, Expected);
            if (month < 1 || month > 12) throw TimeError(text, "has month " + month + ", not 01..12");
            if (day < 1 || day > DaysInMonth(year, month))
                throw TimeError(text, "has day " + day + ", which month " + month + " of " + year + " does not have");
            long ms = DaysFromCivil(year, month, day) * 86400000L;
            if (pos == text.Length) return ms;
            int hour, minute, second = 0, fracMs = 0;
            if (!(Take(text, ref pos, 'T') || Take(text, ref pos, 't') || Take(text, ref pos, ' ')) ||
                !Digits(text, ref pos, 2, out hour) || !Take(text, ref pos, ':') || !Digits(text, ref pos, 2, out minute))
                throw TimeError(text, Expected);
            if (Take(text, ref pos, ':'))
            {
                if (!Digits(text, ref pos, 2, out second)) throw TimeError(text, Expected);
                if (Take(text, ref pos, '.') || Take(text, ref pos, ','))
                {
                    int start = pos, value = 0;
                    while (pos < text.Length && text[pos] >= '0' && text[pos] <= '9')
                    {
                        if (pos - start < 3) value = value * 10 + (text[pos] - '0');
                        pos++;
                    }
                    if (pos == start) throw TimeError(text, Expected);
                    for (int i = pos - start; i < 3; i++) value *= 10;
                    fracMs = value;
                }
            }
            if (hour > 23 || minute > 59 || second > 59)
                throw TimeError(text, "has a time of day outside 00:00:00..23:59:59");
            ms += hour * 3600000L + minute * 60000L + second * 1000L + fracMs;
            if (pos == text.Length) return ms;
            if (Take(text, ref pos, 'Z') || Take(text, ref pos, 'z'))
            {
                if (pos != text.Length) throw TimeError(text, Expected);
                return ms;
            }
            char sign = text[pos];
            if (!(Take(text, ref pos, '+') || Take(text, ref pos, '-'))) throw TimeError(text, Expected);
            int offHours, offMinutes = 0;
            if (!Digits(text, ref pos, 2, out offHours)) throw TimeError(text, Expected);
            if (pos != text.Length)
            {
                Take(text, ref pos, ':'); // +HH:MM and +HHMM are both ISO-8601
                if (!Digits(text, ref pos, 2, out offMinutes) || pos != text.Length) throw TimeError(text, Expected);
            }
            if (offHours > 23 || offMinutes > 59) throw TimeError(text, "has a zone offset outside -23:59..+23:59");
            long offset = offHours * 3600000L + offMinutes * 60000L;
            return sign == '+' ? ms - offset : ms + offset; // local = UTC + offset
        }

        static bool Take(string text, ref int pos, char c)
        {
            if (pos >= text.Length || text[pos] != c) return false;
            pos++;
            return true;
        }

        static bool Digits(string text, ref int pos, int count, out int value)
        {
            value = 0;
            if (text.Length - pos < count) return false;
            int v = 0;
            for (int i = 0; i < count; i++)
            {
                char c = text[pos + i];
                if (c < '0' || c > '9') return false;
                v = v * 10 + (c - '0');
            }
            pos += count;
            value = v;
            return true;
        }

        internal static void AppendJsonString(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    case '\b': sb.Append("\\b"); break;
                    case '\f': sb.Append("\\f"); break;
                    default:
                        if (c < 0x20) sb.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }
    }
}
