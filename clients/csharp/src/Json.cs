// A small strict JSON reader for the server's answers: objects become
// Dictionary<string, object>, arrays List<object>, strings string, numbers JsonNumber (the
// text: IDs must never pass through a floating-point type), true/false bool, null null.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Idforge.Client
{
    internal sealed class JsonNumber
    {
        public readonly string Text;

        public JsonNumber(string text)
        {
            Text = text;
        }

        public override string ToString() => Text;
    }

    internal sealed class Json
    {
        const int MaxDepth = 64;
        readonly string text;
        int pos;

        Json(string text)
        {
            this.text = text;
        }

        /// <summary>The value of <paramref name="text"/>; FormatException when it is not JSON.</summary>
        public static object Parse(string text)
        {
            var reader = new Json(text);
            object value = reader.Value(0);
            reader.Space();
            if (reader.pos != text.Length) throw reader.Fail("text after the value");
            return value;
        }

        FormatException Fail(string what) => new FormatException("not JSON: " + what + " at offset " + pos);

        void Space()
        {
            while (pos < text.Length && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r'))
                pos++;
        }

        object Value(int depth)
        {
            if (depth > MaxDepth) throw Fail("nested too deep");
            Space();
            if (pos >= text.Length) throw Fail("the end");
            char c = text[pos];
            switch (c)
            {
                case '{':
                    return Object(depth);
                case '[':
                    return Array(depth);
                case '"':
                    return String();
                case 't':
                    Word("true");
                    return true;
                case 'f':
                    Word("false");
                    return false;
                case 'n':
                    Word("null");
                    return null;
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return Number();
                    throw Fail("unexpected '" + c + "'");
            }
        }

        void Word(string word)
        {
            if (string.CompareOrdinal(text, pos, word, 0, word.Length) != 0) throw Fail("a bad literal");
            pos += word.Length;
        }

        Dictionary<string, object> Object(int depth)
        {
            var result = new Dictionary<string, object>(StringComparer.Ordinal);
            pos++; // {
            Space();
            if (pos < text.Length && text[pos] == '}')
            {
                pos++;
                return result;
            }
            while (true)
            {
                Space();
                if (pos >= text.Length || text[pos] != '"') throw Fail("no key");
                string key = String();
                Space();
                if (pos >= text.Length || text[pos] != ':') throw Fail("no ':'");
                pos++;
                result[key] = Value(depth + 1);
                Space();
                if (pos < text.Length && text[pos] == ',')
                {
                    pos++;
                    continue;
                }
                if (pos < text.Length && text[pos] == '}')
                {
                    pos++;
                    return result;
                }
                throw Fail("no ',' or '}'");
            }
        }

        List<object> Array(int depth)
        {
            var result = new List<object>();
            pos++; // [
            Space();
            if (pos < text.Length && text[pos] == ']')
            {
                pos++;
                return result;
            }
            while (true)
            {
                result.Add(Value(depth + 1));
                Space();
                if (pos < text.Length && text[pos] == ',')
                {
                    pos++;
                    continue;
                }
                if (pos < text.Length && text[pos] == ']')
                {
                    pos++;
                    return result;
                }
                throw Fail("no ',' or ']'");
            }
        }

        string String()
        {
            pos++; // "
            // Most strings (every ID) have no escape: one substring.
            for (int i = pos; i < text.Length; i++)
            {
                char c = text[i];
                if (c == '"')
                {
                    string plain = text.Substring(pos, i - pos);
                    pos = i + 1;
                    return plain;
                }
                if (c == '\\' || c < 0x20) break;
            }
            var sb = new StringBuilder();
            while (true)
            {
                if (pos >= text.Length) throw Fail("an unterminated string");
                char c = text[pos++];
                if (c == '"') return sb.ToString();
                if (c < 0x20) throw Fail("a control character in a string");
                if (c != '\\')
                {
                    sb.Append(c);
                    continue;
                }
                if (pos >= text.Length) throw Fail("an unterminated escape");
                char e = text[pos++];
                switch (e)
                {
                    case '"': sb.Append('"'); break;
                    case '\\': sb.Append('\\'); break;
                    case '/': sb.Append('/'); break;
                    case 'b': sb.Append('\b'); break;
                    case 'f': sb.Append('\f'); break;
                    case 'n': sb.Append('\n'); break;
                    case 'r': sb.Append('\r'); break;
                    case 't': sb.Append('\t'); break;
                    case 'u':
                        int code;
                        if (pos + 4 > text.Length ||
                            !int.TryParse(text.Substring(pos, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code))
                            throw Fail("a bad \\u escape");
                        pos += 4;
                        sb.Append((char)code);
                        break;
                    default:
                        throw Fail("a bad escape");
                }
            }
        }

        JsonNumber Number()
        {
            int start = pos;
            if (text[pos] == '-') pos++;
            int digits = pos;
            while (pos < text.Length && text[pos] >= '0' && text[pos] <= '9') pos++;
            if (pos == digits) throw Fail("a bad number");
            if (pos < text.Length && text[pos] == '.')
            {
                pos++;
                int frac = pos;
                while (pos < text.Length && text[pos] >= '0' && text[pos] <= '9') pos++;
                if (pos == frac) throw Fail("a bad number");
            }
            if (pos < text.Length && (text[pos] == 'e' || text[pos] == 'E'))
            {
                pos++;
                if (pos < text.Length && (text[pos] == '+' || text[pos] == '-')) pos++;
                int exp = pos;
                while (pos < text.Length && text[pos] >= '0' && text[pos] <= '9') pos++;
                if (pos == exp) throw Fail("a bad number");
            }
            return new JsonNumber(text.Substring(start, pos - start));
        }
    }
}
