package dev.idforge.client;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;

/**
 * Decodes Snowflake IDs from the command line, without a server, as
 * {@code idforge parse --json} does:
 *
 * <pre>
 * java -cp idforge-client.jar dev.idforge.client.ParseTool ID [--layout L] [--epoch MS] [--tick-ms MS]
 * java -cp idforge-client.jar dev.idforge.client.ParseTool --stdin
 * </pre>
 *
 * The first prints the CLI's JSON line and exits 0, or an error on stderr and exits 2.
 * With {@code --stdin} each input line holds the same arguments separated by single
 * spaces, and each gets one output line: the JSON line or {@code error: MESSAGE}.
 */
public final class ParseTool {
  private ParseTool() {}

  static final String USAGE =
      "usage: parse ID [--layout L] [--epoch MS|ISO] [--tick-ms MS]\n"
          + "       parse --stdin   (one set of arguments per line, separated by single spaces)\n"
          + "L is a preset (twitter, discord, instagram, sonyflake, baidu) or a custom spec\n"
          + "like time:41,datacenter:5,worker:5,sequence:12";

  public static void main(String[] args) {
    if (args.length == 1 && args[0].equals("--stdin")) {
      try {
        Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        runLines(new InputStreamReader(System.in, StandardCharsets.UTF_8), out);
        out.flush();
      } catch (IOException e) {
        System.err.println("parse: " + e.getMessage());
        System.exit(1);
      }
      return;
    }
    if (args.length == 1 && (args[0].equals("--help") || args[0].equals("-h"))) {
      System.out.println(USAGE);
      return;
    }
    PrintStream out = System.out;
    try {
      out.println(run(args));
      out.flush();
    } catch (IllegalArgumentException e) {
      System.err.println("parse: " + e.getMessage());
      System.exit(2);
    }
  }

  /** Every line of {@code in}: the JSON line or "error: MESSAGE", one line each. */
  static void runLines(Reader in, Writer out) throws IOException {
    BufferedReader lines = new BufferedReader(in, 1 << 16);
    for (String line; (line = lines.readLine()) != null; ) {
      String answer;
      try {
        answer = run(line.split(" ", -1));
      } catch (IllegalArgumentException e) {
        answer = "error: " + e.getMessage().replace('\n', ' ');
      }
      out.write(answer);
      out.write('\n');
    }
  }

  /** The JSON line for one command line; IllegalArgumentException where the CLI refuses. */
  static String run(String... args) {
    String id = null;
    String layout = null;
    String epoch = null;
    String tick = null;
    boolean positionalOnly = false;
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (!positionalOnly && arg.startsWith("-") && arg.length() > 1 && !IsoTime.allDigits(arg.substring(1))) {
        if (arg.equals("--")) {
          positionalOnly = true;
          continue;
        }
        if (arg.equals("--json")) continue; // what the CLI needs for this output
        String name = arg;
        String value = null;
        int eq = arg.indexOf('=');
        if (arg.startsWith("--") && eq > 0) {
          name = arg.substring(0, eq);
          value = arg.substring(eq + 1);
        }
        if (!name.equals("--layout") && !name.equals("-l") && !name.equals("--epoch")
            && !name.equals("--tick-ms")) {
          throw new IllegalArgumentException("unknown option " + name + "\n" + USAGE);
        }
        if (value == null) {
          if (i + 1 >= args.length) throw new IllegalArgumentException(name + " needs a value");
          value = args[++i];
        }
        switch (name) {
          case "--layout":
          case "-l":
            if (layout != null) throw new IllegalArgumentException("--layout is given twice");
            layout = value;
            break;
          case "--epoch":
            if (epoch != null) throw new IllegalArgumentException("--epoch is given twice");
            epoch = value;
            break;
          default:
            if (tick != null) throw new IllegalArgumentException("--tick-ms is given twice");
            tick = value;
        }
      } else {
        if (id != null) throw new IllegalArgumentException("one ID only; '" + arg + "' is one too many");
        id = arg;
      }
    }
    if (id == null) throw new IllegalArgumentException("no ID given\n" + USAGE);
    long value = ParsedId.parseUnsigned(id, "ID");
    return Layout.fromFlags(layout, epoch, tick).decode(value).toJson();
  }
}
