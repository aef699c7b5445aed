// Real `idforge serve` processes for the client's tests, started as the Python client's
// tests start them (clients/python/tests/_support.py): two servers share a worker-id
// registry (local:SHARED/workers: different worker ids) and a segment store
// (sqlite:SHARED/segments.db: shared counters), each with its own data dir and identity,
// so together they never issue the same ID.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading;

namespace IdforgeClientTests
{
    internal static class Env
    {
        /// <summary>The repository: IDFORGE_SOURCE_DIR (check.sh sets it), else the first
        /// folder up from here holding tests/data/snowflake_vectors.txt.</summary>
        public static readonly string RepoRoot = FindRepoRoot();

        public static readonly string IdforgeBin =
            string.IsNullOrEmpty(Environment.GetEnvironmentVariable("IDFORGE_BIN"))
                ? Path.Combine(RepoRoot, "build", "idforge")
                : Environment.GetEnvironmentVariable("IDFORGE_BIN");

        public static readonly string Vectors = Path.Combine(RepoRoot, "tests", "data", "snowflake_vectors.txt");

        /// <summary>The parse tool: IDFORGE_PARSE, else the `parse` wrapper check.sh writes
        /// beside the test assembly.</summary>
        public static readonly string ParseCommand =
            string.IsNullOrEmpty(Environment.GetEnvironmentVariable("IDFORGE_PARSE"))
                ? Path.Combine(Path.GetDirectoryName(typeof(Env).Assembly.Location), "parse")
                : Environment.GetEnvironmentVariable("IDFORGE_PARSE");

        static string FindRepoRoot()
        {
            string dir = Environment.GetEnvironmentVariable("IDFORGE_SOURCE_DIR");
            if (!string.IsNullOrEmpty(dir)) return Path.GetFullPath(dir);
            foreach (string start in new[] { Directory.GetCurrentDirectory(), Path.GetDirectoryName(typeof(Env).Assembly.Location) })
            {
                for (string d = start; d != null; d = Path.GetDirectoryName(d))
                    if (File.Exists(Path.Combine(d, "tests", "data", "snowflake_vectors.txt"))) return d;
            }
            return Directory.GetCurrentDirectory();
        }

        public static double NowMs => Stopwatch.GetTimestamp() * 1000.0 / Stopwatch.Frequency;

        public static long UnixMs => (long)(DateTime.UtcNow - new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc)).TotalMilliseconds;

        /// <summary>(exit code, stdout, stderr) of a program run to its end.</summary>
        public static Tuple<int, string, string> Run(string file, IEnumerable<string> args, string stdin = null)
        {
            var info = new ProcessStartInfo(file, string.Join(" ", args.Select(Quote)))
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                RedirectStandardInput = stdin != null,
            };
            using (Process p = Process.Start(info))
            {
                string stderr = null;
                var errorReader = new Thread(() => stderr = p.StandardError.ReadToEnd());
                errorReader.Start();
                if (stdin != null)
                {
                    p.StandardInput.Write(stdin);
                    p.StandardInput.Close();
                }
                string stdout = p.StandardOutput.ReadToEnd();
                errorReader.Join();
                p.WaitForExit();
                return Tuple.Create(p.ExitCode, stdout, stderr);
            }
        }

        // Mono splits ProcessStartInfo.Arguments as Windows does: quote each one.
        public static string Quote(string arg)
        {
            var sb = new StringBuilder("\"");
            int backslashes = 0;
            foreach (char c in arg)
            {
                if (c == '\\')
                {
                    backslashes++;
                    continue;
                }
                if (c == '"')
                {
                    sb.Append('\\', backslashes * 2 + 1);
                }
                else sb.Append('\\', backslashes);
                backslashes = 0;
                sb.Append(c);
            }
            sb.Append('\\', backslashes * 2);
            return sb.Append('"').ToString();
        }

        public static int FreePort()
        {
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            int port = ((IPEndPoint)listener.LocalEndpoint).Port;
            listener.Stop();
            return port;
        }
    }

    internal static class Signals
    {
        public const int Kill = 9, Term = 15, Cont = 18, Stop = 19;

        [DllImport("libc", SetLastError = true, EntryPoint = "kill")]
        static extern int SysKill(int pid, int signal);

        public static void Send(int pid, int signal)
        {
            if (SysKill(pid, signal) != 0)
                throw new InvalidOperationException("kill(" + pid + ", " + signal + ") failed: errno " + Marshal.GetLastWin32Error());
        }
    }

    /// <summary>
    /// Starts processes from one thread that lives as long as the tests: a server started
    /// under `setpriv --pdeathsig KILL` is killed when the thread that started it ends.
    /// </summary>
    internal static class Launcher
    {
        static readonly BlockingCollection<Action> Work = new BlockingCollection<Action>();

        static Launcher()
        {
            var thread = new Thread(() =>
            {
                foreach (Action action in Work.GetConsumingEnumerable()) action();
            }) { IsBackground = true, Name = "idforge-test-launcher" };
            thread.Start();
        }

        public static Process Start(ProcessStartInfo info)
        {
            Process started = null;
            Exception error = null;
            using (var done = new ManualResetEventSlim())
            {
                Work.Add(() =>
                {
                    try
                    {
                        started = Process.Start(info);
                    }
                    catch (Exception e)
                    {
                        error = e;
                    }
                    done.Set();
                });
                done.Wait();
            }
            if (error != null) throw new InvalidOperationException("cannot start " + info.FileName, error);
            return started;
        }
    }

    internal sealed class ServerProc
    {
        public const string AdminToken = "csharp-client-test-token";
        static readonly Regex HttpLine = new Regex(@"idforge serve: http http://127\.0\.0\.1:(\d+)/");
        static readonly Regex RespLine = new Regex(@"idforge serve: resp redis://127\.0\.0\.1:(\d+)");

        readonly string name, dataDir, shared, outPath, errPath;
        Process proc;

        public ServerProc(string root, string shared, string name)
        {
            this.name = name;
            this.shared = shared;
            dataDir = Path.Combine(root, name);
            outPath = Path.Combine(root, name + ".out");
            errPath = Path.Combine(root, name + ".err");
        }

        public int HttpPort { get; private set; }
        public int RespPort { get; private set; }
        public bool Stopped { get; private set; }
        public string Http => "http://127.0.0.1:" + HttpPort;
        public string Resp => "redis://127.0.0.1:" + RespPort;
        public bool Running => proc != null && !proc.HasExited;

        /// <summary>Starts on the ports it had (0 the first time: any free one).</summary>
        public void Start(double timeoutMs = 10000)
        {
            var args = new List<string>
            {
                Env.IdforgeBin, "serve",
                "--http", "127.0.0.1:" + HttpPort,
                "--resp", "127.0.0.1:" + RespPort,
                "--data-dir", dataDir,
                "--registry", "local:" + shared + "/workers",
                "--store", "sqlite:" + shared + "/segments.db",
                "--identity", "csharp-test-" + name,
                "--admin-token", AdminToken,
                "--io-threads", "1", "--worker-threads", "2",
                // A loaded machine can delay the thread that renews the time reservation;
                // wait for it rather than answer 503.
                "--max-wait-ms", "250",
                "--log-level", "warn",
            };
            // Killed with the test process through util-linux's setpriv, which execs the
            // server under the same pid (as does the shell, which only redirects).
            if (File.Exists("/usr/bin/setpriv")) args.InsertRange(0, new[] { "/usr/bin/setpriv", "--pdeathsig", "KILL", "--" });
            File.WriteAllText(outPath, "");
            string script = "exec \"$@\" >" + outPath + " 2>>" + errPath + " </dev/null";
            var info = new ProcessStartInfo("/bin/sh",
                string.Join(" ", new[] { "-c", script, "sh" }.Concat(args).Select(Env.Quote)))
            {
                UseShellExecute = false,
            };
            proc = Launcher.Start(info);
            Stopped = false;
            double deadline = Env.NowMs + timeoutMs;
            while (true)
            {
                string text = File.ReadAllText(outPath);
                Match h = HttpLine.Match(text), r = RespLine.Match(text);
                if (h.Success && r.Success)
                {
                    HttpPort = int.Parse(h.Groups[1].Value, CultureInfo.InvariantCulture);
                    RespPort = int.Parse(r.Groups[1].Value, CultureInfo.InvariantCulture);
                    return;
                }
                if (proc.HasExited || Env.NowMs > deadline)
                {
                    Kill9();
                    string err = File.Exists(errPath) ? File.ReadAllText(errPath) : "";
                    throw new InvalidOperationException("idforge serve " + name + " did not start: " +
                                                        err.Substring(Math.Max(0, err.Length - 2000)));
                }
                Thread.Sleep(10);
            }
        }

        public void Kill9()
        {
            if (Running)
            {
                Signals.Send(proc.Id, Signals.Kill);
                proc.WaitForExit();
            }
            Stopped = false;
        }

        /// <summary>SIGSTOP, and wait until every thread of the process has stopped.</summary>
        public void SigStop()
        {
            Signals.Send(proc.Id, Signals.Stop);
            Stopped = true;
            string taskDir = "/proc/" + proc.Id + "/task";
            double deadline = Env.NowMs + 5000;
            while (Env.NowMs < deadline)
            {
                var states = new List<string>();
                foreach (string task in Directory.GetDirectories(taskDir))
                {
                    try
                    {
                        string stat = File.ReadAllText(Path.Combine(task, "stat"));
                        states.Add(stat.Substring(stat.LastIndexOf(')') + 2, 1));
                    }
                    catch (IOException)
                    {
                        // a thread that ended
                    }
                }
                if (states.Count > 0 && states.All(s => s == "T" || s == "t")) return;
                Thread.Sleep(1);
            }
            throw new InvalidOperationException("idforge serve " + name + " did not stop");
        }

        public void SigCont()
        {
            if (Running) Signals.Send(proc.Id, Signals.Cont);
            Stopped = false;
        }

        public void Terminate()
        {
            if (!Running) return;
            SigCont();
            Signals.Send(proc.Id, Signals.Term);
            if (!proc.WaitForExit(5000)) Kill9();
        }

        public string Get(string path, string method = "GET", string body = null, bool token = false)
        {
            var request = (HttpWebRequest)WebRequest.Create(Http + path);
            request.Proxy = null;
            request.Method = method;
            request.Timeout = 5000;
            if (token) request.Headers.Add("Authorization", "Bearer " + AdminToken);
            if (body != null)
            {
                byte[] bytes = Encoding.UTF8.GetBytes(body);
                request.ContentType = "application/json";
                request.ContentLength = bytes.Length;
                using (Stream s = request.GetRequestStream()) s.Write(bytes, 0, bytes.Length);
            }
            using (var response = (HttpWebResponse)request.GetResponse())
            using (var reader = new StreamReader(response.GetResponseStream(), Encoding.UTF8))
                return reader.ReadToEnd();
        }

        /// <summary>The value of one sample of /metrics (0 when absent).</summary>
        public double Metric(string metric, string labels)
        {
            string want = metric + "{" + labels + "}";
            foreach (string line in Get("/metrics").Split('\n'))
            {
                int space = line.LastIndexOf(' ');
                if (space > 0 && line.Substring(0, space) == want)
                    return double.Parse(line.Substring(space + 1), CultureInfo.InvariantCulture);
            }
            return 0;
        }

        /// <summary>(datacenter, worker) of its Snowflake IDs, from its status.</summary>
        public Tuple<ulong, ulong> Node()
        {
            Match lease = Regex.Match(Get("/v1/status"), "\"lease\"\\s*:\\s*\\{[^{}]*\\}");
            Match dc = Regex.Match(lease.Value, "\"datacenter\"\\s*:\\s*(\\d+)");
            Match worker = Regex.Match(lease.Value, "\"worker\"\\s*:\\s*(\\d+)");
            if (!dc.Success || !worker.Success) throw new InvalidOperationException("no lease in the status of " + name);
            return Tuple.Create(ulong.Parse(dc.Groups[1].Value, CultureInfo.InvariantCulture),
                                ulong.Parse(worker.Groups[1].Value, CultureInfo.InvariantCulture));
        }

        public void WaitReady(double timeoutMs = 5000)
        {
            double deadline = Env.NowMs + timeoutMs;
            while (true)
            {
                try
                {
                    Get("/readyz");
                    return;
                }
                catch (WebException)
                {
                    if (Env.NowMs > deadline) throw new InvalidOperationException("idforge serve " + name + " is not ready");
                }
                Thread.Sleep(20);
            }
        }
    }

    /// <summary>Two servers, A and B, and tags created through the admin API.</summary>
    internal sealed class Cluster : IDisposable
    {
        readonly string root;

        public Cluster(params string[] tags)
        {
            if (!File.Exists(Env.IdforgeBin)) throw new InvalidOperationException("no idforge binary at " + Env.IdforgeBin + " (set IDFORGE_BIN)");
            // On a tmpfs: the servers fsync their high-water marks, and a disk busy with
            // builds can stall an fsync long enough for a 503.
            string tmp = Directory.Exists("/dev/shm") ? "/dev/shm" : Path.GetTempPath();
            root = Path.Combine(tmp, "idforge-csclient-" + Guid.NewGuid().ToString("N").Substring(0, 12));
            string shared = Path.Combine(root, "shared");
            Directory.CreateDirectory(shared);
            A = new ServerProc(root, shared, "a");
            B = new ServerProc(root, shared, "b");
            try
            {
                A.Start();
                B.Start();
                foreach (string tag in tags)
                    A.Get("/v1/admin/tags", "POST", "{\"tag\":\"" + tag + "\",\"step\":100,\"start\":\"1\"}", true);
                A.WaitReady();
                B.WaitReady();
            }
            catch
            {
                Dispose();
                throw;
            }
        }

        public ServerProc A { get; }
        public ServerProc B { get; }

        /// <summary>Both running and not stopped (after a test that stopped or killed one).</summary>
        public void Heal()
        {
            foreach (ServerProc s in new[] { A, B })
            {
                if (s.Stopped) s.SigCont();
                if (!s.Running) s.Start();
            }
        }

        public void Dispose()
        {
            A?.Terminate();
            B?.Terminate();
            try
            {
                Directory.Delete(root, true);
            }
            catch (IOException)
            {
                // a file still open: /dev/shm is cleared at boot
            }
        }
    }

    /// <summary>Answers every request (anything received) with the same bytes: the answers a
    /// real server gives only when something is broken (a 503, a proxy's 401, ...).</summary>
    internal sealed class FakeServer : IDisposable
    {
        readonly TcpListener listener;
        readonly byte[] answer;
        readonly int dripMs;
        readonly bool oneAnswerPerConnection;
        int requests;

        /// <summary>dripMs &gt; 0: after the answer, one more byte every dripMs (an answer that
        /// never ends, each read well within any timeout). oneAnswerPerConnection: a second
        /// request on a connection closes it unanswered (a server's idle timeout that strikes
        /// as the request arrives).</summary>
        public FakeServer(byte[] answer, int dripMs = 0, bool oneAnswerPerConnection = false)
        {
            this.answer = answer;
            this.dripMs = dripMs;
            this.oneAnswerPerConnection = oneAnswerPerConnection;
            listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            Port = ((IPEndPoint)listener.LocalEndpoint).Port;
            new Thread(Accept) { IsBackground = true }.Start();
        }

        public FakeServer(string answer, int dripMs = 0, bool oneAnswerPerConnection = false)
            : this(Encoding.UTF8.GetBytes(answer), dripMs, oneAnswerPerConnection)
        {
        }

        public int Port { get; }
        public int Requests => Volatile.Read(ref requests);

        void Accept()
        {
            while (true)
            {
                Socket conn;
                try
                {
                    conn = listener.AcceptSocket();
                }
                catch (Exception)
                {
                    return;
                }
                new Thread(() => Serve(conn)) { IsBackground = true }.Start();
            }
        }

        void Serve(Socket conn)
        {
            var buffer = new byte[65536];
            try
            {
                int answered = 0;
                while (conn.Receive(buffer) > 0)
                {
                    Interlocked.Increment(ref requests);
                    if (oneAnswerPerConnection && answered++ > 0) break;
                    if (answer.Length > 0) conn.Send(answer);
                    while (dripMs > 0)
                    {
                        Thread.Sleep(dripMs);
                        conn.Send(new[] { (byte)' ' });
                    }
                }
            }
            catch (Exception)
            {
                // the client went away
            }
            finally
            {
                conn.Close();
            }
        }

        public void Dispose() => listener.Stop();
    }
}
