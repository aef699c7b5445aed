// The idforge client: a list of servers with failover and back-off, and a local buffer per
// kind and tag refilled in the background (docs/clients.md, "The behaviour").
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.ExceptionServices;
using System.Threading;

namespace Idforge.Client
{
    /// <summary>
    /// IDs from a list of idforge servers, through the loss of any of them; and Snowflake
    /// decoding without a server (<see cref="Parse(ulong, string, long?, long?)"/>).
    /// Thread-safe: one client per process, shared by its threads.
    /// </summary>
    /// <example><code>
    /// using (var ids = new Client(new[] { "http://10.0.0.1:8080", "redis://10.0.0.2:6380" }))
    /// {
    ///     ulong eventId = ids.NextSnowflake();
    ///     long order = ids.NextSegment("order");
    /// }
    /// </code></example>
    public sealed class Client : IDisposable
    {
        sealed class NothingTried : Exception
        {
        }

        readonly Server[] servers;
        readonly object failoverLock = new object(); // the servers' failover state and current
        int current; // the server that answered last

        readonly int timeoutMs;
        readonly int batch;
        readonly int refillBelow;
        readonly double maxAgeMs;
        readonly double segmentMaxAgeMs;
        readonly double backoffMs;
        readonly double maxBackoffMs;
        readonly bool buffered;

        readonly IdBuffer<ulong> snowflakes;
        readonly IdBuffer<string> uuid7s;
        readonly IdBuffer<string> ulids;
        readonly ConcurrentDictionary<string, IdBuffer<long>> segments =
            new ConcurrentDictionary<string, IdBuffer<long>>(StringComparer.Ordinal);

        readonly RefillQueue queue = new RefillQueue();
        readonly object threadLock = new object();
        Thread refillThread;
        int closed; // 1 once Dispose ran

        /// <summary>A client of these servers with the default options.</summary>
        public Client(params string[] servers) : this(servers, null)
        {
        }

        /// <summary>A client of <paramref name="servers"/> (<c>http://HOST:PORT</c>, port 80 when
        /// left out; <c>redis://HOST:PORT</c>, port 6380). ArgumentException for a bad URL or option.</summary>
        public Client(IEnumerable<string> servers, ClientOptions options = null)
        {
            if (servers == null) throw new ArgumentNullException(nameof(servers));
            this.servers = servers.Select(url => new Server(url)).ToArray();
            if (this.servers.Length == 0) throw new ArgumentException("a Client needs at least one server URL", nameof(servers));
            options = options ?? new ClientOptions();
            timeoutMs = Check("TimeoutMs", options.TimeoutMs, 1, int.MaxValue);
            batch = Check("Batch", options.Batch, 1, int.MaxValue);
            refillBelow = Check("RefillBelow", options.RefillBelow ?? batch / 2, 0, batch);
            maxAgeMs = Check("MaxAgeMs", options.MaxAgeMs, 0, int.MaxValue);
            segmentMaxAgeMs = Check("SegmentMaxAgeMs", options.SegmentMaxAgeMs, 0, int.MaxValue);
            backoffMs = Check("BackoffMs", options.BackoffMs, 0, int.MaxValue);
            maxBackoffMs = Check("MaxBackoffMs", options.MaxBackoffMs, options.BackoffMs, int.MaxValue);
            buffered = options.Buffer && batch > 1;
            snowflakes = new IdBuffer<ulong>(Kinds.Snowflake, null, maxAgeMs);
            uuid7s = new IdBuffer<string>(Kinds.Uuid7, null, maxAgeMs);
            ulids = new IdBuffer<string>(Kinds.Ulid, null, maxAgeMs);
        }

        static int Check(string name, int value, int low, int high)
        {
            if (value < low || value > high)
                throw new ArgumentOutOfRangeException(name, value,
                    name + " must be " + (high == int.MaxValue ? ">= " + low : "from " + low + " to " + high) + ", got " + value);
            return value;
        }

        // -- the IDs ---------------------------------------------------------------------------

        /// <summary>The next Snowflake ID.</summary>
        public ulong NextSnowflake() => Next(snowflakes);

        /// <summary>The next segment ID of <paramref name="tag"/> (segment IDs are 1 .. 2^63-1).</summary>
        public long NextSegment(string tag) => Next(SegmentBuffer(tag));

        /// <summary>The next UUIDv7, as text.</summary>
        public string NextUuid7() => Next(uuid7s);

        /// <summary>The next ULID, as text.</summary>
        public string NextUlid() => Next(ulids);

        /// <summary><paramref name="n"/> Snowflake IDs (from the buffer; without it, in requests of up to a batch).</summary>
        public ulong[] NextSnowflakes(int n) => Many(snowflakes, n);

        /// <summary><paramref name="n"/> segment IDs of <paramref name="tag"/>.</summary>
        public long[] NextSegments(string tag, int n) => Many(SegmentBuffer(tag), n);

        /// <summary><paramref name="n"/> UUIDv7s.</summary>
        public string[] NextUuid7s(int n) => Many(uuid7s, n);

        /// <summary><paramref name="n"/> ULIDs.</summary>
        public string[] NextUlids(int n) => Many(ulids, n);

        // -- decoding --------------------------------------------------------------------------

        /// <summary>
        /// Decodes a Snowflake ID without a server, as <c>idforge parse --json</c>: a preset
        /// (<c>twitter</c>, <c>discord</c>, <c>instagram</c>, <c>sonyflake</c>, <c>baidu</c>; any
        /// case) or a custom spec (<c>time:41,datacenter:5,worker:5,sequence:12</c>), with an
        /// optional epoch (Unix ms, &gt;= 0) and tick (1..86400000 ms). ArgumentException for a
        /// bad layout, epoch, tick or an ID wider than the layout.
        /// </summary>
        public static ParsedId Parse(ulong id, string layout = "twitter", long? epochMs = null, long? tickMs = null)
            => Snowflake.Decode(id, layout, epochMs, tickMs);

        /// <summary>The same for an ID in decimal text (up to 18446744073709551615).</summary>
        public static ParsedId Parse(string id, string layout = "twitter", long? epochMs = null, long? tickMs = null)
            => Snowflake.Decode(Snowflake.ParseNumber(id, "ID"), layout, epochMs, tickMs);

        /// <summary>Unix ms or an ISO-8601 time (<c>2017-09-20T13:43:08.849Z</c>,
        /// <c>2017-09-20 15:43:08+02:00</c>, <c>2017-09-20</c>) as Unix ms, as <c>idforge parse
        /// --epoch</c> reads it. ArgumentException when it is neither.</summary>
        public static long ParseTime(string text) => Snowflake.ParseTime(text);

        /// <summary>The layout presets.</summary>
        public static IReadOnlyList<string> LayoutPresets => Snowflake.PresetNames;

        // -- looking inside --------------------------------------------------------------------

        /// <summary>The servers' URLs, as the client writes them.</summary>
        public IReadOnlyList<string> Servers => servers.Select(s => s.Url).ToList();

        /// <summary>How many IDs the buffer of <paramref name="kind"/> (and <paramref name="tag"/>) holds now.</summary>
        public int Buffered(IdKind kind, string tag = null)
        {
            BufferBase buf;
            if (kind == IdKind.Segment)
            {
                IdBuffer<long> seg;
                if (tag == null || !segments.TryGetValue(tag, out seg)) return 0;
                buf = seg;
            }
            else buf = kind == IdKind.Snowflake ? snowflakes : kind == IdKind.Uuid7 ? (BufferBase)uuid7s : ulids;
            lock (buf.Sync) return buf.Size;
        }

        /// <summary>Each server's failover state, in list order.</summary>
        public IReadOnlyList<ServerState> ServerStates()
        {
            double now = Clock.NowMs;
            var states = new List<ServerState>();
            lock (failoverLock)
            {
                for (int i = 0; i < servers.Length; i++)
                {
                    Server s = servers[i];
                    states.Add(new ServerState(s.Url, s.Failures, (long)Math.Max(0, Math.Round(s.Until - now)), s.LastError, i == current));
                }
            }
            return states;
        }

        /// <summary>Each buffer used so far: its size, dropped IDs, refills and last error.</summary>
        public IReadOnlyList<BufferState> BufferStates()
        {
            var all = new List<BufferBase> { snowflakes, uuid7s, ulids };
            all.AddRange(segments.Values.OrderBy(b => b.Tag, StringComparer.Ordinal));
            var states = new List<BufferState>();
            foreach (BufferBase buf in all)
            {
                lock (buf.Sync)
                    states.Add(new BufferState(buf.Kind.Id, buf.Tag, buf.Size, buf.Dropped, buf.Refills, buf.Error?.Message));
            }
            return states;
        }

        // -- closing ---------------------------------------------------------------------------

        /// <summary>Stops the refill thread and closes the connections; the buffered IDs are dropped
        /// (never issued again: a gap). Later calls, and calls waiting now, throw
        /// <see cref="IdforgeException"/> code <c>closed</c>.</summary>
        public void Dispose()
        {
            if (Interlocked.Exchange(ref closed, 1) == 1) return;
            queue.Close();
            var all = new List<BufferBase> { snowflakes, uuid7s, ulids };
            all.AddRange(segments.Values);
            foreach (BufferBase buf in all)
            {
                lock (buf.Sync)
                {
                    buf.Clear();
                    Monitor.PulseAll(buf.Sync);
                }
            }
            foreach (Server s in servers) s.Close();
            Thread thread;
            lock (threadLock) thread = refillThread;
            // One in a request ends on its own (a background thread); it holds no ID for anyone.
            if (thread != null && thread != Thread.CurrentThread) thread.Join(200);
        }

        /// <summary>The same as <see cref="Dispose"/>.</summary>
        public void Close() => Dispose();

        /// <summary><c>Client(URL, ...)</c>.</summary>
        public override string ToString() => "Client(" + string.Join(", ", Servers) + ")";

        bool IsClosed => Volatile.Read(ref closed) == 1;

        static IdforgeException ClosedError() => new IdforgeException("closed", "the client is closed");

        // -- the buffer ------------------------------------------------------------------------

        IdBuffer<long> SegmentBuffer(string tag)
        {
            if (string.IsNullOrEmpty(tag)) throw new ArgumentException("a segment tag is a non-empty string", nameof(tag));
            IdBuffer<long> buf;
            if (segments.TryGetValue(tag, out buf)) return buf;
            return segments.GetOrAdd(tag, t => new IdBuffer<long>(Kinds.Segment, t, segmentMaxAgeMs));
        }

        T Next<T>(IdBuffer<T> buf)
        {
            if (IsClosed) throw ClosedError();
            if (!buffered)
            {
                double fetchedAt;
                return Request(buf.TypedKind, buf.Tag, 1, true, double.PositiveInfinity, out fetchedAt)[0];
            }
            lock (buf.Sync)
            {
                if (buf.MaxAgeMs > 0) buf.Expire(Clock.NowMs);
                if (buf.Size > 0)
                {
                    T value = buf.Take();
                    if (buf.Size < refillBelow && buf.State == RefillState.Idle) MaybeRefill(buf);
                    return value;
                }
            }
            return NextSlow(buf);
        }

        T[] Many<T>(IdBuffer<T> buf, int n)
        {
            if (n < 0) throw new ArgumentOutOfRangeException(nameof(n), n, "n must be >= 0");
            var result = new T[n];
            if (buffered)
            {
                for (int i = 0; i < n; i++) result[i] = Next(buf);
                return result;
            }
            if (IsClosed) throw ClosedError();
            int got = 0;
            while (got < n)
            {
                double fetchedAt;
                T[] ids = Request(buf.TypedKind, buf.Tag, Math.Min(batch, n - got), true, double.PositiveInfinity, out fetchedAt);
                Array.Copy(ids, 0, result, got, ids.Length);
                got += ids.Length;
            }
            return result;
        }

        /// <summary>The buffer is empty: wait for the refill in progress, or run one here, for at
        /// most timeout_ms times the number of servers.</summary>
        T NextSlow<T>(IdBuffer<T> buf)
        {
            double waitMs = (double)timeoutMs * servers.Length;
            double deadline = Clock.NowMs + waitMs;
            while (true)
            {
                lock (buf.Sync)
                {
                    if (IsClosed) throw ClosedError();
                    if (buf.MaxAgeMs > 0) buf.Expire(Clock.NowMs);
                    if (buf.Size > 0)
                    {
                        T value = buf.Take();
                        if (buf.Size < refillBelow && buf.State == RefillState.Idle) MaybeRefill(buf);
                        return value;
                    }
                    if (buf.State == RefillState.Running)
                    {
                        long gen = buf.Gen;
                        var waiter = new Waiter<T>();
                        LinkedListNode<Waiter<T>> node = buf.Waiters.AddLast(waiter);
                        try
                        {
                            while (!waiter.Filled && buf.Gen == gen && !IsClosed)
                            {
                                double left = deadline - Clock.NowMs;
                                if (left <= 0)
                                    throw new IdforgeUnavailableException(
                                        "no " + buf.Kind.What(buf.Tag) + " within " + Math.Round(waitMs) + " ms (timeout_ms x " +
                                        servers.Length + " servers): the refill in progress has not finished; servers: " +
                                        DescribeServers(), ServerErrors(null));
                                Monitor.Wait(buf.Sync, (int)Math.Ceiling(left));
                            }
                        }
                        finally
                        {
                            if (!waiter.Filled && node.List != null) buf.Waiters.Remove(node);
                        }
                        if (waiter.Filled) return waiter.Value;
                        // A caller's refill tried every server: its error is this caller's too. A
                        // background one skips servers backing off: this caller tries them next.
                        if (buf.Size == 0 && buf.Error != null && buf.ErrorTriedAll && !IsClosed) throw buf.Error.Copy();
                        continue;
                    }
                    // Idle, or queued for the refill thread: this thread runs it now (the refill
                    // thread skips a buffer no longer queued), in the time left.
                    if (deadline - Clock.NowMs <= 1)
                        throw new IdforgeUnavailableException(
                            "no " + buf.Kind.What(buf.Tag) + " within " + Math.Round(waitMs) + " ms (timeout_ms x " +
                            servers.Length + " servers): other callers took the IDs of the refills; servers: " +
                            DescribeServers(), ServerErrors(null));
                    buf.State = RefillState.Running;
                }
                T got;
                if (Refill(buf, true, true, deadline, out got)) return got;
            }
        }

        /// <summary>Queues a background refill (called with buf.Sync held, the buffer below
        /// refill_below and idle) unless a failed one asked to wait.</summary>
        void MaybeRefill(BufferBase buf)
        {
            if (buf.RetryAt > 0 && Clock.NowMs < buf.RetryAt) return;
            buf.State = RefillState.Queued;
            queue.Put(buf);
            if (Volatile.Read(ref refillThread) != null) return;
            lock (threadLock)
            {
                if (refillThread != null || IsClosed) return;
                // The thread holds the client weakly, so that a client dropped without Dispose
                // is collected and the thread ends.
                var thread = new Thread(RefillLoop) { IsBackground = true, Name = "idforge-client-refill" };
                thread.Start(new object[] { new WeakReference<Client>(this), queue });
                Volatile.Write(ref refillThread, thread);
            }
        }

        static void RefillLoop(object state)
        {
            var args = (object[])state;
            var owner = (WeakReference<Client>)args[0];
            var queue = (RefillQueue)args[1];
            while (!queue.Closed)
            {
                BufferBase buf = queue.Take(1000);
                if (!RunQueued(owner, buf)) return;
            }
        }

        // One queued refill; false once the client is closed or collected. The client is held
        // strongly only in this frame.
        static bool RunQueued(WeakReference<Client> owner, BufferBase buf)
        {
            Client client;
            if (!owner.TryGetTarget(out client) || client.IsClosed) return false;
            if (buf == null) return true;
            lock (buf.Sync)
            {
                if (buf.State != RefillState.Queued) return true; // a caller that found it empty runs it
                buf.State = RefillState.Running;
            }
            try
            {
                buf.RefillInBackground(client);
            }
            catch (Exception)
            {
                // kept in buf.Error; a caller meets it when the buffer is empty. The thread
                // must outlive any surprise.
            }
            return true;
        }

        internal void RefillInBackground<T>(IdBuffer<T> buf)
        {
            T unused;
            Refill(buf, false, false, double.PositiveInfinity, out unused);
        }

        /// <summary>One request of a batch into <paramref name="buf"/> (whose state is Running).
        /// mustTry=false (the background): when every server is backing off nothing is tried, and
        /// a caller that finds the buffer empty will try. takeOne: the first ID is the caller's
        /// (returns true). Errors are kept in buf.Error and thrown.</summary>
        bool Refill<T>(IdBuffer<T> buf, bool mustTry, bool takeOne, double deadline, out T value)
        {
            T[] ids = null;
            double fetchedAt = 0;
            IdforgeException error = null;
            ExceptionDispatchInfo surprise = null;
            try
            {
                ids = Request(buf.TypedKind, buf.Tag, batch, mustTry, deadline, out fetchedAt);
            }
            catch (IdforgeException e)
            {
                error = e;
            }
            catch (NothingTried)
            {
                // every server backing off: nothing tried
            }
            catch (Exception e)
            {
                surprise = ExceptionDispatchInfo.Capture(e);
            }
            value = default(T);
            bool got = false;
            lock (buf.Sync)
            {
                buf.State = RefillState.Idle;
                buf.Gen++;
                if (ids != null)
                {
                    buf.Refills++;
                    buf.Error = null;
                    buf.RetryAt = 0;
                    if (!IsClosed)
                    {
                        int i = 0;
                        if (takeOne)
                        {
                            value = ids[i++];
                            got = true;
                        }
                        // The callers already waiting first, so busy threads cannot starve them.
                        while (i < ids.Length && buf.Waiters.Count > 0)
                        {
                            Waiter<T> waiter = buf.Waiters.First.Value;
                            buf.Waiters.RemoveFirst();
                            waiter.Value = ids[i++];
                            waiter.Filled = true;
                        }
                        if (i < ids.Length)
                        {
                            buf.Chunks.Enqueue(new Chunk<T> { FetchedAt = fetchedAt, Ids = ids, Next = i });
                            buf.Size += ids.Length - i;
                        }
                    }
                }
                else if (error != null)
                {
                    buf.Error = error;
                    buf.ErrorTriedAll = mustTry;
                    buf.RetryAt = RetryTime(error);
                }
                else
                {
                    // Nothing tried (background, every server backing off) or a surprise: a
                    // caller that finds the buffer empty tries, rather than failing.
                    buf.Error = null;
                    buf.RetryAt = RetryTime(null);
                }
                Monitor.PulseAll(buf.Sync);
            }
            if (error != null) throw error;
            surprise?.Throw();
            return got;
        }

        /// <summary>When a background refill may start again after one that got no IDs.</summary>
        double RetryTime(IdforgeException error)
        {
            double now = Clock.NowMs;
            if (error != null && !(error is IdforgeUnavailableException))
                return now + backoffMs; // a wrong request: do not repeat it on every call
            lock (failoverLock) return Math.Max(now, servers.Min(s => s.Until));
        }

        // -- failover --------------------------------------------------------------------------

        /// <summary><paramref name="count"/> IDs from the first server that answers, starting at
        /// the one that answered last and skipping those backing off; each server at most once,
        /// each try within timeout_ms (and what is left before <paramref name="deadline"/>).</summary>
        T[] Request<T>(Kind<T> kind, string tag, int count, bool mustTry, double deadline, out double fetchedAt)
        {
            int n = servers.Length;
            int start;
            lock (failoverLock) start = current;
            var tried = new Dictionary<int, string>();
            string why;
            T[] ids;
            for (int k = 0; k < n; k++)
            {
                int i = (start + k) % n;
                lock (failoverLock)
                {
                    if (Clock.NowMs < servers[i].Until) continue;
                }
                if (deadline - Clock.NowMs <= 1) break;
                ids = Attempt(i, kind, tag, count, deadline, out fetchedAt, out why);
                if (ids != null) return ids;
                tried[i] = why;
            }
            if (tried.Count == 0 && !mustTry) throw new NothingTried();
            if (mustTry)
            {
                // Every server left is backing off: a waiting caller tries them too, the one whose
                // period ends first first, so a server just back answers rather than the call
                // failing untried there.
                List<int> rest;
                lock (failoverLock)
                    rest = Enumerable.Range(0, n).Where(j => !tried.ContainsKey(j)).OrderBy(j => servers[j].Until).ToList();
                foreach (int i in rest)
                {
                    if (tried.Count > 0 && deadline - Clock.NowMs <= 1) break;
                    ids = Attempt(i, kind, tag, count, deadline, out fetchedAt, out why);
                    if (ids != null) return ids;
                    tried[i] = why;
                }
            }
            List<ServerError> errors = ServerErrors(tried);
            throw new IdforgeUnavailableException(
                "no idforge server could give " + kind.What(tag) + ": " + string.Join("; ", errors), errors);
        }

        T[] Attempt<T>(int i, Kind<T> kind, string tag, int count, double deadline, out double startedAt, out string why)
        {
            Server server = servers[i];
            double t0 = Clock.NowMs;
            startedAt = t0;
            why = null;
            int timeout = timeoutMs;
            if (!double.IsPositiveInfinity(deadline))
                timeout = (int)Math.Max(1, Math.Min(timeoutMs, Math.Round(deadline - t0)));
            T[] ids;
            try
            {
                ids = server.Fetch(kind, tag, count, timeout);
            }
            catch (ServerFailure f)
            {
                Failed(server, f.Message, t0);
                why = f.Message;
                return null;
            }
            catch (IdforgeException)
            {
                Answered(i); // the server is well; the request is wrong
                throw;
            }
            Answered(i);
            return ids;
        }

        void Answered(int i)
        {
            lock (failoverLock)
            {
                Server s = servers[i];
                s.Failures = 0;
                s.Until = 0;
                s.LastError = "";
                current = i;
            }
        }

        void Failed(Server server, string reason, double started)
        {
            lock (failoverLock)
            {
                double now = Clock.NowMs;
                server.LastError = reason;
                if (server.LastFailure >= started) return; // another thread saw this same outage: counted
                server.Failures++;
                double backoff = backoffMs * Math.Pow(2, Math.Min(server.Failures - 1, 40));
                server.Until = now + Math.Min(backoff, maxBackoffMs);
                server.LastFailure = now;
            }
        }

        /// <summary>(url, why) for every server: its error in this request, or its back-off.</summary>
        List<ServerError> ServerErrors(Dictionary<int, string> tried)
        {
            double now = Clock.NowMs;
            var result = new List<ServerError>();
            lock (failoverLock)
            {
                for (int i = 0; i < servers.Length; i++)
                {
                    Server s = servers[i];
                    string why;
                    if (tried != null && tried.TryGetValue(i, out why)) result.Add(new ServerError(s.Url, "failed: " + why));
                    else if (s.Until > now)
                        result.Add(new ServerError(s.Url, "skipped: backing off " + Math.Round(s.Until - now) + " ms more after " +
                                                          s.Failures + " failure" + (s.Failures != 1 ? "s" : "") +
                                                          " in a row (last: " + s.LastError + ")"));
                    else if (s.LastError.Length > 0) result.Add(new ServerError(s.Url, "last failed: " + s.LastError));
                    else result.Add(new ServerError(s.Url, "not tried"));
                }
            }
            return result;
        }

        string DescribeServers() => string.Join("; ", ServerErrors(null));
    }
}
