package dev.idforge.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Decoding without a server: every vector of tests/data/snowflake_vectors.txt, and the
 * same line as {@code idforge parse --json} for the cases of the Python client's
 * test_parse.py, tests/clients/cross_language.sh and more; the same refusals.
 */
class ParseTest {
  static final Map<String, List<String>> PRESET_FIELDS = Map.of(
      "twitter", List.of("datacenter", "worker", "sequence"),
      "discord", List.of("worker", "process", "increment"),
      "instagram", List.of("shard", "sequence"),
      "sonyflake", List.of("sequence", "machine"),
      "baidu", List.of("worker", "sequence"));

  /** One line of the vectors: layout, epoch, tick (or null), id, unix_ms, field values. */
  record Vector(String layout, long epoch, Long tick, String id, long unixMs, List<Long> fields) {}

  static List<Vector> vectors() throws IOException {
    List<Vector> out = new ArrayList<>();
    for (String line : Files.readAllLines(TestServers.VECTORS)) {
      int hash = line.indexOf('#');
      String[] w = (hash >= 0 ? line.substring(0, hash) : line).trim().split("\\s+");
      if (w.length < 4 || w[0].isEmpty()) continue;
      String layout = w[0];
      Long tick = null;
      int at = layout.indexOf('@');
      if (at >= 0) {
        tick = Long.parseLong(layout.substring(at + 1));
        layout = layout.substring(0, at);
      }
      List<Long> fields = new ArrayList<>();
      for (int i = 4; i < w.length; i++) fields.add(Long.parseLong(w[i]));
      out.add(new Vector(layout, Long.parseLong(w[1]), tick, w[2], Long.parseLong(w[3]), fields));
    }
    return out;
  }

  /** The CLI's exit code and stdout line. */
  record Answer(int rc, String out) {}

  static Answer idforgeParse(List<String> args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(TestServers.IDFORGE_BIN, "parse", "--json"));
    cmd.addAll(args);
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    assertTrue(p.waitFor(10, TimeUnit.SECONDS));
    return new Answer(p.exitValue(), out);
  }

  static List<String> cliArgs(String id, String layout, Long epoch, Long tick) {
    List<String> args = new ArrayList<>(List.of(id, "--layout", layout));
    if (epoch != null) args.addAll(List.of("--epoch", epoch.toString()));
    if (tick != null) args.addAll(List.of("--tick-ms", tick.toString()));
    return args;
  }

  /** The tool's answer in-process: the JSON line, or null where it refuses. */
  static String tool(List<String> args) {
    try {
      return ParseTool.run(args.toArray(new String[0]));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  @Test
  void everyVectorDecodesToItsFieldsAndAsIdforgeParse() throws Exception {
    List<Vector> vectors = vectors();
    assertTrue(vectors.size() >= 10, "vectors read: " + vectors.size());
    for (Vector v : vectors) {
      String where = v.layout() + " " + v.id();
      ParsedId got = Client.parse(Long.parseUnsignedLong(v.id()), v.layout(), v.epoch(), v.tick());
      assertEquals(got, Client.parse(v.id(), v.layout(), v.epoch(), v.tick()), where); // text or long
      assertEquals(v.id(), got.idText(), where);
      assertEquals(v.unixMs(), got.unixMs(), where);
      List<String> names = PRESET_FIELDS.get(v.layout());
      if (names == null) {
        names = new ArrayList<>();
        for (Layout.Field f : Layout.of(v.layout()).fields()) {
          if (f.role() != Layout.Role.TIME) names.add(f.name());
        }
      }
      List<Long> values = new ArrayList<>();
      for (String n : names) values.add(got.get(n));
      assertEquals(v.fields(), values, where);
      assertEquals(names, new ArrayList<>(got.fields().keySet()), where);
      Answer cli = idforgeParse(cliArgs(v.id(), v.layout(), v.epoch(), v.tick()));
      assertEquals(0, cli.rc(), where);
      assertEquals(cli.out(), got.toJson(), where); // same keys, order, values and types
    }
  }

  /** Accepted by the CLI: the same line. From test_parse.py's GOOD and beyond. */
  static final String[][] GOOD = {
      {"0"}, {"9223372036854775807"}, {"18446744073709551615", "--layout", "discord"},
      {"18446744073709551615", "--layout", "instagram"}, {"72057594037927935", "--layout", "sonyflake"},
      {"5", "--layout", "Twitter"}, {"5", "--layout", "twitter", "--epoch", "0", "--tick-ms", "2"},
      {"123456789012345", "--layout", "baidu", "--epoch", "1735689600000"},
      {"12", "--layout", "time:41,seq:12,worker:5"},
      {"5", "--layout", "time:41, id:5 ,sequence:12"},
      {"77", "--layout", "time:30,layout:3,unix_ms:3,sequence:12", "--epoch", "0", "--tick-ms", "1000"},
      {"9223372036854775807", "--layout", "time:51,seq:12"},
      {"9223372036854775807", "--layout", "time:51,seq:12", "--epoch", "0"},
      {"4095", "--layout", "sequence:12,time:20", "--tick-ms", "86400000"},
      {"1", "--layout", "time:1,sequence:1"},
      {"3", "--layout", "time:1,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,sequence:1"},
      // cross_language.sh's edge cases
      {"18446744073709551615", "--layout", "discord"}, {"9223372036854775807", "--layout", "TWITTER"},
      {"175928847299117063", "--layout", "Discord", "--epoch", "0"},
      {"910499571847892992", "--layout", "time:41,id:10,sequence:12", "--epoch", "1"},
      {"9223372036854775807", "--layout", "time:63,sequence:1", "--epoch", "0"},
      {"123456789012345", "--layout", "time:30,worker:20,seq:13", "--tick-ms", "86400000"},
      {"2968681395003392", "--layout", "baidu", "--tick-ms", "1"},
      // more: a key seen twice, spaces in a spec, option forms and order, leading zeros
      {"910499571847892992", "--layout", "time:41,id:5,field_id:5,sequence:12"},
      {"910499571847892992", "--layout", "time : 41 , worker : 10 , sequence : 12"},
      {"910499571847892992", "--layout", "\ttime:41,worker:10,sequence:12 "},
      {"910499571847892992", "--layout", "time:041,worker:010,sequence:012"},
      {"910499571847892992", "--layout", ""}, {"910499571847892992", "-l", "discord"},
      {"--layout", "discord", "910499571847892992"}, {"910499571847892992", "--layout=instagram"},
      {"910499571847892992", "--epoch=0"}, {"910499571847892992", "--tick-ms=10"},
      {"0000910499571847892992"}, {"5", "--tick-ms", "007"}, {"5", "--json"},
      {"1", "--layout", "sequence:1,time:63", "--epoch", "0"},
      {"18446744073709551615", "--layout", "time:32,worker:16,seq:16", "--tick-ms", "1000", "--epoch", "0"},
      // epochs as ISO-8601 and odd decimal forms, as the CLI reads them
      {"5", "--epoch", "-0"}, {"5", "--epoch", "2024-01-01"}, {"5", "--epoch", "2024-02-29T12:00:00Z"},
      {"5", "--epoch", "2024-01-01T10:00:00.123456Z"}, {"5", "--epoch", "2024-01-01 10:00"},
      {"5", "--epoch", "2024-01-01t10:00:00,5+0530"}, {"5", "--epoch", "2024-01-01T10:00:00-08"},
      {"5", "--epoch", "2024-01-01T10:00z"}, {"5", "--epoch", "1970-01-01T00:00:00-00:01"},
      {"5", "--epoch", "9999-12-31T23:59:59.999Z"}, {"5", "--epoch", "0000000"},
      {"5", "--layout", "sonyflake", "--epoch", "2014-09-01T00:00:00Z"},
      {"4611686018427387904", "--layout", "time:62,seq:1", "--epoch", "9999-12-31"},
  };

  /** Refused by the CLI: refused here too. */
  static final String[][] BAD = {
      {"18446744073709551615"}, {"18446744073709551616"}, {"abc"}, {"-1"}, {"1", "--layout", "nope"},
      {"1", "--layout", "time:41,worker:10"}, {"1", "--layout", "worker:10,sequence:12"},
      {"1", "--layout", "time:41,time:5,sequence:12"}, {"1", "--layout", "time:41,seq:5,sequence:12"},
      {"1", "--layout", "time:41,Worker:5,sequence:12"}, {"1", "--layout", "time:41,worker:0,sequence:12"},
      {"1", "--layout", "time:64,sequence:1"}, {"1", "--layout", "time:41,worker:12,sequence:12"},
      {"1", "--layout", "time:41,,sequence:12"}, {"1", "--layout", "time:41,worker,sequence:12"},
      {"1", "--layout", "time:41,worker:x,sequence:12"}, {"1", "--layout", "time:63,sequence:1", "--tick-ms", "1000"},
      {"1", "--tick-ms", "0"}, {"1", "--tick-ms", "86400001"},
      // cross_language.sh's refusals
      {"9223372036854775808", "--layout", "twitter"}, {"1", "--layout", "nosuchlayout"},
      {"1", "--layout", "time:41,worker:5"}, {"x1"},
      // more
      {"1", "--layout", " twitter"}, {"1", "--layout", "twitter "}, {"1", "--layout", " "},
      {"1", "--layout", "time:41,sequence:12,"}, {"1", "--layout", ",time:41,sequence:12"},
      {"1", "--layout", "time:41,sequence:0012"}, {"1", "--layout", "time:41,sequence:12:3"},
      {"1", "--layout", "time:41,sequence:-1"}, {"1", "--layout", "time:41,:5,sequence:12"},
      {"1", "--layout", "time:41,1worker:5,sequence:12"}, {"1", "--layout", "time:41,wörker:5,sequence:12"},
      {"1", "--layout", "time:41,sequence:12,increment:3"},
      {"1", "--layout", "time:1,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,o:1,sequence:1"},
      {"1", "--layout", "time:63,sequence:1", "--epoch", "1"}, {"1", "--layout", "time:63,sequence:1"},
      {"1", "--layout", "time:62,sequence:1", "--tick-ms", "2", "--epoch", "2"},
      {"1", "--epoch", "9223372036854775807"}, {"1", "--epoch", "9223372036854775808"},
      {"1", "--epoch", "-1"}, {"1", "--epoch", ""}, {"1", "--epoch", "x"}, {"1", "--epoch", "1e3"},
      {"1", "--epoch", "0000-01-01"}, {"1", "--epoch", "1969-12-31T23:59:59.999Z"},
      {"1", "--epoch", "2023-02-29"}, {"1", "--epoch", "2024-13-01"}, {"1", "--epoch", "2024-01-00"},
      {"1", "--epoch", "2024-01-01T24:00:00Z"}, {"1", "--epoch", "2024-01-01T23:59:60Z"},
      {"1", "--epoch", "2024-01-01T10"}, {"1", "--epoch", "2024-01-01T10:00:00."},
      {"1", "--epoch", "2024-01-01T10:00:00+24:00"}, {"1", "--epoch", "2024-01-01T10:00:00+01:"},
      {"1", "--epoch", "2024-01-01T10:00:00ZZ"}, {"1", "--epoch", " 2024-01-01"}, {"1", "--epoch", "2024-1-01"},
      {"1", "--tick-ms", ""}, {"1", "--tick-ms", "1e3"}, {"1", "--tick-ms", "-1"},
      {"1", "--tick-ms", "99999999999999999999"},
      {""}, {"+5"}, {" 5"}, {"5", "6"}, {"1e3"}, {"0x10"}, {"１"}, {"5", "--layout"}, {"5", "--nope"},
      {"5", "--layout", "twitter", "--layout", "discord"}, {"5", "--epoch", "0", "--epoch", "1"},
  };

  @Test
  void theParseToolPrintsWhatIdforgeParsePrints() throws Exception {
    List<List<String>> cases = new ArrayList<>();
    for (Vector v : vectors()) {
      // with its epoch, and with the layout's own, as cross_language.sh
      cases.add(cliArgs(v.id(), v.layout(), v.epoch(), v.tick()));
      cases.add(cliArgs(v.id(), v.layout(), null, v.tick()));
    }
    for (String[] c : GOOD) cases.add(Arrays.asList(c));
    int good = cases.size();
    for (String[] c : BAD) cases.add(Arrays.asList(c));
    StringBuilder lines = new StringBuilder();
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < cases.size(); i++) {
      List<String> args = cases.get(i);
      Answer cli = idforgeParse(args);
      if (i < good) {
        assertEquals(0, cli.rc(), "the CLI refuses " + args);
      } else {
        assertNotEquals(0, cli.rc(), "the CLI accepts " + args + ": " + cli.out());
      }
      String mine = tool(args);
      if (cli.rc() == 0) {
        assertEquals(cli.out(), mine, "parse " + args);
      } else {
        assertEquals(null, mine, "the CLI refuses " + args + ", the tool printed " + mine);
      }
      // The --stdin form: the arguments separated by single spaces, when none has one.
      if (args.stream().noneMatch(a -> a.contains(" ") || a.contains("\t") || a.isEmpty())) {
        lines.append(String.join(" ", args)).append('\n');
        expected.add(cli.rc() == 0 ? cli.out() : null);
      }
    }
    StringWriter out = new StringWriter();
    ParseTool.runLines(new StringReader(lines.toString()), out);
    String[] got = out.toString().split("\n", -1);
    assertEquals(expected.size() + 1, got.length); // one line each, and the last newline
    for (int i = 0; i < expected.size(); i++) {
      if (expected.get(i) == null) {
        assertTrue(got[i].startsWith("error: "), "line " + (i + 1) + ": " + got[i]);
      } else {
        assertEquals(expected.get(i), got[i], "line " + (i + 1));
      }
    }

    // The built tool itself (check.sh names it): both forms, as the cross-language test
    // calls it.
    String built = System.getProperty("idforge.parse");
    if (built != null) {
      Process p = new ProcessBuilder(built, "--stdin").redirectError(ProcessBuilder.Redirect.INHERIT).start();
      p.getOutputStream().write(lines.toString().getBytes(StandardCharsets.UTF_8));
      p.getOutputStream().close();
      String printed = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(30, TimeUnit.SECONDS));
      assertEquals(0, p.exitValue());
      assertEquals(out.toString(), printed);
      for (String[] args : new String[][] {{"910499571847892992"}, {"x1"}}) {
        List<String> cmd = new ArrayList<>(List.of(built));
        cmd.addAll(Arrays.asList(args));
        Process one = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String line = new String(one.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(one.waitFor(30, TimeUnit.SECONDS));
        Answer cli = idforgeParse(Arrays.asList(args));
        assertEquals(cli.rc() == 0, one.exitValue() == 0, "exit status of parse " + Arrays.toString(args));
        assertEquals(cli.out(), line);
      }
      assertTrue(Files.isExecutable(Paths.get(built)));
    }
  }

  @Test
  void idsAreUnsignedLongsAndBadInputIsAnIllegalArgument() {
    // 2^64 - 1 is the long -1: a Discord ID uses all 64 bits.
    ParsedId max = Client.parse(-1L, "discord");
    assertEquals("18446744073709551615", max.idText());
    assertEquals(-1L, max.id());
    assertEquals(max, Client.parse("18446744073709551615", "discord"));
    assertEquals(4095, max.get("increment"));
    assertThrows(IllegalArgumentException.class, () -> Client.parse(-1L)); // 64 bits, twitter has 63
    assertThrows(IllegalArgumentException.class, () -> Client.parse("18446744073709551616"));
    assertThrows(IllegalArgumentException.class, () -> Client.parse("-1"));
    assertThrows(IllegalArgumentException.class, () -> Client.parse(1L, "twitter", -1L, null));
    assertThrows(IllegalArgumentException.class, () -> Client.parse(1L, "twitter", null, 0L));
    assertThrows(IllegalArgumentException.class, () -> Client.parse(1L, "twitter", null, 86_400_001L));
    assertThrows(IllegalArgumentException.class, () -> Client.parse(1L, null));
    assertThrows(IllegalArgumentException.class, () -> Client.parse((String) null));
    ParsedId p = Client.parse(910499571847892992L);
    assertEquals(25, p.get("worker"));
    assertEquals(17, p.get("datacenter"));
    assertEquals("2017-09-20T13:43:08.849Z", p.time());
    assertThrows(IllegalArgumentException.class, () -> p.get("shard"));
    assertFalse(p.fields().containsKey("time"));
    assertEquals(Layout.PRESETS, List.of("twitter", "discord", "instagram", "sonyflake", "baidu"));
    assertEquals(64, Layout.of("DISCORD").totalBits());
  }
}
