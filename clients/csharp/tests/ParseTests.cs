// Decoding without a server: every vector of tests/data/snowflake_vectors.txt, and the same
// keys and values as `idforge parse --json` (docs/clients.md), through the API and the
// parse tool. Mirrors clients/python/tests/test_parse.py.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using Idforge.Client;
using NUnit.Framework;

namespace IdforgeClientTests
{
    [TestFixture]
    public class ParseTests
    {
        static readonly Dictionary<string, string[]> PresetFields = new Dictionary<string, string[]>
        {
            { "twitter", new[] { "datacenter", "worker", "sequence" } },
            { "discord", new[] { "worker", "process", "increment" } },
            { "instagram", new[] { "shard", "sequence" } },
            { "sonyflake", new[] { "sequence", "machine" } },
            { "baidu", new[] { "worker", "sequence" } },
        };

        sealed class Vector
        {
            public string Layout;
            public long Epoch;
            public long? Tick;
            public string Id;
            public long UnixMs;
            public ulong[] Fields;
        }

        static List<Vector> LoadVectors()
        {
            var vectors = new List<Vector>();
            foreach (string raw in File.ReadAllLines(Env.Vectors))
            {
                string line = raw.Split('#')[0];
                string[] parts = line.Split(new[] { ' ', '\t' }, StringSplitOptions.RemoveEmptyEntries);
                if (parts.Length == 0) continue;
                var v = new Vector
                {
                    Layout = parts[0],
                    Epoch = long.Parse(parts[1], CultureInfo.InvariantCulture),
                    Id = parts[2],
                    UnixMs = long.Parse(parts[3], CultureInfo.InvariantCulture),
                    Fields = parts.Skip(4).Select(x => ulong.Parse(x, CultureInfo.InvariantCulture)).ToArray(),
                };
                int at = v.Layout.IndexOf('@');
                if (at >= 0)
                {
                    v.Tick = long.Parse(v.Layout.Substring(at + 1), CultureInfo.InvariantCulture);
                    v.Layout = v.Layout.Substring(0, at);
                }
                vectors.Add(v);
            }
            return vectors;
        }

        static string[] CliArgs(string id, string layout, long? epoch, long? tick)
        {
            var args = new List<string> { id, "--layout", layout };
            if (epoch.HasValue) args.AddRange(new[] { "--epoch", epoch.Value.ToString(CultureInfo.InvariantCulture) });
            if (tick.HasValue) args.AddRange(new[] { "--tick-ms", tick.Value.ToString(CultureInfo.InvariantCulture) });
            return args.ToArray();
        }

        static readonly Dictionary<string, Tuple<int, string>> CliAnswers = new Dictionary<string, Tuple<int, string>>();

        static string Key(string[] args) => string.Join("\u0001", args);

        /// <summary>(exit code, stdout line) of the C++ `idforge parse --json ARGS`.</summary>
        static Tuple<int, string> IdforgeParse(params string[] args)
        {
            Tuple<int, string> answer;
            lock (CliAnswers)
                if (CliAnswers.TryGetValue(Key(args), out answer)) return answer;
            var r = Env.Run(Env.IdforgeBin, new[] { "parse", "--json" }.Concat(args));
            answer = Tuple.Create(r.Item1, r.Item2.Trim());
            lock (CliAnswers) CliAnswers[Key(args)] = answer;
            return answer;
        }

        /// <summary>Runs the CLI for all these cases, four at a time (a process each).</summary>
        static void IdforgeParseAll(IEnumerable<string[]> cases)
        {
            var queue = new Queue<string[]>(cases);
            var threads = Enumerable.Range(0, 4).Select(i => new System.Threading.Thread(() =>
            {
                while (true)
                {
                    string[] args;
                    lock (queue)
                    {
                        if (queue.Count == 0) return;
                        args = queue.Dequeue();
                    }
                    IdforgeParse(args);
                }
            })).ToList();
            foreach (var t in threads) t.Start();
            foreach (var t in threads) t.Join();
        }

        [Test]
        public void EveryVectorDecodesToItsFieldsAndAsIdforgeParse()
        {
            List<Vector> vectors = LoadVectors();
            Assert.That(vectors.Count, Is.GreaterThanOrEqualTo(10));
            IdforgeParseAll(vectors.Select(v => CliArgs(v.Id, v.Layout, v.Epoch, v.Tick))
                                   .Concat(vectors.Select(v => CliArgs(v.Id, v.Layout, null, v.Tick))));
            foreach (Vector v in vectors)
            {
                string what = v.Layout + " " + v.Id;
                ParsedId got = Client.Parse(ulong.Parse(v.Id, CultureInfo.InvariantCulture), v.Layout, v.Epoch, v.Tick);
                Assert.AreEqual(Client.Parse(v.Id, v.Layout, v.Epoch, v.Tick).ToJson(), got.ToJson(), what); // text or ulong ID
                Assert.AreEqual(v.Id, got.Id.ToString(CultureInfo.InvariantCulture), what);
                Assert.AreEqual(v.UnixMs, got.UnixMs, what);
                string[] names;
                if (!PresetFields.TryGetValue(v.Layout, out names))
                    names = v.Layout.Split(',').Select(f => f.Split(':')[0]).Where(n => n != "time").ToArray();
                Assert.AreEqual(v.Fields, names.Select(n => got[n]).ToArray(), what);
                Assert.AreEqual(names, got.Fields.Select(kv => kv.Key).ToArray(), what);
                Tuple<int, string> cli = IdforgeParse(CliArgs(v.Id, v.Layout, v.Epoch, v.Tick));
                Assert.AreEqual(0, cli.Item1, what);
                Assert.AreEqual(cli.Item2, got.ToJson(), what); // same keys, order, values, types
                cli = IdforgeParse(CliArgs(v.Id, v.Layout, null, v.Tick)); // the layout's own epoch
                Assert.AreEqual(0, cli.Item1, what);
                Assert.AreEqual(cli.Item2, Client.Parse(v.Id, v.Layout, null, v.Tick).ToJson(), what);
            }
        }

        // Beyond the vectors: custom specs, reserved names, limits, and the CLI's syntax.
        static readonly string[][] ToolCases =
        {
            // tests/clients/cross_language.sh's edge cases
            new[] { "0" },
            new[] { "18446744073709551615", "--layout", "discord" },
            new[] { "9223372036854775807", "--layout", "TWITTER" },
            new[] { "175928847299117063", "--layout", "Discord", "--epoch", "0" },
            new[] { "910499571847892992", "--layout", "time:41,id:10,sequence:12", "--epoch", "1" },
            new[] { "9223372036854775807", "--layout", "time:63,sequence:1", "--epoch", "0" },
            new[] { "123456789012345", "--layout", "time:30,worker:20,seq:13", "--tick-ms", "86400000" },
            new[] { "2968681395003392", "--layout", "baidu", "--tick-ms", "1" },
            new[] { "9223372036854775808", "--layout", "twitter" },
            new[] { "1", "--layout", "nosuchlayout" },
            new[] { "1", "--layout", "time:41,worker:5" },
            new[] { "1", "--tick-ms", "0" },
            new[] { "x1" },
            // the command line
            new[] { "--layout", "discord", "5" },
            new[] { "5", "--layout=discord" },
            new[] { "5", "-l", "discord" },
            new[] { "5", "-ldiscord" },
            new[] { "5", "--layout", "" },
            new[] { "5", "--layout=" },
            new[] { "5", "--layout", " twitter" },
            new[] { "5", "--layout", "twitter", "--layout", "discord" },
            new[] { "5", "--json", "--json" },
            new[] { "--", "5" },
            new[] { "1", "2" },
            new[] { "5", "" },
            new[] { "5", "--bogus" },
            new[] { "5", "--epoch" },
            new[] { "+5" },
            new[] { "-1" },
            new[] { " 5" },
            new[] { "" },
            new[] { "000000000000000000000000005" },
            new[] { "18446744073709551615" },
            new[] { "18446744073709551616" },
            new[] { "99999999999999999999999" },
            // epochs: Unix ms or ISO-8601
            new[] { "5", "--epoch", "-5" },
            new[] { "5", "--epoch=-5" },
            new[] { "5", "--epoch", "-0" },
            new[] { "5", "--epoch", "00" },
            new[] { "5", "--epoch", "-" },
            new[] { "5", "--epoch", "" },
            new[] { "5", "--epoch", "1e3" },
            new[] { "5", "--epoch", "9223372036854775807" },
            new[] { "5", "--epoch", "9223372036854775808" },
            new[] { "5", "--epoch", "99999999999999999999" },
            new[] { "5", "--epoch", "2015-01-01" },
            new[] { "5", "--epoch", "2015-01-01T00:00:00+01:00" },
            new[] { "5", "--epoch", "2015-01-01t00:00Z" },
            new[] { "5", "--epoch", "2015-01-01 00:00:00,5" },
            new[] { "5", "--epoch", "2015-01-01T00:00:00.123456Z" },
            new[] { "5", "--epoch", "2015-01-01T00:00:00.Z" },
            new[] { "5", "--epoch", "2015-01-01T00:00+0130" },
            new[] { "5", "--epoch", "2015-01-01T00:00+01" },
            new[] { "5", "--epoch", "2015-01-01T00:00-01:30" },
            new[] { "5", "--epoch", "2015-01-01T00:00+24:00" },
            new[] { "5", "--epoch", "2015-01-01T24:00" },
            new[] { "5", "--epoch", "2015-01-01T00" },
            new[] { "5", "--epoch", "2015-01-01Z" },
            new[] { "5", "--epoch", "2015-1-01" },
            new[] { "5", "--epoch", "2015-02-29" },
            new[] { "5", "--epoch", "2016-02-29" },
            new[] { "5", "--epoch", "1969-12-31" },
            new[] { "5", "--epoch", "9999-12-31T23:59:59.999Z" },
            new[] { "1", "--layout", "sonyflake", "--epoch", "2015-01-01" },
            // ticks
            new[] { "5", "--tick-ms", "007" },
            new[] { "5", "--tick-ms", "" },
            new[] { "5", "--tick-ms", "-1" },
            new[] { "5", "--tick-ms=1" },
            new[] { "5", "--tick-ms", "86400000" },
            new[] { "5", "--tick-ms", "86400001" },
            new[] { "5", "--tick-ms", "18446744073709551616" },
            new[] { "5", "--layout", "Sonyflake", "--tick-ms", "1" },
            // layouts
            new[] { "5", "--layout", "BAIDU" },
            new[] { "5", "--layout", " time:41,sequence:12 " },
            new[] { "5", "--layout", "time : 41 , seq : 12" },
            new[] { "5", "--layout", "TIME:41,SEQUENCE:12" },
            new[] { "5", "--layout", "time:41,seq:0012" },
            new[] { "5", "--layout", "time:41,seq:1 2" },
            new[] { "5", "--layout", "time:41,seq:" },
            new[] { "5", "--layout", ":41,seq:1" },
            new[] { "5", "--layout", "time:41:1,seq:1" },
            new[] { "5", "--layout", "time:41,sequence:12," },
            new[] { "5", "--layout", "," },
            new[] { "5", "--layout", ":" },
            new[] { "1", "--layout", "time:41,9w:5,sequence:12" },
            new[] { "1", "--layout", "time:41,w-x:5,sequence:12" },
            new[] { "1", "--layout", "time:41,increment:3,sequence:12" },
            new[] { "5", "--layout", "time:41,id:5,field_id:5,sequence:12" },
            new[] { "7", "--layout", "time:41,field_id:5,id:5,sequence:12" },
            new[] { "18446744073709551615", "--layout", "time:1,sequence:63" },
            new[] { "18446744073709551615", "--layout", "time:63,sequence:1", "--epoch", "1" },
            new[] { "18446744073709551615", "--layout", "time:62,sequence:2", "--epoch", "0", "--tick-ms", "2" },
            new[] { "18446744073709551615", "--layout", "time:52,seq:12", "--epoch", "0" },
            new[] { "18446744073709551615", "--layout", "time:52,seq:12", "--epoch", "0", "--tick-ms", "1000" },
            new[] { "18446744073709551615", "--layout", "instagram" },
            new[] { "72057594037927936", "--layout", "sonyflake" },
            new[] { "3", "--layout", "time:1,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,o:1,sequence:1" },
        };

        [Test]
        public void TheParseToolPrintsWhatIdforgeParsePrints()
        {
            var cases = new List<string[]>();
            foreach (Vector v in LoadVectors())
            {
                cases.Add(CliArgs(v.Id, v.Layout, v.Epoch, v.Tick));
                cases.Add(CliArgs(v.Id, v.Layout, null, v.Tick)); // the layout's own epoch
            }
            cases.AddRange(ToolCases);
            cases.AddRange(Good.Select(g => CliArgs(g.Id, g.Layout, g.Epoch, g.Tick)));
            cases.AddRange(Bad.Select(b => CliArgs(b.Id, b.Layout, b.Epoch, b.Tick)));
            // One process for all (--stdin), but for arguments with a space, the separator there.
            var stdinCases = cases.Where(c => !c.Any(a => a.Contains(" "))).ToList();
            IdforgeParseAll(cases);
            var tool = Env.Run(Env.ParseCommand, new[] { "--stdin" },
                               string.Join("\n", stdinCases.Select(c => string.Join(" ", c))) + "\n");
            Assert.AreEqual(0, tool.Item1, tool.Item3);
            string[] lines = tool.Item2.Split('\n');
            Assert.AreEqual(stdinCases.Count + 1, lines.Length, "one line per case");
            int refused = 0;
            for (int i = 0; i < stdinCases.Count; i++)
            {
                string what = "parse " + string.Join(" ", stdinCases[i].Select(a => "'" + a + "'"));
                Tuple<int, string> cli = IdforgeParse(stdinCases[i]);
                if (cli.Item1 != 0)
                {
                    refused++;
                    StringAssert.StartsWith("error: ", lines[i], what + ": the CLI refuses it");
                }
                else Assert.AreEqual(cli.Item2, lines[i], what);
            }
            Assert.That(refused, Is.GreaterThan(30));
            // And one process per case, arguments as given (spaces too): exit status and line.
            var single = new List<string[]>
            {
                new[] { "910499571847892992" },
                new[] { "175928847299117063", "--layout", "discord" },
                new[] { "5", "--layout", " time:41,sequence:12 " },
                new[] { "5", "--layout", " twitter" },
                new[] { "5", "--epoch", "2015-01-01 00:00:00+02:00" },
                new[] { "1", "--layout", "nosuchlayout" },
                new[] { "x1" },
            };
            single.AddRange(cases.Where(c => c.Any(a => a.Contains(" "))));
            foreach (string[] args in single)
            {
                string what = "parse " + string.Join(" ", args.Select(a => "'" + a + "'"));
                Tuple<int, string> cli = IdforgeParse(args);
                var own = Env.Run(Env.ParseCommand, args);
                if (cli.Item1 != 0)
                {
                    Assert.AreNotEqual(0, own.Item1, what);
                    Assert.AreEqual("", own.Item2, what);
                    StringAssert.StartsWith("idforge-parse: ", own.Item3, what);
                }
                else
                {
                    Assert.AreEqual(0, own.Item1, what + ": " + own.Item3);
                    Assert.AreEqual(cli.Item2 + "\n", own.Item2, what);
                }
            }
        }

        sealed class Case
        {
            public string Id;
            public string Layout;
            public long? Epoch;
            public long? Tick;

            public Case(string id, string layout, long? epoch = null, long? tick = null)
            {
                Id = id;
                Layout = layout;
                Epoch = epoch;
                Tick = tick;
            }

            public override string ToString() => Id + " " + Layout + " " + Epoch + " " + Tick;
        }

        static readonly Case[] Good =
        {
            new Case("0", "twitter"),
            new Case("9223372036854775807", "twitter"),
            new Case("18446744073709551615", "discord"),
            new Case("18446744073709551615", "instagram"),
            new Case("72057594037927935", "sonyflake"),
            new Case("5", "Twitter"),
            new Case("5", "twitter", 0, 2),
            new Case("123456789012345", "baidu", 1735689600000),
            new Case("12", "time:41,seq:12,worker:5"),
            new Case("5", "time:41,id:5,sequence:12"), // a reserved name
            new Case("77", "time:30,layout:3,unix_ms:3,sequence:12", 0, 1000),
            new Case("9223372036854775807", "time:51,seq:12"), // past year 9999
            new Case("9223372036854775807", "time:51,seq:12", 0),
            new Case("4095", "sequence:12,time:20", null, 86400000),
            new Case("1", "time:1,sequence:1"),
            new Case("3", "time:1,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,sequence:1"),
        };

        static readonly Case[] Bad =
        {
            new Case("18446744073709551615", "twitter"), // 64 bits in a 63-bit layout
            new Case("18446744073709551616", "twitter"),
            new Case("abc", "twitter"),
            new Case("-1", "twitter"),
            new Case("1", "nope"),
            new Case("1", "time:41,worker:10"), // no sequence
            new Case("1", "worker:10,sequence:12"), // no time
            new Case("1", "time:41,time:5,sequence:12"),
            new Case("1", "time:41,seq:5,sequence:12"),
            new Case("1", "time:41,Worker:5,sequence:12"),
            new Case("1", "time:41,worker:0,sequence:12"),
            new Case("1", "time:64,sequence:1"),
            new Case("1", "time:41,worker:12,sequence:12"), // 65 bits
            new Case("1", "time:41,,sequence:12"),
            new Case("1", "time:41,worker,sequence:12"),
            new Case("1", "time:41,worker:x,sequence:12"),
            new Case("1", "time:63,sequence:1", null, 1000), // runs past int64 ms
            new Case("1", "twitter", null, 0),
            new Case("1", "twitter", null, 86400001),
        };

        [Test]
        public void SameAnswerAsIdforgeParse()
        {
            IdforgeParseAll(Good.Select(c => CliArgs(c.Id, c.Layout, c.Epoch, c.Tick)));
            foreach (Case c in Good)
            {
                Tuple<int, string> cli = IdforgeParse(CliArgs(c.Id, c.Layout, c.Epoch, c.Tick));
                Assert.AreEqual(0, cli.Item1, c.ToString());
                Assert.AreEqual(cli.Item2, Client.Parse(c.Id, c.Layout, c.Epoch, c.Tick).ToJson(), c.ToString());
            }
        }

        [Test]
        public void BothRefuseTheSameInputs()
        {
            // A CLI that fails on everything (a wrong IDFORGE_BIN) would "refuse" each case:
            // it must first decode a good one.
            Case good = Good[0];
            Assert.AreEqual(0, IdforgeParse(CliArgs(good.Id, good.Layout, good.Epoch, good.Tick)).Item1,
                            "idforge parse must work for its refusals to mean anything");
            IdforgeParseAll(Bad.Select(c => CliArgs(c.Id, c.Layout, c.Epoch, c.Tick)));
            foreach (Case c in Bad)
            {
                Tuple<int, string> cli = IdforgeParse(CliArgs(c.Id, c.Layout, c.Epoch, c.Tick));
                Assert.AreNotEqual(0, cli.Item1, c + ": " + cli.Item2);
                Assert.Catch<ArgumentException>(() => Client.Parse(c.Id, c.Layout, c.Epoch, c.Tick), c.ToString());
            }
        }

        [Test]
        public void CSharpTypes()
        {
            ParsedId p = Client.Parse(910499571847892992UL);
            Assert.AreEqual(25UL, p["worker"]);
            Assert.AreEqual(17UL, p["datacenter"]);
            Assert.AreEqual("2017-09-20T13:43:08.849Z", p.Time);
            Assert.AreEqual(1505914988849L, p.UnixMs);
            Assert.AreEqual("twitter", p.Layout);
            Assert.Throws<KeyNotFoundException>(() => { ulong unused = p["shard"]; });
            ulong value;
            Assert.IsFalse(p.TryGetField("shard", out value));
            Assert.AreEqual(p.ToJson(), p.ToString());
            // The whole 64-bit range, as ulong and as text.
            Assert.AreEqual("18446744073709551615", Client.Parse(ulong.MaxValue, "discord").ToJson().Split('"')[3]);
            Assert.AreEqual(Client.Parse(ulong.MaxValue, "discord").ToJson(), Client.Parse("18446744073709551615", "discord").ToJson());
            Assert.AreEqual(4095UL, Client.Parse(ulong.MaxValue, "discord")["increment"]);
            Assert.Catch<ArgumentException>(() => Client.Parse("18446744073709551616"));
            Assert.Catch<ArgumentException>(() => Client.Parse("-1"));
            Assert.Catch<ArgumentException>(() => Client.Parse("1.5"));
            Assert.Catch<ArgumentException>(() => Client.Parse(""));
            Assert.Catch<ArgumentException>(() => Client.Parse(1UL, "twitter", -1));
            Assert.Catch<ArgumentException>(() => Client.Parse(1UL, "twitter", null, 0));
            Assert.Catch<ArgumentException>(() => Client.Parse(1UL, null));
            Assert.Catch<ArgumentException>(() => Client.Parse((string)null));
            // A layout name is any case; the result names the preset.
            Assert.AreEqual("discord", Client.Parse(5UL, "DISCORD").Layout);
            Assert.AreEqual("custom", Client.Parse(5UL, "time:41,sequence:12").Layout);
            CollectionAssert.AreEqual(new[] { "twitter", "discord", "instagram", "sonyflake", "baidu" }, Client.LayoutPresets);
            // Epochs as the CLI reads them.
            Assert.AreEqual(1288834974657L, Client.ParseTime("2010-11-04T01:42:54.657Z"));
            Assert.AreEqual(1288834974657L, Client.ParseTime("1288834974657"));
            Assert.AreEqual(1420066800000L, Client.ParseTime("2015-01-01 00:00:00+01:00"));
            Assert.AreEqual(-62167219200000L, Client.ParseTime("0000-01-01"));
            Assert.Catch<ArgumentException>(() => Client.ParseTime("2015-02-29"));
            Assert.Catch<ArgumentException>(() => Client.ParseTime("yesterday"));
        }
    }
}
