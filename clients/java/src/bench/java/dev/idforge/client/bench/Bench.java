package dev.idforge.client.bench;

import dev.idforge.client.Client;
import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * IDs per second from the Java client (not a test; prints a table):
 *
 * <pre>
 * BUILD_DIR/bench [--url redis://HOST:PORT | http://HOST:PORT] [--n 20000000] [--m 20000]
 * </pre>
 *
 * Without --url it starts one {@code idforge serve} (IDFORGE_BIN, default build/idforge)
 * on free ports. In one run: {@code snowflake()} with the buffer against a plain
 * in-process counter ({@code AtomicLong.incrementAndGet}), the ceiling of any call that
 * hands out a number, and {@code snowflake()} without the buffer: one request per ID.
 */
public final class Bench {
  private Bench() {}

  private static final Pattern HTTP_LINE = Pattern.compile("idforge serve: http http://127\\.0\\.0\\.1:(\\d+)/");
  private static final Pattern RESP_LINE = Pattern.compile("idforge serve: resp redis://127\\.0\\.0\\.1:(\\d+)");

  private static final String TOKEN = "java-bench-token";

  interface Run {
    void run(long n);
  }

  /** IDs per second of {@code n} calls, after a warm-up of {@code n / 10}. */
  static double rate(long n, Run run) {
    run.run(Math.max(1, n / 10));
    long t0 = System.nanoTime();
    run.run(n);
    return n / ((System.nanoTime() - t0) / 1e9);
  }

  static volatile long sink; // keeps the JIT from dropping the loops

  public static void main(String[] args) throws Exception {
    String url = null;
    long n = 20_000_000;
    long m = 20_000;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--url":
          url = args[++i];
          break;
        case "--n":
          n = Long.parseLong(args[++i]);
          break;
        case "--m":
          m = Long.parseLong(args[++i]);
          break;
        default:
          System.err.println("usage: bench [--url URL] [--n BUFFERED_IDS] [--m UNBUFFERED_IDS]");
          System.exit(2);
      }
    }
    Process server = null;
    Path dir = null;
    List<String> urls = new ArrayList<>();
    if (url == null) {
      dir = Files.createTempDirectory(Files.isWritable(Paths.get("/dev/shm")) ? Paths.get("/dev/shm") : Paths.get("/tmp"), "idforge-javabench-");
      int[] ports = new int[2];
      server = startServer(dir, ports);
      urls.add("redis://127.0.0.1:" + ports[1]);
      urls.add("http://127.0.0.1:" + ports[0]);
    } else {
      urls.add(url);
    }
    List<String[]> rows = new ArrayList<>();
    try {
      AtomicLong counter = new AtomicLong();
      double counted = rate(n, k -> {
        long s = 0;
        for (long i = 0; i < k; i++) s += counter.incrementAndGet();
        sink = s;
      });
      rows.add(new String[] {"in-process counter (AtomicLong.incrementAndGet)", fmt(counted), ""});
      double buffered = 0;
      for (int batch : new int[] {256, 4096}) {
        try (Client c = Client.builder(urls.get(0)).batch(batch).build()) {
          c.snowflake();
          double r = rate(n, k -> {
            long s = 0;
            for (long i = 0; i < k; i++) s += c.snowflake();
            sink = s;
          });
          if (batch == 256) buffered = r;
          rows.add(new String[] {"snowflake() with the buffer, batch " + batch + " (" + scheme(urls.get(0)) + ")",
              fmt(r), String.format("counter / this: %.1f", counted / r)});
        }
      }
      if (server != null) {
        // Segment IDs are not bound by a Snowflake worker's 4096 IDs per ms: the client's
        // own cost per ID shows with a large batch.
        createTag(urls.get(1), "bench");
        try (Client c = Client.builder(urls.get(0)).batch(10_000).segmentMaxAgeMs(0).build()) {
          c.segment("bench");
          double r = rate(n, k -> {
            long s = 0;
            for (long i = 0; i < k; i++) s += c.segment("bench");
            sink = s;
          });
          rows.add(new String[] {"segment() with the buffer, batch 10000 (" + scheme(urls.get(0)) + ")", fmt(r),
              String.format("counter / this: %.1f", counted / r)});
        }
      }
      for (String u : urls) {
        try (Client c = Client.builder(u).buffer(false).build()) {
          c.snowflake();
          double r = rate(m, k -> {
            long s = 0;
            for (long i = 0; i < k; i++) s += c.snowflake();
            sink = s;
          });
          rows.add(new String[] {"snowflake() without the buffer, one request per ID (" + scheme(u) + ")", fmt(r),
              String.format("buffered / this: %.0f", buffered / r)});
        }
      }
    } finally {
      if (server != null) {
        server.destroy();
        server.waitFor();
      }
      if (dir != null) deleteTree(dir);
    }
    System.out.printf("java %s, %d cores, load %.1f; n=%d, m=%d%n", System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(), ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(), n, m);
    int width = rows.stream().mapToInt(r -> r[0].length()).max().orElse(10);
    for (String[] r : rows) System.out.printf("%-" + width + "s  %14s IDs/s  %s%n", r[0], r[1], r[2]);
  }

  static void createTag(String httpUrl, String tag) throws IOException, InterruptedException {
    java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
        java.net.http.HttpRequest.newBuilder(java.net.URI.create(httpUrl + "/v1/admin/tags"))
            .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "application/json")
            .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"tag\":\"" + tag + "\",\"step\":1000000,\"start\":\"1\"}"))
            .build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 201 && r.statusCode() != 200) throw new IOException("creating tag " + tag + ": HTTP " + r.statusCode() + " " + r.body());
  }

  static String scheme(String url) {
    return url.substring(0, url.indexOf(':')) + "://";
  }

  static String fmt(double rate) {
    return String.format("%,.0f", rate);
  }

  static Process startServer(Path dir, int[] ports) throws IOException, InterruptedException {
    String bin = System.getenv("IDFORGE_BIN");
    if (bin == null || bin.isEmpty()) bin = "build/idforge";
    Path out = dir.resolve("serve.out");
    List<String> cmd = new ArrayList<>();
    if (new File("/usr/bin/setpriv").canExecute()) cmd.addAll(List.of("/usr/bin/setpriv", "--pdeathsig", "KILL", "--"));
    cmd.addAll(List.of(bin, "serve", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0",
        "--data-dir", dir.resolve("data").toString(), "--registry", "local:" + dir + "/workers",
        "--store", "sqlite:" + dir + "/segments.db", "--identity", "java-bench", "--admin-token", TOKEN,
        "--log-level", "warn"));
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline && p.isAlive()) {
      String text = Files.readString(out);
      Matcher h = HTTP_LINE.matcher(text);
      Matcher r = RESP_LINE.matcher(text);
      if (h.find() && r.find()) {
        ports[0] = Integer.parseInt(h.group(1));
        ports[1] = Integer.parseInt(r.group(1));
        return p;
      }
      Thread.sleep(10);
    }
    p.destroyForcibly();
    throw new IOException("idforge serve (" + bin + ") did not start");
  }

  static void deleteTree(Path root) throws IOException {
    try (Stream<Path> all = Files.walk(root)) {
      all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
