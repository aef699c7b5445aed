// IDs per second from the C# client (not a test; prints a table).
//
//   mono BUILD_DIR/idforge-bench.exe [--n 2000000] [--m 20000] [--url redis://HOST:PORT]
//
// Without --url it starts one `idforge serve` (IDFORGE_BIN, default build/idforge) on free
// ports with a tag `bench`. In one run it measures NextSnowflake() with the buffer against a
// plain in-process counter (Interlocked.Increment, and a locked increment), the ceiling of
// any call that hands out a number, and NextSnowflake() without the buffer (one request per
// ID), and prints the ratios.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Linq;
using System.Threading;
using Idforge.Client;
using IdforgeClientTests;

namespace IdforgeBench
{
    static class Bench
    {
        static double Rate(long n, Action<long> run)
        {
            var w = Stopwatch.StartNew();
            run(n);
            return n / w.Elapsed.TotalSeconds;
        }

        static int Main(string[] args)
        {
            long n = 2000000, m = 20000;
            string url = null;
            for (int i = 0; i < args.Length; i++)
            {
                string next = i + 1 < args.Length ? args[i + 1] : null;
                if (args[i] == "--n" && next != null) n = long.Parse(args[++i], CultureInfo.InvariantCulture);
                else if (args[i] == "--m" && next != null) m = long.Parse(args[++i], CultureInfo.InvariantCulture);
                else if (args[i] == "--url" && next != null) url = args[++i];
                else
                {
                    Console.Error.WriteLine("usage: idforge-bench.exe [--n IDS] [--m IDS] [--url redis://HOST:PORT|http://HOST:PORT]");
                    return 2;
                }
            }

            Cluster cluster = null;
            var rows = new List<Tuple<string, double>>();
            var urls = new List<string>();
            try
            {
                if (url == null)
                {
                    cluster = new Cluster("bench");
                    cluster.B.Terminate(); // one server is enough here
                    urls.Add(cluster.A.Resp);
                    urls.Add(cluster.A.Http);
                }
                else urls.Add(url);

                long atomic = 0;
                double counter = Rate(n, k =>
                {
                    for (long i = 0; i < k; i++) Interlocked.Increment(ref atomic);
                });
                rows.Add(Tuple.Create("in-process counter (Interlocked.Increment)", counter));
                long locked = 0;
                var gate = new object();
                double lockedCounter = Rate(n, k =>
                {
                    for (long i = 0; i < k; i++)
                        lock (gate) locked++;
                });
                rows.Add(Tuple.Create("in-process counter (lock, increment)", lockedCounter));

                double buffered = 0;
                foreach (int batch in new[] { 256, 4096 })
                {
                    using (var c = new Client(new[] { urls[0] }, new ClientOptions { Batch = batch }))
                    {
                        c.NextSnowflake(); // connect and fill
                        double r = Rate(n, k =>
                        {
                            for (long i = 0; i < k; i++) c.NextSnowflake();
                        });
                        if (batch == 256) buffered = r;
                        rows.Add(Tuple.Create("NextSnowflake() with the buffer, batch " + batch, r));
                        if (cluster != null)
                        {
                            c.NextSegment("bench");
                            rows.Add(Tuple.Create("NextSegment() with the buffer, batch " + batch, Rate(n, k =>
                            {
                                for (long i = 0; i < k; i++) c.NextSegment("bench");
                            })));
                        }
                    }
                }
                using (var c = new Client(new[] { urls[0] }))
                {
                    c.NextSnowflake();
                    rows.Add(Tuple.Create("NextSnowflake() with the buffer, 4 threads, one client", Rate(n, k =>
                    {
                        var threads = Enumerable.Range(0, 4).Select(t => new Thread(() =>
                        {
                            for (long i = 0; i < k / 4; i++) c.NextSnowflake();
                        })).ToList();
                        foreach (Thread t in threads) t.Start();
                        foreach (Thread t in threads) t.Join();
                    })));
                }
                double direct = 0;
                foreach (string u in urls)
                {
                    using (var c = new Client(new[] { u }, new ClientOptions { Buffer = false }))
                    {
                        c.NextSnowflake();
                        double r = Rate(m, k =>
                        {
                            for (long i = 0; i < k; i++) c.NextSnowflake();
                        });
                        if (direct == 0) direct = r;
                        rows.Add(Tuple.Create("NextSnowflake() without the buffer (" + u.Split(':')[0] + "://)", r));
                    }
                }

                int width = rows.Max(r => r.Item1.Length);
                Console.WriteLine("mono " + Type.GetType("Mono.Runtime")?.GetMethod("GetDisplayName",
                    System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Static)?.Invoke(null, null) +
                    ", " + Environment.ProcessorCount + " cores; n=" + n + ", m=" + m + "; server " + urls[0]);
                foreach (var row in rows)
                    Console.WriteLine(row.Item1.PadRight(width) + "  " + row.Item2.ToString("N0", CultureInfo.InvariantCulture).PadLeft(14) + " IDs/s");
                Console.WriteLine("NextSnowflake() with the buffer (batch 256) / Interlocked counter: " + (buffered / counter).ToString("0.000", CultureInfo.InvariantCulture) +
                                  ", / locked counter: " + (buffered / lockedCounter).ToString("0.000", CultureInfo.InvariantCulture) +
                                  ", / one request per ID (" + urls[0].Split(':')[0] + "://): " + (buffered / direct).ToString("0", CultureInfo.InvariantCulture) + "x");
                return 0;
            }
            finally
            {
                cluster?.Dispose();
            }
        }
    }
}
