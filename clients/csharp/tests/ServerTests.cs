// The client against two real `idforge serve` processes (docs/clients.md), and small fake
// servers for the answers a real one gives only when something is broken. Mirrors
// clients/python/tests/test_servers.py.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Text.RegularExpressions;
using System.Threading;
using Idforge.Client;
using NUnit.Framework;

namespace IdforgeClientTests
{
    [TestFixture]
    public class ServerTests
    {
        static readonly Regex Uuid7 = new Regex("^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
        static readonly Regex Ulid = new Regex("^[0-9A-HJKMNP-TV-Z]{26}$");

        // Requests that are not about timeouts get a generous one: a starved server on a
        // busy machine must not look like a dead one.
        const int SlowOk = 3000;

        Cluster cluster;
        ServerProc a, b;

#if NUNIT3
        [OneTimeSetUp]
#else
        [TestFixtureSetUp] // NUnit 2.6, Debian's nunit-console
#endif
        public void StartServers()
        {
            cluster = new Cluster("order", "bulk", "stock", "item", "outage");
        }

#if NUNIT3
        [OneTimeTearDown]
#else
        [TestFixtureTearDown]
#endif
        public void StopServers()
        {
            cluster?.Dispose();
        }

        [SetUp]
        public void Heal()
        {
            cluster.Heal();
            a = cluster.A;
            b = cluster.B;
        }

        [TearDown]
        public void HealAfter()
        {
            cluster.Heal();
        }

        static Tuple<ulong, ulong> NodeOf(ulong snowflake)
        {
            ParsedId p = Client.Parse(snowflake);
            return Tuple.Create(p["datacenter"], p["worker"]);
        }

        static ClientOptions Options(int timeoutMs = SlowOk, int batch = 256, int? refillBelow = null, bool buffer = true,
                                     int maxAgeMs = 2000, int backoffMs = 500, int maxBackoffMs = 30000)
        {
            return new ClientOptions
            {
                TimeoutMs = timeoutMs,
                Batch = batch,
                RefillBelow = refillBelow,
                Buffer = buffer,
                MaxAgeMs = maxAgeMs,
                BackoffMs = backoffMs,
                MaxBackoffMs = maxBackoffMs,
            };
        }

        static double Seconds(Stopwatch w) => w.Elapsed.TotalSeconds;

        // -- both protocols ------------------------------------------------------------------

        [Test]
        public void HttpAndRedisServersGiveEveryKind()
        {
            var nodeA = a.Node();
            foreach (string url in new[] { a.Http, a.Resp })
            {
                foreach (bool buffer in new[] { true, false })
                {
                    string what = url + " buffer=" + buffer;
                    using (var c = new Client(new[] { url }, Options(batch: 32, buffer: buffer)))
                    {
                        ulong sf = c.NextSnowflake();
                        Assert.AreEqual(nodeA, NodeOf(sf), what);
                        ulong[] more = c.NextSnowflakes(40);
                        Assert.AreEqual(41, more.Concat(new[] { sf }).Distinct().Count(), what);
                        CollectionAssert.IsOrdered(more, what); // one server: in order
                        long seg = c.NextSegment("order");
                        Assert.That(seg, Is.GreaterThan(0), what);
                        CollectionAssert.AreEqual(Enumerable.Range(1, 5).Select(i => seg + i).ToArray(), c.NextSegments("order", 5), what);
                        StringAssert.IsMatch(Uuid7.ToString(), c.NextUuid7(), what);
                        StringAssert.IsMatch(Ulid.ToString(), c.NextUlid(), what);
                        Assert.AreEqual(6, c.NextUuid7s(3).Concat(c.NextUlids(3)).Distinct().Count(), what);
                    }
                }
            }
        }

        [Test]
        public void TheTwoServersNeverIssueTheSameId()
        {
            Assert.AreNotEqual(a.Node(), b.Node());
            using (var ca = new Client(new[] { a.Http }, Options(batch: 100)))
            using (var cb = new Client(new[] { b.Resp }, Options(batch: 100)))
            {
                var ids = new List<long>();
                for (int i = 0; i < 300; i++)
                {
                    ids.Add(ca.NextSegment("stock"));
                    ids.Add(cb.NextSegment("stock"));
                }
                Assert.AreEqual(ids.Count, ids.Distinct().Count());
            }
        }

        // -- kill -9 and restart -------------------------------------------------------------

        sealed class Pulled
        {
            public bool Snowflake;
            public ulong Value;
            public long UnixMs;
        }

        [Test]
        public void PullingThroughKill9AndRestartLosesNoRequestAndRepeatsNoId()
        {
            var nodeA = a.Node();
            var stop = new ManualResetEventSlim();
            var results = new List<List<Pulled>>();
            var errors = new List<string>();
            var calls = new List<int>();
            // A killed server refuses at once; the timeout only covers a starved one. Buffered,
            // small batches (many refills); and one request per call. Both start on A, over both
            // protocols.
            var buffered = new Client(new[] { a.Http, b.Resp }, Options(batch: 16, backoffMs: 200, maxBackoffMs: 1000));
            var direct = new Client(new[] { a.Resp, b.Http }, Options(buffer: false, backoffMs: 200, maxBackoffMs: 1000));
            Func<Client, bool, ThreadStart> pull = (client, snowflakeFirst) => () =>
                {
                    var got = new List<Pulled>();
                    int n = 0;
                    lock (results) results.Add(got);
                    try
                    {
                        while (!stop.IsSet)
                        {
                            for (int k = 0; k < 2; k++)
                            {
                                n++;
                                bool sf = (k == 0) == snowflakeFirst;
                                ulong value = sf ? client.NextSnowflake() : (ulong)client.NextSegment("order");
                                got.Add(new Pulled { Snowflake = sf, Value = value, UnixMs = Env.UnixMs });
                            }
                        }
                    }
                    catch (Exception e)
                    {
                        lock (errors) errors.Add(e.ToString());
                    }
                    lock (calls) calls.Add(n);
                };
            var threads = new[]
            {
                new Thread(pull(buffered, true)), new Thread(pull(buffered, false)), new Thread(pull(direct, true)),
            };
            foreach (Thread t in threads) t.Start();
            long restarted;
            try
            {
                Thread.Sleep(300);
                a.Kill9();
                Thread.Sleep(300);
                a.Start(); // same data dir, identity and ports
                restarted = Env.UnixMs;
                Thread.Sleep(400);
                b.Kill9(); // now only the restarted A can answer
                Thread.Sleep(400);
                b.Start();
                Thread.Sleep(200);
            }
            finally
            {
                stop.Set();
                foreach (Thread t in threads) t.Join(10000);
                buffered.Dispose();
                direct.Dispose();
            }
            CollectionAssert.IsEmpty(errors);
            List<Pulled> all = results.SelectMany(r => r).ToList();
            Assert.AreEqual(calls.Sum(), all.Count); // every call returned an ID
            foreach (bool sf in new[] { true, false })
            {
                var ids = all.Where(p => p.Snowflake == sf).Select(p => p.Value).ToList();
                Assert.That(ids.Count, Is.GreaterThan(100));
                Assert.AreEqual(ids.Count, ids.Distinct().Count(), "a repeated " + (sf ? "snowflake" : "segment") + " ID");
            }
            // The restarted A served (IDs of its node, made after its restart), through both clients.
            var after = all.Where(p => p.Snowflake && p.UnixMs > restarted + 400).Select(p => p.Value).ToList();
            CollectionAssert.IsNotEmpty(after);
            Assert.IsTrue(after.Skip(Math.Max(0, after.Count - 10)).All(v => NodeOf(v).Equals(nodeA)));
            Assert.IsTrue(after.Any(v => Client.Parse(v).UnixMs > restarted));
        }

        [Test]
        public void AKeptAliveConnectionTheServerClosedIsNotAFailure()
        {
            var nodeA = a.Node();
            var clients = new[]
            {
                new Client(new[] { a.Http, b.Resp }, Options(buffer: false)),
                new Client(new[] { a.Resp, b.Http }, Options(buffer: false)),
            };
            try
            {
                foreach (Client c in clients) Assert.AreEqual(nodeA, NodeOf(c.NextSnowflake())); // a kept-alive connection
                a.Kill9(); // closes them all
                a.Start();
                foreach (Client c in clients)
                {
                    // A again, on a new connection: its old one is no reason to skip it.
                    Assert.AreEqual(nodeA, NodeOf(c.NextSnowflake()));
                    CollectionAssert.AreEqual(new[] { 0, 0 }, c.ServerStates().Select(s => s.Failures).ToArray());
                }
            }
            finally
            {
                foreach (Client c in clients) c.Dispose();
            }
        }

        [Test]
        public void AConnectionTheServerClosesAsTheRequestArrivesIsReplacedNotAFailure()
        {
            // The server closes a kept-alive connection just as a request goes out on it: the
            // request is sent again on a new connection, within the same request.
            var answers = new[]
            {
                Tuple.Create("http", HttpAnswer("200 OK", "{\"kind\":\"snowflake\",\"ids\":[\"910499571847892992\"]}")),
                Tuple.Create("redis", "*1\r\n:910499571847892992\r\n"),
            };
            foreach (var answer in answers)
            {
                using (var fake = new FakeServer(answer.Item2, oneAnswerPerConnection: true))
                using (var c = new Client(new[] { answer.Item1 + "://127.0.0.1:" + fake.Port }, Options(buffer: false)))
                {
                    Assert.AreEqual(910499571847892992UL, c.NextSnowflake(), answer.Item1);
                    Assert.AreEqual(910499571847892992UL, c.NextSnowflake(), answer.Item1); // sent twice
                    Assert.AreEqual(3, fake.Requests, answer.Item1);
                    Assert.AreEqual(0, c.ServerStates()[0].Failures, answer.Item1);
                }
            }
        }

        // -- SIGSTOP -------------------------------------------------------------------------

        [Test]
        public void AStoppedServerCostsOneTimeoutThenIsSkipped()
        {
            var nodeA = a.Node();
            var nodeB = b.Node();
            const int timeoutMs = 500;
            using (var c = new Client(new[] { a.Http, b.Resp }, Options(timeoutMs: timeoutMs, buffer: false, backoffMs: 5000)))
            {
                Assert.AreEqual(nodeA, NodeOf(c.NextSnowflake())); // A answers first
                a.SigStop();
                double firstS, restS;
                ulong first;
                List<ulong> rest;
                IReadOnlyList<ServerState> states;
                try
                {
                    var w = Stopwatch.StartNew();
                    first = c.NextSnowflake();
                    firstS = Seconds(w);
                    rest = Enumerable.Range(0, 30).Select(i => c.NextSnowflake()).ToList();
                    restS = Seconds(w) - firstS;
                    states = c.ServerStates();
                }
                finally
                {
                    a.SigCont();
                }
                // The first request waited for A's timeout, then B answered it; the other 30 went
                // straight to B (one timeout each would be 15 s).
                Assert.That(firstS, Is.GreaterThanOrEqualTo(timeoutMs / 1000.0 * 0.9));
                Assert.That(firstS, Is.LessThan(2 * timeoutMs / 1000.0));
                Assert.That(restS, Is.LessThan(5 * timeoutMs / 1000.0), "a timeout per request");
                CollectionAssert.AreEquivalent(new[] { nodeB }, rest.Concat(new[] { first }).Select(NodeOf).Distinct().ToArray());
                Assert.AreEqual(1, states[0].Failures);
                StringAssert.Contains("timed out after 500 ms", states[0].LastError);
                Assert.IsTrue(states[1].Current);
                // A is well again, but requests stay on the server that answered last.
                Assert.AreEqual(nodeB, NodeOf(c.NextSnowflake()));
            }
        }

        [Test]
        public void AStoppedServerDuringBackgroundRefillsCostsTheCallerNothing()
        {
            // Snowflake IDs: a server stopped while it held the shared SQLite store's lock would
            // hold up the other's segment ranges too (an artefact of the test setup).
            const int timeoutMs = 500;
            using (var c = new Client(new[] { a.Resp, b.Http }, Options(timeoutMs: timeoutMs, batch: 100, refillBelow: 70, backoffMs: 5000)))
            {
                var ids = new List<ulong> { c.NextSnowflake() };
                a.SigStop();
                double slowest = 0;
                IReadOnlyList<ServerState> states;
                try
                {
                    for (int i = 0; i < 100; i++)
                    {
                        Thread.Sleep(10); // 70 IDs last longer than A's timeout
                        var w = Stopwatch.StartNew();
                        ids.Add(c.NextSnowflake());
                        slowest = Math.Max(slowest, Seconds(w));
                    }
                    states = c.ServerStates();
                }
                finally
                {
                    a.SigCont();
                }
                Assert.AreEqual(101, ids.Distinct().Count());
                // The refill thread met A's timeout and went on to B; no caller waited.
                Assert.AreEqual(1, states[0].Failures);
                Assert.IsTrue(states[1].Current);
                Assert.That(slowest, Is.LessThan(timeoutMs / 1000.0 / 2));
            }
        }

        [Test]
        public void TheBufferRefillsInTheBackgroundWithinItsBound()
        {
            using (var c = new Client(new[] { a.Http }, Options(batch: 20, refillBelow: 10)))
            {
                var ids = new List<ulong> { c.NextSnowflake() };
                Assert.AreEqual(19, c.Buffered(IdKind.Snowflake));
                for (int i = 0; i < 9; i++) ids.Add(c.NextSnowflake()); // 10 left: not below 10
                Thread.Sleep(100);
                Assert.AreEqual(10, c.Buffered(IdKind.Snowflake));
                ids.Add(c.NextSnowflake()); // 9 left: below 10, a refill
                double deadline = Env.NowMs + 2000;
                while (c.Buffered(IdKind.Snowflake) != 29 && Env.NowMs < deadline) Thread.Sleep(10);
                Assert.AreEqual(29, c.Buffered(IdKind.Snowflake)); // batch + refill_below at most
                ids.Add(c.NextSnowflake()); // 28 left: not below 10, no refill
                Thread.Sleep(100);
                Assert.AreEqual(28, c.Buffered(IdKind.Snowflake));
                BufferState state = c.BufferStates().Single(s => s.Kind == IdKind.Snowflake);
                Assert.AreEqual(2, state.Refills);
                Assert.IsNull(state.LastError);
                ids.AddRange(c.NextSnowflakes(28));
                Assert.AreEqual(40, ids.Distinct().Count());
            }
        }

        // -- a full outage -------------------------------------------------------------------

        [Test]
        public void TheBufferServesAFullOutageUntilEmptyThenNamesEveryServer()
        {
            const double timeoutS = 0.1;
            var c = new Client(new[] { a.Http, b.Resp }, Options(timeoutMs: 100, batch: 40, refillBelow: 20, maxAgeMs: 10000, backoffMs: 100));
            try
            {
                long firstSeg = c.NextSegment("outage");
                ulong firstSf = c.NextSnowflake();
                Assert.AreEqual(39, c.Buffered(IdKind.Segment, "outage"));
                Assert.AreEqual(39, c.Buffered(IdKind.Snowflake));
                a.SigStop();
                b.SigStop();
                try
                {
                    var calls = new[]
                    {
                        Tuple.Create("segment", (Func<ulong>)(() => (ulong)c.NextSegment("outage")), (ulong)firstSeg),
                        Tuple.Create("snowflake", (Func<ulong>)c.NextSnowflake, firstSf),
                    };
                    foreach (var call in calls)
                    {
                        var served = new List<ulong>();
                        var w = new Stopwatch();
                        var e = Assert.Throws<IdforgeUnavailableException>(() =>
                        {
                            while (true)
                            {
                                // Slow enough that the background refill (below 20 left) fails on
                                // both servers while IDs are left.
                                Thread.Sleep(15);
                                w.Restart();
                                served.Add(call.Item2());
                            }
                        });
                        double waited = Seconds(w);
                        Assert.AreEqual(39, served.Count, call.Item1); // every buffered ID
                        Assert.AreEqual(40, served.Concat(new[] { call.Item3 }).Distinct().Count(), call.Item1);
                        StringAssert.Contains(a.Http, e.Message);
                        StringAssert.Contains(b.Resp, e.Message);
                        StringAssert.Contains("timed out after 100 ms", e.Message);
                        CollectionAssert.AreEqual(new[] { a.Http, b.Resp }, e.Servers.Select(s => s.Url).ToArray());
                        Assert.AreEqual("unavailable", e.Code);
                        Assert.IsInstanceOf<IdforgeException>(e);
                        Assert.That(waited, Is.LessThan(2 * timeoutS + 1.0), call.Item1);
                    }
                }
                finally
                {
                    a.SigCont();
                    b.SigCont();
                }
                // Back: the next call gets an ID again (every server backing off: the one whose
                // period ends first is tried).
                double deadline = Env.NowMs + 3000;
                while (true)
                {
                    try
                    {
                        Assert.That(c.NextSegment("outage"), Is.GreaterThan(firstSeg));
                        break;
                    }
                    catch (IdforgeUnavailableException)
                    {
                        if (Env.NowMs > deadline) throw;
                        Thread.Sleep(50);
                    }
                }
            }
            finally
            {
                c.Dispose();
            }
        }

        [Test]
        public void AnEmptyBufferTriesAServerStillBackingOff()
        {
            using (var c = new Client(new[] { a.Http }, Options(timeoutMs: 300, batch: 10, refillBelow: 5, backoffMs: 60000, maxBackoffMs: 60000)))
            {
                var ids = new List<ulong> { c.NextSnowflake() }; // 9 left
                a.SigStop();
                try
                {
                    for (int i = 0; i < 5; i++) ids.Add(c.NextSnowflake()); // 4 left: a refill, A times out
                    double deadline = Env.NowMs + 5000;
                    while (c.ServerStates()[0].Failures == 0 && Env.NowMs < deadline) Thread.Sleep(10);
                }
                finally
                {
                    a.SigCont();
                }
                Assert.That(c.ServerStates()[0].BackingOffMs, Is.GreaterThan(50000));
                // No background refill while A backs off; the empty buffer tries A anyway.
                for (int i = 0; i < 4 + 10; i++) ids.Add(c.NextSnowflake());
                Assert.AreEqual(20, ids.Distinct().Count());
                Assert.AreEqual(0, c.ServerStates()[0].Failures);
            }
        }

        [Test]
        public void NoServerAtAllFailsAtOnceNamingEachServer()
        {
            var dead = new[] { "http://127.0.0.1:" + Env.FreePort(), "redis://127.0.0.1:" + Env.FreePort() };
            var expected = new[] { dead[0] + " failed: connection refused", dead[1] + " failed: connection refused" };
            using (var c = new Client(dead, Options(buffer: false, backoffMs: 1000, maxBackoffMs: 3000)))
            {
                var e = Assert.Throws<IdforgeUnavailableException>(() => c.NextSnowflake());
                CollectionAssert.AreEqual(expected, e.Servers.Select(s => s.ToString()).ToArray());
                StringAssert.Contains(string.Join("; ", expected), e.Message);
                // Both back off now: a waiting caller tries them anyway, the one whose period ends
                // first first, rather than failing untried.
                e = Assert.Throws<IdforgeUnavailableException>(() => c.NextSnowflake());
                CollectionAssert.AreEqual(expected, e.Servers.Select(s => s.ToString()).ToArray());
                IReadOnlyList<ServerState> states = c.ServerStates();
                CollectionAssert.AreEqual(new[] { 2, 2 }, states.Select(s => s.Failures).ToArray());
                Assert.That(states[0].BackingOffMs, Is.GreaterThan(1500)); // doubled: 2000 ms
                for (int i = 0; i < 4; i++) Assert.Throws<IdforgeUnavailableException>(() => c.NextSnowflake());
                states = c.ServerStates();
                Assert.AreEqual(12, states.Sum(s => s.Failures)); // both, every call
                Assert.That(states.Max(s => s.BackingOffMs), Is.LessThanOrEqualTo(3000)); // the cap
            }
            // With the buffer, an empty buffer fails the same way.
            using (var c2 = new Client(dead, Options(timeoutMs: 200)))
                Assert.Throws<IdforgeUnavailableException>(() => c2.NextSegment("order"));
        }

        static string HttpAnswer(string status, string body) =>
            "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nContent-Length: " +
            System.Text.Encoding.UTF8.GetByteCount(body) + "\r\n\r\n" + body;

        [Test]
        public void AnyOtherErrorAnswerMovesOnToTheNextServer()
        {
            var cases = new[]
            {
                Tuple.Create("http", HttpAnswer("503 Service Unavailable", "{\"error\":{\"code\":\"unavailable\",\"message\":\"segment store down\"}}"), "HTTP 503 unavailable"),
                Tuple.Create("http", HttpAnswer("500 Internal Server Error", "{\"error\":{\"code\":\"internal\",\"message\":\"boom\"}}"), "HTTP 500 internal"),
                Tuple.Create("http", HttpAnswer("401 Unauthorized", "proxy says no"), "HTTP 401"),
                Tuple.Create("http", HttpAnswer("403 Forbidden", "{\"error\":{\"code\":\"forbidden\",\"message\":\"no scope\"}}"), "HTTP 403"),
                Tuple.Create("http", HttpAnswer("429 Too Many Requests", "{\"error\":{\"code\":\"too_many_requests\",\"message\":\"slow down\"}}"), "HTTP 429"),
                Tuple.Create("http", HttpAnswer("200 OK", "{\"ids\":[]}"), "malformed"),
                Tuple.Create("http", HttpAnswer("200 OK", "{\"ids\":[\"12x\"]}"), "malformed"),
                Tuple.Create("http", HttpAnswer("200 OK", "not json"), "malformed"),
                Tuple.Create("http", HttpAnswer("200 OK", "{\"kind\":\"snowflake\",\"ids\":[\"1\",\"2\"]}"), "answered 2 IDs, asked for 1"),
                Tuple.Create("http", "SSH-2.0-OpenSSH\r\n", "not an HTTP answer"),
                Tuple.Create("redis", "-ERR lease_lost: the worker lease is gone\r\n", "lease_lost"),
                Tuple.Create("redis", "-ERR io_error: disk\r\n", "io_error"),
                Tuple.Create("redis", "-ERR unknown command 'ID.SNOWFLAKE'\r\n", "unknown command"),
                Tuple.Create("redis", "-NOAUTH Authentication required.\r\n", "NOAUTH"),
                Tuple.Create("redis", "+OK\r\n", "unexpected answer"),
                Tuple.Create("redis", "*2\r\n:1\r\n:2\r\n", "answered 2 IDs, asked for 1"),
                Tuple.Create("redis", "*1\r\n:-5\r\n", "malformed"),
            };
            var nodeA = a.Node();
            foreach (var item in cases)
            {
                using (var fake = new FakeServer(item.Item2))
                {
                    string url = item.Item1 + "://127.0.0.1:" + fake.Port;
                    using (var c = new Client(new[] { url, a.Http }, Options(buffer: false)))
                    {
                        Assert.AreEqual(nodeA, NodeOf(c.NextSnowflake()), item.Item3);
                        ServerState state = c.ServerStates()[0];
                        Assert.AreEqual(1, state.Failures, item.Item3);
                        Assert.That(state.BackingOffMs, Is.GreaterThan(0), item.Item3);
                        StringAssert.Contains(item.Item3, state.LastError);
                        Assert.AreEqual(1, fake.Requests, item.Item3);
                        // It backs off: the next call goes to A without asking it.
                        Assert.AreEqual(nodeA, NodeOf(c.NextSnowflake()), item.Item3);
                        Assert.AreEqual(1, fake.Requests, item.Item3);
                    }
                }
            }
        }

        [Test]
        public void AServerThatAnswersAWrongNumberOfIdsIsAFailure()
        {
            // A whole buffered batch: 3 IDs for the 16 asked for is a failure, not 3 IDs.
            using (var fake = new FakeServer(HttpAnswer("200 OK", "{\"kind\":\"snowflake\",\"ids\":[\"1\",\"2\",\"3\"]}")))
            using (var c = new Client(new[] { "http://127.0.0.1:" + fake.Port, b.Resp }, Options(batch: 16)))
            {
                var nodeB = b.Node();
                ulong id = c.NextSnowflake();
                Assert.AreEqual(nodeB, NodeOf(id));
                Assert.AreEqual(15, c.Buffered(IdKind.Snowflake));
                IReadOnlyList<ServerState> states = c.ServerStates();
                Assert.AreEqual("answered 3 IDs, asked for 16", states[0].LastError);
                Assert.That(states[0].BackingOffMs, Is.GreaterThan(0));
                Assert.IsTrue(states[1].Current);
            }
        }

        [Test]
        public void TheTimeoutCoversTheWholeAnswer()
        {
            // The headers, then a byte every 50 ms: each read is quick, the answer never ends.
            // A server that hangs half-way costs one timeout, connect to last byte.
            using (var fake = new FakeServer("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{\"ids\":[\"1", 50))
            using (var c = new Client(new[] { "http://127.0.0.1:" + fake.Port }, Options(timeoutMs: 300, buffer: false)))
            {
                var w = Stopwatch.StartNew();
                var call = System.Threading.Tasks.Task.Run(() => c.NextSnowflake());
                Assert.IsTrue(((IAsyncResult)call).AsyncWaitHandle.WaitOne(5000), "no timeout: still waiting after 5 s");
                Assert.That(Seconds(w), Is.InRange(0.27, 1.0));
                var e = Assert.Throws<IdforgeUnavailableException>(() => call.GetAwaiter().GetResult());
                StringAssert.Contains("timed out after 300 ms", e.Message);
            }
        }

        // -- wrong requests ------------------------------------------------------------------

        [Test]
        public void AWrongRequestIsAnErrorAtOnceWithoutFailover()
        {
            Func<double> refusedOnB = () =>
                new[] { "http", "resp" }.SelectMany(p => new[] { 400, 404 }.Select(st =>
                    b.Metric("idforge_requests_total", "protocol=\"" + p + "\",route=\"segment\",status=\"" + st + "\""))).Sum();
            foreach (string[] servers in new[] { new[] { a.Http, b.Http }, new[] { a.Resp, b.Resp } })
            {
                foreach (bool buffer in new[] { true, false })
                {
                    string what = servers[0] + " buffer=" + buffer;
                    double before = refusedOnB();
                    using (var c = new Client(servers, Options(buffer: buffer)))
                    {
                        var w = Stopwatch.StartNew();
                        var e = Assert.Throws<IdforgeException>(() => c.NextSegment("no_such_tag"), what); // not a subclass
                        Assert.That(Seconds(w), Is.LessThan(2.0), what);
                        Assert.AreEqual("not_found", e.Code, what);
                        StringAssert.Contains("no_such_tag", e.ServerMessage, what);
                        Assert.AreEqual(servers[0], e.Server, what);
                        Assert.AreEqual(servers[0].StartsWith("http") ? (int?)404 : null, e.Status, what);
                        e = Assert.Throws<IdforgeException>(() => c.NextSegment("bad tag"), what);
                        Assert.AreEqual("invalid_argument", e.Code, what);
                        // B never heard of them; A is not counted as failed.
                        Assert.AreEqual(before, refusedOnB(), what);
                        CollectionAssert.AreEqual(new[] { 0, 0 }, c.ServerStates().Select(s => s.Failures).ToArray(), what);
                    }
                }
            }
            using (var c = new Client(new[] { a.Resp, b.Http }, Options(batch: 20000)))
            {
                var e = Assert.Throws<IdforgeException>(() => c.NextSnowflake()); // above limits.max_count
                Assert.AreEqual("out_of_range", e.Code);
            }
        }

        // -- the buffer ----------------------------------------------------------------------

        [Test]
        public void OldTimeOrderedIdsAreDroppedSegmentIdsKept()
        {
            using (var c = new Client(new[] { a.Http }, Options(batch: 50, maxAgeMs: 200)))
            {
                ulong old = c.NextSnowflake();
                long seg = c.NextSegment("item");
                Thread.Sleep(300);
                long now = Env.UnixMs;
                ulong fresh = c.NextSnowflake();
                Assert.That(Client.Parse(fresh).UnixMs, Is.GreaterThan(now - 150));
                Assert.That(Client.Parse(fresh).UnixMs, Is.GreaterThan(Client.Parse(old).UnixMs + 250));
                Assert.AreEqual(49, c.Buffered(IdKind.Snowflake)); // a new batch, less this one
                Assert.AreEqual(seg + 1, c.NextSegment("item")); // no age limit
                Assert.AreEqual(49, c.BufferStates().Single(s => s.Kind == IdKind.Snowflake).Dropped);
            }
        }

        [Test]
        public void ThreadsShareOneClientAndTheBufferStaysBounded()
        {
            const int batch = 64, below = 32;
            var ids = new List<ulong>();
            var errors = new List<string>();
            int most = 0;
            using (var c = new Client(new[] { a.Resp, b.Http }, Options(batch: batch, refillBelow: below)))
            {
                var threads = Enumerable.Range(0, 6).Select(t => new Thread(() =>
                {
                    try
                    {
                        var mine = new List<ulong>();
                        for (int i = 0; i < 1500; i++)
                        {
                            mine.Add(i % 2 == 1 ? c.NextSnowflake() : (ulong)c.NextSegment("order"));
                            int size = Math.Max(c.Buffered(IdKind.Snowflake), c.Buffered(IdKind.Segment, "order"));
                            int seen;
                            do seen = Volatile.Read(ref most);
                            while (size > seen && Interlocked.CompareExchange(ref most, size, seen) != seen);
                        }
                        lock (ids) ids.AddRange(mine);
                    }
                    catch (Exception e)
                    {
                        lock (errors) errors.Add(e.ToString());
                    }
                })).ToList();
                foreach (Thread t in threads) t.Start();
                foreach (Thread t in threads) t.Join(30000);
            }
            CollectionAssert.IsEmpty(errors);
            Assert.AreEqual(6 * 1500, ids.Count);
            Assert.AreEqual(ids.Count, ids.Distinct().Count());
            Assert.That(most, Is.LessThanOrEqualTo(batch + below));
        }

        [Test]
        public void BusyThreadsDoNotStarveAWaitingOne()
        {
            // More callers than a batch feeds: each refill hands its IDs to the callers waiting
            // for it first; otherwise a waiting caller can see every refill emptied by running
            // threads and give up after timeout_ms x servers.
            var ids = new List<ulong>();
            var errors = new List<string>();
            using (var c = new Client(new[] { a.Resp }, Options(timeoutMs: 1000, batch: 16)))
            {
                var threads = Enumerable.Range(0, 8).Select(t => new Thread(() =>
                {
                    try
                    {
                        var mine = new List<ulong>();
                        for (int i = 0; i < 15000; i++) mine.Add(c.NextSnowflake());
                        lock (ids) ids.AddRange(mine);
                    }
                    catch (Exception e)
                    {
                        lock (errors) errors.Add(e.ToString());
                    }
                })).ToList();
                foreach (Thread t in threads) t.Start();
                foreach (Thread t in threads) t.Join(60000);
            }
            CollectionAssert.IsEmpty(errors);
            Assert.AreEqual(8 * 15000, ids.Distinct().Count());
        }

        [Test]
        public void ClosedClient()
        {
            var c = new Client(new[] { a.Http }, Options());
            c.NextSnowflake();
            c.Dispose();
            var e = Assert.Throws<IdforgeException>(() => c.NextSnowflake());
            Assert.AreEqual("closed", e.Code);
            Assert.AreEqual("closed", Assert.Throws<IdforgeException>(() => c.NextSegment("order")).Code);
            c.Dispose(); // twice is fine

            // A caller waiting for the refill in progress is woken by the close, with the same error.
            var waiting = new Client(new[] { a.Http }, Options(timeoutMs: 1000, batch: 5, refillBelow: 0));
            waiting.NextSnowflakes(5); // empty now
            a.SigStop();
            var errors = new List<IdforgeException>();
            var threads = Enumerable.Range(0, 2).Select(i => new Thread(() =>
            {
                try
                {
                    waiting.NextSnowflake();
                }
                catch (IdforgeException error)
                {
                    lock (errors) errors.Add(error);
                }
            })).ToList();
            try
            {
                foreach (Thread t in threads) t.Start();
                Thread.Sleep(200); // one runs the refill (A stopped), the other waits for it
                waiting.Dispose();
                Thread.Sleep(300);
                lock (errors) CollectionAssert.AreEqual(new[] { "closed" }, errors.Select(x => x.Code).ToArray());
            }
            finally
            {
                a.SigCont();
                foreach (Thread t in threads) t.Join(5000);
            }
        }
    }
}
