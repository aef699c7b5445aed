// One server of a client: its failover state and idle connections, and one request on it
// over HTTP/1.1 or the Redis protocol (RESP2), read with its own small readers.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Net.Sockets;
using System.Text;

namespace Idforge.Client
{
    /// <summary>One server of a client: its URL, its failover state (guarded by the
    /// client's lock) and a pool of idle connections.</summary>
    internal sealed class Server
    {
        // docs/clients.md: the answers that say the request itself is wrong (every server would
        // answer the same). Any other error answer counts as the server failing.
        static readonly HashSet<string> WrongRequestCodes = new HashSet<string> { "invalid_argument", "out_of_range", "not_found" };
        const int MaxHeaderBytes = 64 * 1024;
        const int MaxBodyBytes = 16 * 1024 * 1024;
        const int IdleConnections = 8; // kept; more concurrent requests open and close their own

        readonly ServerUrl address;
        readonly Stack<Connection> idle = new Stack<Connection>();
        bool closed;

        // Failover state, guarded by the client's lock.
        public int Failures;
        public double Until; // monotonic ms when its back-off ends
        public double LastFailure;
        public string LastError = "";

        public Server(string url)
        {
            address = ServerUrl.Parse(url);
        }

        public string Url => address.Url;

        // -- connections -------------------------------------------------------------------

        Connection TakeIdle()
        {
            while (true)
            {
                Connection conn;
                lock (idle)
                {
                    if (idle.Count == 0) return null;
                    conn = idle.Pop();
                }
                // Closed by the server while idle (its idle timeout, a restart): not a failure.
                if (!conn.LooksClosed()) return conn;
                conn.Dispose();
            }
        }

        void GiveBack(Connection conn)
        {
            conn.Used = true;
            lock (idle)
            {
                if (!closed && conn.Reusable && !conn.HasUnreadBytes && idle.Count < IdleConnections)
                {
                    idle.Push(conn);
                    return;
                }
            }
            conn.Dispose();
        }

        void DropIdle()
        {
            Connection[] all;
            lock (idle)
            {
                all = idle.ToArray();
                idle.Clear();
            }
            foreach (var conn in all) conn.Dispose();
        }

        public void Close()
        {
            lock (idle) closed = true;
            DropIdle();
        }

        // -- one request -------------------------------------------------------------------

        /// <summary><paramref name="count"/> IDs of <paramref name="kind"/>. Throws
        /// ServerFailure (try another server) or IdforgeException (the request is wrong).</summary>
        public T[] Fetch<T>(Kind<T> kind, string tag, int count, int timeoutMs)
        {
            double deadline = Clock.NowMs + timeoutMs;
            Connection conn = TakeIdle();
            while (true)
            {
                T[] ids;
                try
                {
                    if (conn == null) conn = Connection.Open(address, deadline);
                    conn.GotBytes = false;
                    ids = address.IsHttp ? Http(conn, kind, tag, count, deadline) : Resp(conn, kind, tag, count, deadline);
                }
                catch (IdforgeException)
                {
                    GiveBack(conn); // a complete answer: the connection is fine
                    throw;
                }
                catch (ServerFailure)
                {
                    conn?.Dispose();
                    throw;
                }
                catch (Exception e) when (e is SocketException || e is DeadlinePassed || e is ClosedByServer ||
                                          e is IOException || e is ObjectDisposedException)
                {
                    bool reused = conn != null && conn.Used && !conn.GotBytes;
                    conn?.Dispose();
                    if (reused && !(e is DeadlinePassed))
                    {
                        // A kept-alive connection the server has closed (idle timeout, a
                        // restart): one fresh connection within the same deadline. Its other
                        // idle connections are most likely closed too.
                        conn = null;
                        DropIdle();
                        continue;
                    }
                    throw new ServerFailure(Reason(e, timeoutMs));
                }
                GiveBack(conn);
                // Any answer other than the IDs asked for is a failure (docs/clients.md).
                if (ids.Length != count) throw new ServerFailure("answered " + ids.Length + " IDs, asked for " + count);
                return ids;
            }
        }

        static string Reason(Exception e, int timeoutMs)
        {
            if (e is DeadlinePassed) return "timed out after " + timeoutMs + " ms";
            if (e is ClosedByServer) return "the server closed the connection";
            var s = e as SocketException;
            if (s != null)
            {
                switch (s.SocketErrorCode)
                {
                    case SocketError.ConnectionRefused: return "connection refused";
                    case SocketError.ConnectionReset: return "connection reset";
                    case SocketError.ConnectionAborted: return "connection aborted";
                    case SocketError.TimedOut: return "timed out after " + timeoutMs + " ms";
                    case SocketError.HostNotFound:
                    case SocketError.NoData:
                    case SocketError.TryAgain:
                        return "cannot resolve host: " + s.Message;
                    case SocketError.Shutdown: return "connection closed while sending";
                    default: return s.Message + " (" + s.SocketErrorCode + ")";
                }
            }
            return e.Message;
        }

        // -- HTTP ----------------------------------------------------------------------------

        T[] Http<T>(Connection conn, Kind<T> kind, string tag, int count, double deadline)
        {
            var path = new StringBuilder(kind.HttpPath);
            if (tag != null) PercentEncode(path, tag);
            path.Append("?count=").Append(count.ToString(CultureInfo.InvariantCulture));
            string request = "GET " + path + " HTTP/1.1\r\nHost: " + address.HostHeader +
                             "\r\nUser-Agent: idforge-csharp\r\nAccept: application/json\r\n\r\n";
            conn.Send(Encoding.ASCII.GetBytes(request), deadline);

            string statusLine = conn.ReadLine(deadline, MaxHeaderBytes);
            string[] parts = statusLine.Split(new[] { ' ' }, 3);
            int status;
            if (parts.Length < 2 || !parts[0].StartsWith("HTTP/1.", StringComparison.Ordinal) || parts[1].Length != 3 ||
                !int.TryParse(parts[1], NumberStyles.None, CultureInfo.InvariantCulture, out status))
                throw new ServerFailure("not an HTTP answer: '" + Kinds.Cut(statusLine) + "'");
            bool close = parts[0] == "HTTP/1.0";
            int length = -1, total = 0;
            while (true)
            {
                string line = conn.ReadLine(deadline, MaxHeaderBytes);
                total += line.Length + 2;
                if (total > MaxHeaderBytes) throw new ServerFailure("the answer's headers are too large");
                if (line.Length == 0) break;
                int colon = line.IndexOf(':');
                if (colon < 0) throw new ServerFailure("a malformed header '" + Kinds.Cut(line) + "'");
                string name = line.Substring(0, colon).Trim().ToLowerInvariant();
                string value = line.Substring(colon + 1).Trim();
                if (name == "content-length")
                {
                    if (!int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out length) || length > MaxBodyBytes)
                        throw new ServerFailure("bad Content-Length '" + Kinds.Cut(value, 40) + "'");
                }
                else if (name == "connection")
                {
                    string lower = value.ToLowerInvariant();
                    close = lower.Contains("close") || (close && !lower.Contains("keep-alive"));
                }
                else if (name == "transfer-encoding")
                {
                    throw new ServerFailure("a Transfer-Encoding answer (idforge sends Content-Length)");
                }
            }
            byte[] body;
            if (length < 0)
            {
                body = conn.ReadToEnd(deadline);
                close = true;
            }
            else body = conn.ReadExact(length, deadline);
            if (close) conn.Reusable = false;

            string text;
            try
            {
                text = new UTF8Encoding(false, true).GetString(body);
            }
            catch (ArgumentException)
            {
                text = null;
            }
            if (status < 200 || status > 299)
            {
                string code, message;
                HttpError(text ?? Encoding.UTF8.GetString(body), status, out code, out message);
                if (status == 400 || status == 404 || status == 409) throw new IdforgeException(code, message, address.Url, status);
                throw new ServerFailure("HTTP " + status + " " + code + ": " + message);
            }
            T[] fast;
            if (TryIdsArray(body, kind, out fast)) return fast;
            try
            {
                if (text == null) throw new FormatException("not UTF-8");
                var doc = Json.Parse(text) as Dictionary<string, object>;
                object idsValue = null;
                var list = doc != null && doc.TryGetValue("ids", out idsValue) ? idsValue as List<object> : null;
                if (list == null || list.Count == 0) throw new FormatException("no ids");
                var ids = new T[list.Count];
                for (int i = 0; i < ids.Length; i++)
                {
                    object item = list[i];
                    string itemText = item as string;
                    // Integer IDs are decimal strings; a bare JSON integer is read exactly too.
                    if (itemText == null && kind.IsInteger && item is JsonNumber) itemText = ((JsonNumber)item).Text;
                    if (itemText == null) throw new FormatException("an ID is not text");
                    ids[i] = kind.FromText(itemText);
                }
                return ids;
            }
            catch (FormatException e)
            {
                throw new ServerFailure("a malformed answer (" + e.Message + "): '" + Kinds.Cut(text ?? "") + "'");
            }
        }

        static readonly byte[] IdsKey = Encoding.ASCII.GetBytes("\"ids\":[");

        /// <summary>The usual answer, <c>{"kind":...,"ids":["1","2"]}</c> with "ids" last, read
        /// without a string per ID. False for anything else: the JSON reader then decides.</summary>
        static bool TryIdsArray<T>(byte[] body, Kind<T> kind, out T[] ids)
        {
            ids = null;
            int end = body.Length;
            while (end > 0 && (body[end - 1] == ' ' || body[end - 1] == '\n' || body[end - 1] == '\r' || body[end - 1] == '\t')) end--;
            if (end < 2 || body[end - 1] != '}' || body[end - 2] != ']') return false;
            int at = IndexOf(body, IdsKey, end);
            if (at < 1) return false;
            // What comes before the array must be a JSON object's start.
            try
            {
                if (!(Json.Parse(Connection.Latin1(body, 0, at) + "\"ids\":[]}") is Dictionary<string, object>)) return false;
            }
            catch (FormatException)
            {
                return false;
            }
            var values = new List<T>();
            int pos = at + IdsKey.Length, last = end - 2; // the ']'
            while (pos < last)
            {
                if (body[pos] != '"') return false;
                int close = pos + 1;
                while (close < last && body[close] != '"')
                {
                    if (body[close] == '\\' || body[close] < 0x20 || body[close] > 0x7e) return false;
                    close++;
                }
                if (close >= last) return false;
                if (kind.IsInteger)
                {
                    ulong value;
                    if (!Kinds.TryDigits(body, pos + 1, close - pos - 1, out value)) return false;
                    try
                    {
                        values.Add(kind.FromNumber(value));
                    }
                    catch (FormatException)
                    {
                        return false;
                    }
                }
                else
                {
                    try
                    {
                        values.Add(kind.FromText(Connection.Latin1(body, pos + 1, close - pos - 1)));
                    }
                    catch (FormatException)
                    {
                        return false;
                    }
                }
                pos = close + 1;
                if (pos < last)
                {
                    if (body[pos] != ',') return false;
                    pos++;
                    if (pos == last) return false; // a trailing comma
                }
            }
            if (values.Count == 0) return false;
            ids = values.ToArray();
            return true;
        }

        static int IndexOf(byte[] haystack, byte[] needle, int end)
        {
            for (int i = 0; i + needle.Length <= end; i++)
            {
                int j = 0;
                while (j < needle.Length && haystack[i + j] == needle[j]) j++;
                if (j == needle.Length) return i;
            }
            return -1;
        }

        static void HttpError(string body, int status, out string code, out string message)
        {
            try
            {
                var doc = Json.Parse(body) as Dictionary<string, object>;
                object errorValue;
                var error = doc != null && doc.TryGetValue("error", out errorValue) ? errorValue as Dictionary<string, object> : null;
                object c, m;
                if (error != null && error.TryGetValue("code", out c) && error.TryGetValue("message", out m) && c is string && m is string)
                {
                    code = (string)c;
                    message = (string)m;
                    return;
                }
            }
            catch (FormatException)
            {
                // not the server's JSON: a proxy's page, say
            }
            code = "http_" + status;
            string trimmed = Kinds.Cut(body.Trim(), 200);
            message = trimmed.Length > 0 ? trimmed : "HTTP " + status;
        }

        static void PercentEncode(StringBuilder sb, string text)
        {
            foreach (byte b in Encoding.UTF8.GetBytes(text))
            {
                char c = (char)b;
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~')
                    sb.Append(c);
                else sb.Append('%').Append(b.ToString("X2", CultureInfo.InvariantCulture));
            }
        }

        // -- RESP ----------------------------------------------------------------------------

        sealed class RespError
        {
            public string Text;
        }

        sealed class RespInteger
        {
            public string Text;
        }

        sealed class RespSimple
        {
            public string Text;
        }

        T[] Resp<T>(Connection conn, Kind<T> kind, string tag, int count, double deadline)
        {
            var args = new List<byte[]> { Encoding.ASCII.GetBytes(kind.RespCommand) };
            if (tag != null) args.Add(Encoding.UTF8.GetBytes(tag));
            args.Add(Encoding.ASCII.GetBytes(count.ToString(CultureInfo.InvariantCulture)));
            var output = new MemoryStream();
            WriteAscii(output, "*" + args.Count + "\r\n");
            foreach (byte[] arg in args)
            {
                WriteAscii(output, "$" + arg.Length + "\r\n");
                output.Write(arg, 0, arg.Length);
                WriteAscii(output, "\r\n");
            }
            conn.Send(output.ToArray(), deadline);

            string first = conn.ReadLine(deadline, MaxHeaderBytes);
            long n;
            if (kind.IsInteger && first.Length > 1 && first[0] == '*' &&
                long.TryParse(first.Substring(1), NumberStyles.None, CultureInfo.InvariantCulture, out n) && n > 0 && n <= 1000000)
                return IntegerArray(conn, kind, (int)n, deadline); // the usual answer, without an object per ID
            object reply = ReadReply(conn, deadline, 0, first);
            var error = reply as RespError;
            if (error != null)
            {
                // -ERR not_found: unknown tag 'x' ... (src/server/resp/resp_reply.cc)
                string text = error.Text;
                int space = text.IndexOf(' ');
                string word = space < 0 ? text : text.Substring(0, space);
                string rest = space < 0 ? "" : text.Substring(space + 1);
                int colon = rest.IndexOf(':');
                if (word == "ERR" && colon >= 0)
                {
                    string code = rest.Substring(0, colon).Trim();
                    if (WrongRequestCodes.Contains(code))
                        throw new IdforgeException(code, rest.Substring(colon + 1).Trim(), address.Url, null);
                }
                throw new ServerFailure(text);
            }
            var list = reply as List<object>;
            if (list == null || list.Count == 0) throw new ServerFailure("unexpected answer " + Describe(reply));
            var ids = new T[list.Count];
            try
            {
                for (int i = 0; i < ids.Length; i++)
                {
                    object item = list[i];
                    string itemText;
                    if (kind.IsInteger)
                    {
                        var integer = item as RespInteger;
                        if (integer == null) throw new FormatException("not integers: " + Describe(item));
                        itemText = integer.Text;
                    }
                    else
                    {
                        var bulk = item as byte[];
                        if (bulk == null) throw new FormatException("not strings: " + Describe(item));
                        itemText = Connection.Latin1(bulk, 0, bulk.Length);
                    }
                    ids[i] = kind.FromText(itemText);
                }
            }
            catch (FormatException e)
            {
                throw new ServerFailure("a malformed answer (" + e.Message + ")");
            }
            return ids;
        }

        static T[] IntegerArray<T>(Connection conn, Kind<T> kind, int n, double deadline)
        {
            var ids = new T[n];
            for (int i = 0; i < n; i++)
            {
                int offset;
                int length = conn.ReadLineRange(deadline, MaxHeaderBytes, out offset);
                byte[] bytes = conn.Bytes;
                ulong value;
                if (length < 2 || bytes[offset] != ':' || !Kinds.TryDigits(bytes, offset + 1, length - 1, out value))
                    throw new ServerFailure("a malformed answer (not an ID: '" + Kinds.Cut(Connection.Latin1(bytes, offset, length)) + "')");
                try
                {
                    ids[i] = kind.FromNumber(value);
                }
                catch (FormatException e)
                {
                    throw new ServerFailure("a malformed answer (" + e.Message + ")");
                }
            }
            return ids;
        }

        static void WriteAscii(Stream s, string text)
        {
            byte[] bytes = Encoding.ASCII.GetBytes(text);
            s.Write(bytes, 0, bytes.Length);
        }

        static string Describe(object reply)
        {
            if (reply == null) return "(nil)";
            if (reply is RespSimple) return "+" + Kinds.Cut(((RespSimple)reply).Text);
            if (reply is RespInteger) return ":" + Kinds.Cut(((RespInteger)reply).Text);
            if (reply is byte[]) return "a bulk string";
            if (reply is List<object>) return "an array of " + ((List<object>)reply).Count;
            return reply.GetType().Name;
        }

        /// <summary>One RESP2 reply (RESP3 scalars too): RespSimple, RespError, RespInteger,
        /// byte[] (bulk), List&lt;object&gt; or null.</summary>
        static object ReadReply(Connection conn, double deadline, int depth, string firstLine = null)
        {
            string line = firstLine ?? conn.ReadLine(deadline, MaxHeaderBytes);
            if (line.Length == 0) throw new ServerFailure("an empty RESP line");
            char type = line[0];
            string rest = line.Substring(1);
            switch (type)
            {
                case '+':
                    return new RespSimple { Text = rest };
                case '-':
                    return new RespError { Text = rest };
                case ':':
                    return new RespInteger { Text = rest };
                case '_':
                    return null;
                case '$':
                case '*':
                case '~':
                case '>':
                case '%':
                    long n;
                    if (!long.TryParse(rest, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out n))
                        throw new ServerFailure("bad RESP length '" + Kinds.Cut(rest, 40) + "'");
                    if (n < 0) return null;
                    if (type == '$')
                    {
                        if (n > MaxBodyBytes) throw new ServerFailure("a RESP string is too large");
                        byte[] data = conn.ReadExact((int)n + 2, deadline);
                        var bulk = new byte[n];
                        Buffer.BlockCopy(data, 0, bulk, 0, (int)n);
                        return bulk;
                    }
                    if (depth > 8 || n > 1000000) throw new ServerFailure("a RESP array is too large or too deep");
                    if (type == '%') n *= 2;
                    var items = new List<object>((int)n);
                    for (long i = 0; i < n; i++) items.Add(ReadReply(conn, deadline, depth + 1));
                    return items;
                default:
                    throw new ServerFailure("not a RESP answer: '" + Kinds.Cut(line) + "'");
            }
        }
    }
}
