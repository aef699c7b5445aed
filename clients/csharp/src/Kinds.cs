// The kinds of ID a client asks for (snowflake, uuid7, ulid, segment): their wire names
// and how an answer's text becomes a value.
using System;

namespace Idforge.Client
{
    /// <summary>What a kind of ID is on the wire, and how its text becomes a value.</summary>
    internal abstract class Kind
    {
        protected Kind(IdKind id, string name, string httpPath, string respCommand, bool isInteger, bool timeOrdered)
        {
            Id = id;
            Name = name;
            HttpPath = httpPath;
            RespCommand = respCommand;
            IsInteger = isInteger;
            TimeOrdered = timeOrdered;
        }

        public readonly IdKind Id;
        public readonly string Name;
        public readonly string HttpPath;
        public readonly string RespCommand;
        public readonly bool IsInteger;
        public readonly bool TimeOrdered;

        public string What(string tag) => tag == null ? Name + " IDs" : "segment IDs of tag '" + tag + "'";
    }

    internal sealed class Kind<T> : Kind
    {
        public Kind(IdKind id, string name, string httpPath, string respCommand, bool isInteger, bool timeOrdered,
                    Func<string, T> fromText, Func<ulong, T> fromNumber)
            : base(id, name, httpPath, respCommand, isInteger, timeOrdered)
        {
            FromText = fromText;
            FromNumber = fromNumber;
        }

        /// <summary>The value of one ID's text; FormatException when it is not one.</summary>
        public readonly Func<string, T> FromText;

        /// <summary>Integer kinds: the value of a number read from the answer; FormatException
        /// when it is out of the kind's range.</summary>
        public readonly Func<ulong, T> FromNumber;
    }

    internal static class Kinds
    {
        public static readonly Kind<ulong> Snowflake =
            new Kind<ulong>(IdKind.Snowflake, "snowflake", "/v1/snowflake", "ID.SNOWFLAKE", true, true, Unsigned, v => v);
        public static readonly Kind<long> Segment =
            new Kind<long>(IdKind.Segment, "segment", "/v1/segment/", "ID.NEXT", true, false, Signed, SegmentId);
        public static readonly Kind<string> Uuid7 =
            new Kind<string>(IdKind.Uuid7, "uuid7", "/v1/uuid7", "ID.UUID7", false, true, Text, null);
        public static readonly Kind<string> Ulid =
            new Kind<string>(IdKind.Ulid, "ulid", "/v1/ulid", "ID.ULID", false, true, Text, null);

        /// <summary>Decimal digits only (no sign, no spaces), at most 2^64-1.</summary>
        public static bool TryDigits(string text, int offset, int count, out ulong value)
        {
            value = 0;
            if (count < 1 || count > 20) return false;
            for (int i = offset; i < offset + count; i++)
            {
                uint digit = (uint)(text[i] - '0');
                if (digit > 9 || value > (ulong.MaxValue - digit) / 10) return false;
                value = value * 10 + digit;
            }
            return true;
        }

        /// <summary>The same over bytes.</summary>
        public static bool TryDigits(byte[] bytes, int offset, int count, out ulong value)
        {
            value = 0;
            if (count < 1 || count > 20) return false;
            for (int i = offset; i < offset + count; i++)
            {
                uint digit = (uint)(bytes[i] - '0');
                if (digit > 9 || value > (ulong.MaxValue - digit) / 10) return false;
                value = value * 10 + digit;
            }
            return true;
        }

        static ulong Unsigned(string text)
        {
            ulong value;
            if (!TryDigits(text, 0, text.Length, out value))
                throw new FormatException("not a 64-bit unsigned ID: '" + Cut(text) + "'");
            return value;
        }

        // Segment IDs stay within 1 .. 2^63-1 (docs/stores.md).
        static long SegmentId(ulong value)
        {
            if (value > long.MaxValue) throw new FormatException("not a segment ID: " + value);
            return (long)value;
        }

        static long Signed(string text)
        {
            ulong value;
            if (!TryDigits(text, 0, text.Length, out value) || value > long.MaxValue)
                throw new FormatException("not a segment ID: '" + Cut(text) + "'");
            return (long)value;
        }

        static string Text(string text)
        {
            if (text.Length == 0 || text.Length > 64) throw new FormatException("not an ID: '" + Cut(text) + "'");
            foreach (char c in text)
                if (c <= ' ' || c > '~') throw new FormatException("not an ID: '" + Cut(text) + "'");
            return text;
        }

        internal static string Cut(string s, int max = 80) => s.Length <= max ? s : s.Substring(0, max) + "...";
    }
}
