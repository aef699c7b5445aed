package dev.idforge.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Real {@code idforge serve} processes for the client's tests, started as the Python
 * client's tests start them (clients/python/tests/_support.py): two servers sharing a
 * worker-id registry (local:SHARED/workers: different worker ids) and a segment store
 * (sqlite:SHARED/segments.db: shared counters), each with its own data dir and identity,
 * so that together they never issue the same ID; and fake servers for broken answers.
 */
final class TestServers {
  private TestServers() {}

  static final String IDFORGE_BIN = binary();
  static final String ADMIN_TOKEN = "java-client-test-token";
  static final Path REPO_ROOT = repoRoot();
  static final Path VECTORS = REPO_ROOT.resolve("tests/data/snowflake_vectors.txt");

  private static final Pattern HTTP_LINE = Pattern.compile("idforge serve: http http://127\\.0\\.0\\.1:(\\d+)/");
  private static final Pattern RESP_LINE = Pattern.compile("idforge serve: resp redis://127\\.0\\.0\\.1:(\\d+)");
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private static Path repoRoot() {
    String dir = System.getProperty("idforge.repo");
    if (dir != null) return Paths.get(dir).toAbsolutePath();
    return Paths.get("").toAbsolutePath(); // check.sh passes -Didforge.repo
  }

  private static String binary() {
    String bin = System.getenv("IDFORGE_BIN");
    if (bin != null && !bin.isEmpty()) return bin;
    return repoRoot().resolve("build/idforge").toString();
  }

  /** A port with nothing listening on it (connections are refused). */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RuntimeException(e);
    }
  }

  static void deleteTree(Path root) {
    if (root == null || !Files.exists(root)) return;
    try (Stream<Path> all = Files.walk(root)) {
      all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // a temporary directory: best effort
    }
  }

  /**
   * Answers every request (anything received) with the same bytes: for the answers a real
   * server gives only when something is broken (a 503, a proxy's 401, ...).
   */
  static final class FakeServer implements AutoCloseable {
    /** The answer to the first request, the second, ...; the last one to any later. */
    final List<byte[]> answers = new ArrayList<>();
    final AtomicInteger requests = new AtomicInteger();
    /** Each answer waits this long. */
    volatile long delayMs;
    /** When > 0, each answer's bytes after the headers come one at a time, this many ms apart. */
    volatile long trickleMs;
    private final ServerSocket socket;
    private final List<Socket> connections = new ArrayList<>();

    FakeServer(String... answers) throws IOException {
      for (String a : answers) this.answers.add(a.getBytes(StandardCharsets.ISO_8859_1));
      this.socket = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
      Thread t = new Thread(this::accept, "fake-server");
      t.setDaemon(true);
      t.start();
    }

    int port() {
      return socket.getLocalPort();
    }

    private void accept() {
      while (true) {
        Socket c;
        try {
          c = socket.accept();
        } catch (IOException e) {
          return;
        }
        synchronized (connections) {
          connections.add(c);
        }
        Thread t = new Thread(() -> serve(c), "fake-server-connection");
        t.setDaemon(true);
        t.start();
      }
    }

    private void serve(Socket c) {
      try (c; InputStream in = c.getInputStream(); OutputStream out = c.getOutputStream()) {
        byte[] buf = new byte[65536];
        while (in.read(buf) > 0) {
          int n = requests.incrementAndGet();
          if (delayMs > 0) sleep(delayMs);
          byte[] answer = answers.get(Math.min(n, answers.size()) - 1);
          if (trickleMs > 0) {
            String text = new String(answer, StandardCharsets.ISO_8859_1);
            int body = text.indexOf("\r\n\r\n") + 4;
            out.write(answer, 0, body);
            for (int i = body; i < answer.length; i++) {
              out.flush();
              sleep(trickleMs);
              out.write(answer[i]);
            }
          } else {
            out.write(answer);
          }
          out.flush();
        }
      } catch (IOException ignored) {
        // the client went away
      }
    }

    /** Closes the connections the client holds, as a server's idle timeout does. */
    void closeConnections() throws IOException {
      synchronized (connections) {
        for (Socket c : connections) c.close();
        connections.clear();
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
      closeConnections();
    }
  }

  /** One {@code idforge serve}. Started, stopped and killed by the test's own thread. */
  static final class ServerProc {
    final String name;
    final Path dataDir;
    final Path shared;
    final Path out;
    final Path err;
    Process proc;
    int httpPort;
    int respPort;
    boolean stopped;

    ServerProc(Path root, Path shared, String name) {
      this.name = name;
      this.dataDir = root.resolve(name);
      this.shared = shared;
      this.out = root.resolve(name + ".out");
      this.err = root.resolve(name + ".err");
    }

    String http() {
      return "http://127.0.0.1:" + httpPort;
    }

    String resp() {
      return "redis://127.0.0.1:" + respPort;
    }

    /** Starts on the ports it had (0 the first time: any free one). */
    void start() throws IOException {
      List<String> args = new ArrayList<>();
      // A server outlives nothing: killed with the test process through util-linux's
      // setpriv, which execs it under the same pid. The death signal follows the thread
      // that started it, so servers are started from the test's main thread only.
      if (Files.isExecutable(Paths.get("/usr/bin/setpriv"))) {
        args.addAll(List.of("/usr/bin/setpriv", "--pdeathsig", "KILL", "--"));
      }
      args.addAll(List.of(IDFORGE_BIN, "serve",
          "--http", "127.0.0.1:" + httpPort,
          "--resp", "127.0.0.1:" + respPort,
          "--data-dir", dataDir.toString(),
          "--registry", "local:" + shared + "/workers",
          "--store", "sqlite:" + shared + "/segments.db",
          "--identity", "java-test-" + name,
          "--admin-token", ADMIN_TOKEN,
          "--io-threads", "1", "--worker-threads", "2",
          // A loaded machine can delay the thread that renews the time reservation; wait
          // for it rather than answer 503.
          "--max-wait-ms", "250",
          "--log-level", "warn"));
      ProcessBuilder pb = new ProcessBuilder(args)
          .redirectOutput(out.toFile())
          .redirectError(ProcessBuilder.Redirect.appendTo(err.toFile()))
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
      proc = pb.start();
      stopped = false;
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (true) {
        String text = Files.readString(out);
        Matcher h = HTTP_LINE.matcher(text);
        Matcher r = RESP_LINE.matcher(text);
        if (h.find() && r.find()) {
          httpPort = Integer.parseInt(h.group(1));
          respPort = Integer.parseInt(r.group(1));
          return;
        }
        if (!proc.isAlive() || System.nanoTime() > deadline) {
          kill9();
          String tail = Files.readString(err);
          throw new IOException("idforge serve " + name + " did not start: "
              + tail.substring(Math.max(0, tail.length() - 2000)));
        }
        sleep(10);
      }
    }

    boolean running() {
      return proc != null && proc.isAlive();
    }

    void kill9() {
      if (running()) {
        proc.destroyForcibly();
        try {
          proc.waitFor();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      stopped = false;
    }

    private void signal(String sig) throws IOException {
      try {
        int rc = new ProcessBuilder("kill", "-" + sig, Long.toString(proc.pid())).inheritIO().start().waitFor();
        if (rc != 0) throw new IOException("kill -" + sig + " " + proc.pid() + " failed");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException(e);
      }
    }

    /** SIGSTOP, and wait until every thread of the process has stopped. */
    void sigstop() throws IOException {
      signal("STOP");
      stopped = true;
      Path tasks = Paths.get("/proc/" + proc.pid() + "/task");
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (System.nanoTime() < deadline) {
        List<String> states = new ArrayList<>();
        try (Stream<Path> all = Files.list(tasks)) {
          for (Path t : (Iterable<Path>) all::iterator) {
            try {
              String stat = Files.readString(t.resolve("stat"));
              states.add(stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
            } catch (IOException gone) {
              // a thread that ended
            }
          }
        }
        if (!states.isEmpty() && states.stream().allMatch(s -> s.equals("T") || s.equals("t"))) return;
        sleep(1);
      }
      throw new IOException("idforge serve " + name + " did not stop");
    }

    void sigcont() throws IOException {
      if (running()) signal("CONT");
      stopped = false;
    }

    void terminate() {
      if (!running()) return;
      try {
        sigcont();
        proc.destroy();
        if (!proc.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)) kill9();
      } catch (IOException | InterruptedException e) {
        kill9();
      }
    }

    String get(String path) throws IOException {
      return send(HttpRequest.newBuilder(URI.create(http() + path)).timeout(Duration.ofSeconds(5)).GET().build());
    }

    private static String send(HttpRequest request) throws IOException {
      try {
        HttpResponse<String> r = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) throw new IOException(request.uri() + ": HTTP " + r.statusCode() + " " + r.body());
        return r.body();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException(e);
      }
    }

    void createTag(String tag) throws IOException {
      String body = "{\"tag\":\"" + tag + "\",\"step\":100,\"start\":\"1\"}";
      send(HttpRequest.newBuilder(URI.create(http() + "/v1/admin/tags"))
          .timeout(Duration.ofSeconds(5))
          .header("Authorization", "Bearer " + ADMIN_TOKEN)
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    /** The value of one sample of /metrics (0 when absent). */
    double metric(String sample) throws IOException {
      for (String line : get("/metrics").split("\n")) {
        int sp = line.lastIndexOf(' ');
        if (sp > 0 && line.substring(0, sp).equals(sample)) return Double.parseDouble(line.substring(sp + 1));
      }
      return 0;
    }

    /** (datacenter, worker) of its Snowflake IDs. */
    List<Long> node() throws IOException {
      Map<?, ?> status = (Map<?, ?>) Json.parse(get("/v1/status"));
      Map<?, ?> lease = (Map<?, ?>) status.get("lease");
      return List.of(((Json.Num) lease.get("datacenter")).asLong(), ((Json.Num) lease.get("worker")).asLong());
    }

    void waitReady() throws IOException {
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (true) {
        try {
          get("/readyz");
          return;
        } catch (IOException e) {
          if (System.nanoTime() > deadline) throw new IOException("idforge serve " + name + " is not ready", e);
        }
        sleep(20);
      }
    }
  }

  /** Two servers, A and B, and tags created through the admin API. */
  static final class Cluster implements AutoCloseable {
    final Path root;
    final ServerProc a;
    final ServerProc b;

    Cluster(String... tags) throws IOException {
      if (!Files.isExecutable(Paths.get(IDFORGE_BIN))) {
        throw new IOException("no idforge binary at " + IDFORGE_BIN + " (set IDFORGE_BIN)");
      }
      // On a tmpfs: the servers fsync their high-water marks, and a disk busy with builds
      // can stall an fsync long enough for a 503.
      Path shm = Paths.get("/dev/shm");
      root = Files.isWritable(shm)
          ? Files.createTempDirectory(shm, "idforge-javaclient-")
          : Files.createTempDirectory("idforge-javaclient-");
      Path shared = Files.createDirectory(root.resolve("shared"));
      a = new ServerProc(root, shared, "a");
      b = new ServerProc(root, shared, "b");
      try {
        a.start();
        b.start();
        for (String tag : tags) a.createTag(tag); // step 100: many ranges from the shared store
        a.waitReady();
        b.waitReady();
      } catch (IOException | RuntimeException e) {
        close();
        throw e;
      }
    }

    /** Both running and not stopped (after a test that stopped or killed one). */
    void heal() throws IOException {
      for (ServerProc s : List.of(a, b)) {
        if (s.stopped) s.sigcont();
        if (!s.running()) s.start();
      }
    }

    @Override
    public void close() {
      a.terminate();
      b.terminate();
      deleteTree(root);
    }
  }
}
