// idforge-parse: the JSON line of `idforge parse --json`, decoded without a server.
//   idforge-parse ID [--layout L] [--epoch MS|ISO] [--tick-ms MS]
//   idforge-parse --stdin   (each input line: the same arguments separated by single spaces;
//                            each output line: the JSON line or "error: MESSAGE")
using System;
using System.IO;
using System.Text;
using Idforge.Client;

namespace IdforgeParse
{
    static class ParseTool
    {
        const string Usage = "usage: idforge-parse ID [--layout NAME|SPEC] [--epoch MS|ISO] [--tick-ms MS]\n" +
                             "       idforge-parse --stdin   (one set of arguments a line, separated by single spaces)";

        sealed class UsageError : Exception
        {
            public UsageError(string message) : base(message) { }
        }

        static int Main(string[] args)
        {
            if (args.Length == 1 && args[0] == "--stdin") return Batch();
            if (args.Length == 1 && (args[0] == "-h" || args[0] == "--help"))
            {
                Console.WriteLine(Usage);
                return 0;
            }
            try
            {
                Console.Out.Write(Decode(args) + "\n");
                Console.Out.Flush();
                return 0;
            }
            catch (UsageError e)
            {
                Console.Error.WriteLine("idforge-parse: " + e.Message + "\n" + Usage);
                return 2;
            }
            catch (ArgumentException e)
            {
                Console.Error.WriteLine("idforge-parse: " + e.Message);
                return 2;
            }
        }

        static int Batch()
        {
            var input = new StreamReader(Console.OpenStandardInput(), new UTF8Encoding(false));
            var output = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false), 65536);
            string line;
            while ((line = input.ReadLine()) != null)
            {
                string result;
                try
                {
                    result = Decode(line.Length == 0 ? new string[0] : line.Split(' '));
                }
                catch (ArgumentException e)
                {
                    result = "error: " + OneLine(e.Message);
                }
                catch (UsageError e)
                {
                    result = "error: " + OneLine(e.Message);
                }
                output.Write(result);
                output.Write('\n');
            }
            output.Flush();
            return 0;
        }

        static string OneLine(string text) => text.Replace('\n', ' ').Replace('\r', ' ');

        /// <summary>The arguments of `idforge parse` (less --json, always on): the JSON line.</summary>
        static string Decode(string[] args)
        {
            string id = null, layout = null, epoch = null, tick = null;
            bool positionalOnly = false;
            for (int i = 0; i < args.Length; i++)
            {
                string arg = args[i];
                if (!positionalOnly && arg == "--")
                {
                    positionalOnly = true;
                    continue;
                }
                if (!positionalOnly && arg.Length > 1 && arg[0] == '-' && !IsNumberLike(arg))
                {
                    string flag = arg, inline = null;
                    int eq = arg.IndexOf('=');
                    if (arg.StartsWith("--", StringComparison.Ordinal) && eq > 0)
                    {
                        flag = arg.Substring(0, eq);
                        inline = arg.Substring(eq + 1);
                        if (inline.Length == 0) throw new UsageError(flag + " needs a value");
                    }
                    else if (arg.StartsWith("-l", StringComparison.Ordinal) && arg.Length > 2)
                    {
                        flag = "-l";
                        inline = arg.Substring(2);
                    }
                    if (flag == "--json")
                    {
                        if (inline != null) throw new UsageError("--json takes no value");
                        continue;
                    }
                    if (flag != "-l" && flag != "--layout" && flag != "--epoch" && flag != "--tick-ms")
                        throw new UsageError("unexpected argument " + arg);
                    string value = inline;
                    if (value == null)
                    {
                        if (i + 1 >= args.Length) throw new UsageError(flag + " needs a value");
                        value = args[++i];
                    }
                    if (flag == "-l" || flag == "--layout")
                    {
                        if (layout != null) throw new UsageError("--layout is given twice");
                        layout = value;
                    }
                    else if (flag == "--epoch")
                    {
                        if (epoch != null) throw new UsageError("--epoch is given twice");
                        epoch = value;
                    }
                    else
                    {
                        if (tick != null) throw new UsageError("--tick-ms is given twice");
                        tick = value;
                    }
                    continue;
                }
                if (id != null) throw new UsageError("unexpected argument " + arg);
                id = arg;
            }
            if (id == null) throw new UsageError("an ID is required");

            // The CLI's order: the ID, the epoch, the tick, then the layout.
            ulong idValue = ParseU64(id, "ID");
            long? epochMs = null, tickMs = null;
            if (epoch != null)
            {
                long ms;
                try
                {
                    ms = Client.ParseTime(epoch);
                }
                catch (ArgumentException e)
                {
                    throw new ArgumentException("--epoch: " + e.Message);
                }
                if (ms < 0) throw new ArgumentException("--epoch must not be before 1970-01-01");
                epochMs = ms;
            }
            if (tick != null)
            {
                ulong ms = ParseU64(tick, "--tick-ms");
                if (ms == 0 || ms > 86400000) throw new ArgumentException("--tick-ms must be from 1 to 86400000, got " + ms);
                tickMs = (long)ms;
            }
            return Client.Parse(idValue, layout ?? "twitter", epochMs, tickMs).ToJson();
        }

        // A number as the CLI reads one: digits only, up to 18446744073709551615.
        static ulong ParseU64(string text, string what)
        {
            if (text.Length == 0) throw new ArgumentException(what + " is empty");
            ulong value = 0;
            bool tooLarge = false;
            foreach (char c in text)
            {
                if (c < '0' || c > '9') throw new ArgumentException(what + " must be a non-negative whole number, got '" + text + "'");
                ulong digit = (ulong)(c - '0');
                if (value > (ulong.MaxValue - digit) / 10) tooLarge = true;
                else value = value * 10 + digit;
            }
            if (tooLarge) throw new ArgumentException(what + " '" + text + "' is too large (the largest is " + ulong.MaxValue + ")");
            return value;
        }

        // A value that starts with '-' is the ID (refused later) when it looks like a number.
        static bool IsNumberLike(string arg)
        {
            for (int i = 1; i < arg.Length; i++)
                if (arg[i] < '0' || arg[i] > '9') return false;
            return true;
        }
    }
}
