package dev.idforge.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idforge.client.IdforgeUnavailableException.ServerError;
import dev.idforge.client.TestServers.Cluster;
import dev.idforge.client.TestServers.FakeServer;
import dev.idforge.client.TestServers.ServerProc;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The client against two real {@code idforge serve} processes and fake servers
 * (docs/clients.md, "The behaviour"); each test mirrors one of the Python client's
 * tests/test_servers.py. Servers are started, stopped and killed from this (the main)
 * thread only: see TestServers.ServerProc.start.
 */
class ClientServersTest {
  static final Pattern UUID7 = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  static final Pattern ULID = Pattern.compile("[0-9A-HJKMNP-TV-Z]{26}");
  /** Requests that are not about timeouts get a generous one: a busy machine must not make a starved server look dead. */
  static final int SLOW_OK = 3000;

  static Cluster cluster;
  ServerProc a;
  ServerProc b;

  @BeforeAll
  static void startServers() throws Exception {
    cluster = new Cluster("order", "bulk", "stock", "item", "outage");
  }

  @AfterAll
  static void stopServers() {
    if (cluster != null) cluster.close();
  }

  @BeforeEach
  void heal() throws Exception {
    cluster.heal();
    a = cluster.a;
    b = cluster.b;
  }

  @AfterEach
  void healAfter() throws Exception {
    cluster.heal();
  }

  static List<Long> nodeOf(long snowflake) {
    ParsedId p = Client.parse(snowflake);
    return List.of(p.get("datacenter"), p.get("worker"));
  }

  static double seconds(long nanos) {
    return nanos / 1e9;
  }

  // -- both protocols -------------------------------------------------------------------

  @Test
  void httpAndRedisServersGiveEveryKind() throws Exception {
    List<Long> nodeA = a.node();
    for (String url : List.of(a.http(), a.resp())) {
      for (boolean buffer : List.of(true, false)) {
        String where = url + " buffer=" + buffer;
        try (Client c = Client.builder(url).buffer(buffer).batch(32).timeoutMs(SLOW_OK).build()) {
          long sf = c.snowflake();
          assertEquals(nodeA, nodeOf(sf), where);
          long[] more = c.snowflakes(40);
          Set<Long> distinct = new HashSet<>();
          distinct.add(sf);
          for (long x : more) distinct.add(x);
          assertEquals(41, distinct.size(), where);
          for (int i = 1; i < more.length; i++) assertTrue(more[i - 1] < more[i], where + ": one server, in order");
          long seg = c.segment("order");
          assertTrue(seg > 0, where);
          long[] segs = c.segments("order", 5);
          assertEquals(List.of(seg + 1, seg + 2, seg + 3, seg + 4, seg + 5), toList(segs), where);
          assertTrue(UUID7.matcher(c.uuid7()).matches(), where);
          assertTrue(ULID.matcher(c.ulid()).matches(), where);
          Set<String> texts = new HashSet<>(c.uuid7s(3));
          texts.addAll(c.ulids(3));
          assertEquals(6, texts.size(), where);
        }
      }
    }
  }

  static List<Long> toList(long[] values) {
    List<Long> out = new ArrayList<>();
    for (long v : values) out.add(v);
    return out;
  }

  @Test
  void theTwoServersNeverIssueTheSameId() throws Exception {
    assertNotEquals(a.node(), b.node());
    try (Client ca = Client.builder(a.http()).batch(100).timeoutMs(SLOW_OK).build();
        Client cb = Client.builder(b.resp()).batch(100).timeoutMs(SLOW_OK).build()) {
      Set<Long> ids = new HashSet<>();
      for (int i = 0; i < 300; i++) {
        assertTrue(ids.add(ca.segment("stock")));
        assertTrue(ids.add(cb.segment("stock")));
      }
    }
  }

  // -- kill -9 and restart --------------------------------------------------------------

  record Pulled(String kind, long value, long atMs) {}

  @Test
  void pullingThroughKill9AndRestartLosesNoRequestAndRepeatsNoId() throws Exception {
    List<Long> nodeA = a.node();
    AtomicBoolean stop = new AtomicBoolean();
    ConcurrentLinkedQueue<Pulled> got = new ConcurrentLinkedQueue<>();
    ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
    AtomicInteger calls = new AtomicInteger();
    // A killed server refuses at once; the timeout only covers a starved one. Buffered,
    // small batches (many refills); and one request per call. Both start on A, over both
    // protocols.
    Client buffered = Client.builder(a.http(), b.resp()).batch(16).timeoutMs(SLOW_OK).backoffMs(200).maxBackoffMs(1000).build();
    Client direct = Client.builder(a.resp(), b.http()).buffer(false).timeoutMs(SLOW_OK).backoffMs(200).maxBackoffMs(1000).build();
    List<Thread> threads = new ArrayList<>();
    for (Object[] spec : new Object[][] {{buffered, "sf"}, {buffered, "seg"}, {direct, "sf"}}) {
      Client client = (Client) spec[0];
      String firstKind = (String) spec[1];
      threads.add(new Thread(() -> {
        try {
          while (!stop.get()) {
            for (String kind : firstKind.equals("sf") ? List.of("sf", "seg") : List.of("seg", "sf")) {
              calls.incrementAndGet();
              long v = kind.equals("sf") ? client.snowflake() : client.segment("order");
              got.add(new Pulled(kind, v, System.currentTimeMillis()));
            }
          }
        } catch (RuntimeException e) {
          errors.add(e.toString());
        }
      }));
    }
    threads.forEach(Thread::start);
    long restarted;
    try {
      TestServers.sleep(300);
      a.kill9();
      TestServers.sleep(300);
      a.start(); // same data dir, identity and ports
      restarted = System.currentTimeMillis();
      TestServers.sleep(400);
      b.kill9(); // now only the restarted A can answer
      TestServers.sleep(400);
      b.start();
      TestServers.sleep(200);
    } finally {
      stop.set(true);
      for (Thread t : threads) t.join(10_000);
      buffered.close();
      direct.close();
    }
    assertEquals(List.of(), new ArrayList<>(errors));
    assertEquals(calls.get(), got.size(), "every call returned an ID");
    for (String kind : List.of("sf", "seg")) {
      List<Long> ids = got.stream().filter(p -> p.kind().equals(kind)).map(Pulled::value).toList();
      assertTrue(ids.size() > 100, kind + ": " + ids.size());
      assertEquals(ids.size(), new HashSet<>(ids).size(), "a repeated " + kind + " ID");
    }
    // The restarted A served (IDs of its node, made after its restart), through both clients.
    List<Long> after = got.stream().filter(p -> p.kind().equals("sf") && p.atMs() > restarted + 400)
        .map(Pulled::value).toList();
    assertFalse(after.isEmpty());
    for (long v : after.subList(Math.max(0, after.size() - 10), after.size())) assertEquals(nodeA, nodeOf(v));
    assertTrue(after.stream().anyMatch(v -> Client.parse(v).unixMs() > restarted));
  }

  @Test
  void aKeptAliveConnectionTheServerClosedIsNotAFailure() throws Exception {
    List<Long> nodeA = a.node();
    try (Client overHttp = Client.builder(a.http(), b.resp()).buffer(false).timeoutMs(SLOW_OK).build();
        Client overResp = Client.builder(a.resp(), b.http()).buffer(false).timeoutMs(SLOW_OK).build()) {
      for (Client c : List.of(overHttp, overResp)) assertEquals(nodeA, nodeOf(c.snowflake())); // kept alive
      a.kill9(); // closes them all
      a.start();
      for (Client c : List.of(overHttp, overResp)) {
        // A again, on a new connection: its old one is no reason to skip it.
        assertEquals(nodeA, nodeOf(c.snowflake()));
        assertEquals(List.of(0, 0), c.serverStates().stream().map(Client.ServerState::failures).toList());
      }
    }
    // A server's idle timeout: the same, with a fake server that closes its connections.
    String body = "{\"kind\":\"snowflake\",\"ids\":[\"7\"]}";
    try (FakeServer fake = new FakeServer("HTTP/1.1 200 OK\r\nContent-Length: " + body.length() + "\r\n\r\n" + body);
        Client c = Client.builder("http://127.0.0.1:" + fake.port(), a.http()).buffer(false).timeoutMs(SLOW_OK).build()) {
      assertEquals(7, c.snowflake());
      fake.closeConnections();
      TestServers.sleep(20);
      assertEquals(7, c.snowflake());
      assertEquals(0, c.serverStates().get(0).failures());
      assertEquals(2, fake.requests.get());
    }
  }

  // -- SIGSTOP --------------------------------------------------------------------------

  @Test
  void aStoppedServerCostsOneTimeoutThenIsSkipped() throws Exception {
    List<Long> nodeA = a.node();
    List<Long> nodeB = b.node();
    int timeoutMs = 500;
    try (Client c = Client.builder(a.http(), b.resp()).timeoutMs(timeoutMs).buffer(false).backoffMs(5000).build()) {
      assertEquals(nodeA, nodeOf(c.snowflake())); // A answers first
      a.sigstop();
      long firstNs;
      long restNs;
      long first;
      List<Long> rest = new ArrayList<>();
      List<Client.ServerState> states;
      try {
        long t0 = System.nanoTime();
        first = c.snowflake();
        firstNs = System.nanoTime() - t0;
        for (int i = 0; i < 30; i++) rest.add(c.snowflake());
        restNs = System.nanoTime() - t0 - firstNs;
        states = c.serverStates();
      } finally {
        a.sigcont();
      }
      // The first request waited for A's timeout, then B answered it; the other 30 went
      // straight to B (one timeout each would be 15 s).
      assertTrue(seconds(firstNs) >= timeoutMs / 1000.0 * 0.9, "first: " + seconds(firstNs));
      assertTrue(seconds(firstNs) < 2 * timeoutMs / 1000.0, "first: " + seconds(firstNs));
      assertTrue(seconds(restNs) < 5 * timeoutMs / 1000.0, "a timeout per request: " + seconds(restNs));
      assertEquals(nodeB, nodeOf(first));
      for (long x : rest) assertEquals(nodeB, nodeOf(x));
      assertEquals(1, states.get(0).failures());
      assertTrue(states.get(0).lastError().contains("timed out after 500 ms"), states.get(0).lastError());
      assertTrue(states.get(1).current());
      // A is well again, but requests stay on the server that answered last.
      assertEquals(nodeB, nodeOf(c.snowflake()));
    }
  }

  @Test
  void aFailedServerIsSkippedWhileItBacksOff() throws Exception {
    List<Long> nodeA = a.node();
    try (FakeServer fake = new FakeServer(http("503 Service Unavailable", "{}"));
        Client c = Client.builder("http://127.0.0.1:" + fake.port(), a.http()).buffer(false).timeoutMs(SLOW_OK)
            .backoffMs(600).build()) {
      c.recordFailure(0, "down a moment ago"); // the first in the list, where requests start
      for (int i = 0; i < 3; i++) assertEquals(nodeA, nodeOf(c.snowflake()));
      assertEquals(0, fake.requests.get(), "a server backing off was asked");
      assertTrue(c.serverStates().get(1).current());
      assertEquals(1, c.serverStates().get(0).failures());
      // Its period over, it is not backing off, but requests start at the server that
      // answered last.
      TestServers.sleep(650);
      assertEquals(0, c.serverStates().get(0).backingOffMs());
      assertEquals(nodeA, nodeOf(c.snowflake()));
      assertEquals(0, fake.requests.get(), "the first server was asked, not the one that answered last");
    }
  }

  @Test
  void aCallTriesTheServerWhoseBackOffEndsFirstFirst() throws Exception {
    String body = "{\"ids\":[\"7\"]}";
    try (FakeServer first = new FakeServer(http("503 Service Unavailable", "{}"));
        FakeServer second = new FakeServer(http("200 OK", body));
        Client c = Client.builder("http://127.0.0.1:" + first.port(), "http://127.0.0.1:" + second.port())
            .buffer(false).timeoutMs(SLOW_OK).backoffMs(5000).build()) {
      c.recordFailure(1, "down a moment ago");
      TestServers.sleep(5);
      c.recordFailure(0, "down just now"); // the first in the list ends its period last
      assertEquals(7, c.snowflake()); // every server backing off: the second's period ends first
      assertEquals(0, first.requests.get());
      assertEquals(1, second.requests.get());
      assertEquals(List.of(1, 0), c.serverStates().stream().map(Client.ServerState::failures).toList());
    }
  }

  @Test
  void theTimeoutCoversTheWholeAnswer() throws Exception {
    // Headers at once, then the body a byte every 50 ms: each read gets a byte in time,
    // but the request as a whole does not end within timeoutMs.
    List<Long> nodeA = a.node();
    String body = String.format("%-40s", "{\"ids\":[\"7\"]}");
    try (FakeServer fake = new FakeServer(http("200 OK", body));
        Client c = Client.builder("http://127.0.0.1:" + fake.port(), a.http()).buffer(false).timeoutMs(300)
            .build()) {
      fake.trickleMs = 50;
      long t0 = System.nanoTime();
      assertEquals(nodeA, nodeOf(c.snowflake()));
      double took = seconds(System.nanoTime() - t0);
      assertTrue(took < 1.0, "took " + took);
      assertTrue(took >= 0.27, "took " + took);
      assertEquals("timed out after 300 ms", c.serverStates().get(0).lastError());
    }
  }

  @Test
  void aStoppedServerDuringBackgroundRefillsCostsTheCallerNothing() throws Exception {
    // Snowflake IDs: a server stopped while it held the shared SQLite store's lock would
    // hold up the other's segment ranges too (an artefact of the test setup).
    int timeoutMs = 500;
    try (Client c = Client.builder(a.resp(), b.http()).timeoutMs(timeoutMs).batch(100).refillBelow(70)
        .backoffMs(5000).build()) {
      Set<Long> ids = new HashSet<>();
      ids.add(c.snowflake());
      a.sigstop();
      long slowest = 0;
      List<Client.ServerState> states;
      try {
        for (int i = 0; i < 100; i++) {
          TestServers.sleep(10); // 70 IDs last longer than A's timeout
          long t0 = System.nanoTime();
          ids.add(c.snowflake());
          slowest = Math.max(slowest, System.nanoTime() - t0);
        }
        states = c.serverStates();
      } finally {
        a.sigcont();
      }
      assertEquals(101, ids.size());
      // The refill thread met A's timeout and went on to B; no caller waited.
      assertEquals(1, states.get(0).failures());
      assertTrue(states.get(1).current());
      assertTrue(seconds(slowest) < timeoutMs / 1000.0 / 2, "slowest call: " + seconds(slowest));
    }
  }

  @Test
  void theBufferRefillsInTheBackgroundWithinItsBound() throws Exception {
    try (Client c = Client.builder(a.http()).batch(20).refillBelow(10).timeoutMs(SLOW_OK).build()) {
      Set<Long> ids = new HashSet<>();
      ids.add(c.snowflake());
      assertEquals(19, c.buffered(Kind.SNOWFLAKE));
      for (int i = 0; i < 9; i++) ids.add(c.snowflake()); // 10 left: not fewer than 10
      TestServers.sleep(100);
      assertEquals(10, c.buffered(Kind.SNOWFLAKE));
      ids.add(c.snowflake()); // 9 left: below 10
      long deadline = System.nanoTime() + 2_000_000_000L;
      while (c.buffered(Kind.SNOWFLAKE) != 29 && System.nanoTime() < deadline) TestServers.sleep(10);
      assertEquals(29, c.buffered(Kind.SNOWFLAKE)); // batch + refill_below at most
      ids.add(c.snowflake()); // 28 left: not below 10, no refill
      TestServers.sleep(100);
      assertEquals(28, c.buffered(Kind.SNOWFLAKE));
      for (long x : c.snowflakes(28)) ids.add(x); // a refill started at 9 left
      assertEquals(40, ids.size());
      deadline = System.nanoTime() + 2_000_000_000L;
      while (c.bufferStates().get(0).refills() < 3 && System.nanoTime() < deadline) TestServers.sleep(10);
      Client.BufferState state = c.bufferStates().get(0);
      assertEquals(Kind.SNOWFLAKE, state.kind());
      assertEquals(3, state.refills());
      assertEquals(20, state.size());
    }
  }

  // -- a full outage --------------------------------------------------------------------

  @Test
  void theBufferServesAFullOutageUntilEmptyThenNamesEveryServer() throws Exception {
    double timeoutS = 0.1;
    try (Client c = Client.builder(a.http(), b.resp()).timeoutMs(100).batch(40).refillBelow(20)
        .maxAgeMs(10_000).backoffMs(100).build()) {
      long firstSeg = c.segment("outage");
      long firstSf = c.snowflake();
      assertEquals(39, c.buffered(Kind.SEGMENT, "outage"));
      assertEquals(39, c.buffered(Kind.SNOWFLAKE));
      a.sigstop();
      b.sigstop();
      try {
        for (String kind : List.of("segment", "snowflake")) {
          Set<Long> served = new HashSet<>();
          long first = kind.equals("segment") ? firstSeg : firstSf;
          long t0 = 0;
          IdforgeUnavailableException e = null;
          while (e == null) {
            // Slow enough that the background refill (below 20 left) fails on both
            // servers while IDs are left.
            TestServers.sleep(15);
            t0 = System.nanoTime();
            try {
              served.add(kind.equals("segment") ? c.segment("outage") : c.snowflake());
            } catch (IdforgeUnavailableException x) {
              e = x;
            }
          }
          double waited = seconds(System.nanoTime() - t0);
          assertEquals(39, served.size(), kind); // every buffered ID
          assertFalse(served.contains(first), kind);
          String message = e.getMessage();
          assertTrue(message.contains(a.http()), message);
          assertTrue(message.contains(b.resp()), message);
          assertTrue(message.contains("timed out after 100 ms"), message);
          assertEquals(List.of(a.http(), b.resp()), e.servers().stream().map(ServerError::url).toList());
          assertInstanceOf(IdforgeException.class, e);
          assertEquals("unavailable", e.code());
          assertTrue(waited < 2 * timeoutS + 1.0, kind + " waited " + waited);
        }
      } finally {
        a.sigcont();
        b.sigcont();
      }
      // Back: the next call gets an ID again (every server backing off: the one whose
      // period ends first is tried).
      long deadline = System.nanoTime() + 3_000_000_000L;
      while (true) {
        try {
          assertTrue(c.segment("outage") > firstSeg);
          break;
        } catch (IdforgeUnavailableException e) {
          if (System.nanoTime() > deadline) throw e;
          TestServers.sleep(50);
        }
      }
    }
  }

  @Test
  void anEmptyBufferTriesAServerStillBackingOff() throws Exception {
    try (Client c = Client.builder(a.http()).timeoutMs(300).batch(10).refillBelow(5)
        .backoffMs(60_000).maxBackoffMs(60_000).build()) {
      Set<Long> ids = new HashSet<>();
      ids.add(c.snowflake()); // 9 left
      a.sigstop();
      try {
        for (int i = 0; i < 5; i++) ids.add(c.snowflake()); // 4 left: a refill, A times out
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (c.serverStates().get(0).failures() == 0 && System.nanoTime() < deadline) TestServers.sleep(10);
      } finally {
        a.sigcont();
      }
      assertTrue(c.serverStates().get(0).backingOffMs() > 50_000);
      // No background refill while A backs off; the empty buffer tries A anyway.
      for (int i = 0; i < 4 + 10; i++) ids.add(c.snowflake());
      assertEquals(20, ids.size());
      assertEquals(0, c.serverStates().get(0).failures());
    }
  }

  @Test
  void noServerAtAllFailsAtOnceNamingEachServer() throws Exception {
    List<String> dead = List.of("http://127.0.0.1:" + TestServers.freePort(), "redis://127.0.0.1:" + TestServers.freePort());
    List<ServerError> refused = List.of(new ServerError(dead.get(0), "failed: connection refused"),
        new ServerError(dead.get(1), "failed: connection refused"));
    try (Client c = Client.builder(dead).buffer(false).backoffMs(1000).maxBackoffMs(3000).build()) {
      long t0 = System.nanoTime();
      IdforgeUnavailableException e = assertThrows(IdforgeUnavailableException.class, c::snowflake);
      assertTrue(seconds(System.nanoTime() - t0) < 1.0);
      assertEquals(refused, e.servers());
      assertTrue(e.getMessage().contains(dead.get(0) + " failed: connection refused"), e.getMessage());
      // Both back off now: a waiting caller tries them anyway, the one whose period ends
      // first first, rather than failing untried.
      e = assertThrows(IdforgeUnavailableException.class, c::snowflake);
      assertEquals(refused, e.servers());
      List<Client.ServerState> states = c.serverStates();
      assertEquals(List.of(2, 2), states.stream().map(Client.ServerState::failures).toList());
      assertTrue(states.get(0).backingOffMs() > 1500, "doubled: 2000 ms"); // doubled
      for (int i = 0; i < 4; i++) assertThrows(IdforgeUnavailableException.class, c::snowflake);
      states = c.serverStates();
      assertEquals(12, states.stream().mapToInt(Client.ServerState::failures).sum()); // both, every call
      assertTrue(states.stream().mapToLong(Client.ServerState::backingOffMs).max().getAsLong() <= 3000); // the cap
    }
    // With the buffer, an empty buffer fails the same way.
    try (Client c = Client.builder(dead).timeoutMs(200).build()) {
      IdforgeUnavailableException e = assertThrows(IdforgeUnavailableException.class, () -> c.segment("order"));
      assertEquals(refused, e.servers());
    }
  }

  // -- broken answers -------------------------------------------------------------------

  static String http(String status, String body) {
    return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length()
        + "\r\n\r\n" + body;
  }

  @Test
  void anyOtherErrorAnswerMovesOnToTheNextServer() throws Exception {
    String[][] cases = {
        {"http", http("503 Service Unavailable", "{\"error\":{\"code\":\"unavailable\",\"message\":\"segment store down\"}}"), "HTTP 503 unavailable"},
        {"http", http("500 Internal Server Error", "{\"error\":{\"code\":\"internal\",\"message\":\"boom\"}}"), "HTTP 500 internal"},
        {"http", http("401 Unauthorized", "proxy says no"), "HTTP 401"},
        {"http", http("403 Forbidden", "{\"error\":{\"code\":\"forbidden\",\"message\":\"no scope\"}}"), "HTTP 403 forbidden"},
        {"http", http("429 Too Many Requests", "{\"error\":{\"code\":\"too_many_requests\",\"message\":\"rate\"}}"), "HTTP 429"},
        {"http", http("200 OK", "{\"ids\":[]}"), "malformed"},
        {"http", http("200 OK", "{\"ids\":[\"12x\"]}"), "malformed"},
        {"http", http("200 OK", "not json"), "malformed"},
        {"http", http("200 OK", "{\"kind\":\"snowflake\",\"ids\":[\"1\",\"2\"]}"), "answered 2 IDs, asked for 1"},
        {"http", "SSH-2.0-OpenSSH\r\n", "not an HTTP answer"},
        {"redis", "-ERR lease_lost: the worker lease is gone\r\n", "lease_lost"},
        {"redis", "-ERR io_error: disk\r\n", "io_error"},
        {"redis", "-ERR unknown command 'ID.SNOWFLAKE'\r\n", "unknown command"},
        {"redis", "-WRONGPASS invalid username-password pair\r\n", "WRONGPASS"},
        {"redis", "+OK\r\n", "unexpected answer"},
        {"redis", "*1\r\n$2\r\nab\r\n", "malformed"},
        {"redis", "*2\r\n:1\r\n:2\r\n", "answered 2 IDs, asked for 1"},
    };
    List<Long> nodeA = a.node();
    for (String[] k : cases) {
      String why = k[2];
      try (FakeServer fake = new FakeServer(k[1]);
          Client c = Client.builder(k[0] + "://127.0.0.1:" + fake.port(), a.http()).buffer(false).timeoutMs(SLOW_OK).build()) {
        assertEquals(nodeA, nodeOf(c.snowflake()), why);
        Client.ServerState state = c.serverStates().get(0);
        assertEquals(1, state.failures(), why);
        assertTrue(state.lastError().contains(why), why + " in " + state.lastError());
        assertEquals(1, fake.requests.get(), why);
      }
    }
  }

  @Test
  void aServerThatAnswersAWrongNumberOfIdsIsAFailure() throws Exception {
    List<Long> nodeA = a.node();
    String two = http("200 OK", "{\"kind\":\"snowflake\",\"ids\":[\"1\",\"2\"]}");
    for (String[] k : new String[][] {{"http", two}, {"redis", "*2\r\n:1\r\n:2\r\n"}}) {
      for (boolean buffer : List.of(false, true)) {
        String where = k[0] + " buffer=" + buffer;
        try (FakeServer fake = new FakeServer(k[1]);
            Client c = Client.builder(k[0] + "://127.0.0.1:" + fake.port(), a.http()).buffer(buffer).batch(8)
                .timeoutMs(SLOW_OK).backoffMs(10_000).build()) {
          // The other server answers the call; the first backs off and is not asked again.
          assertEquals(nodeA, nodeOf(c.snowflake()), where);
          assertEquals(nodeA, nodeOf(c.snowflake()), where);
          Client.ServerState state = c.serverStates().get(0);
          assertEquals(1, state.failures(), where);
          assertTrue(state.backingOffMs() > 9000, where);
          assertTrue(state.lastError().contains("answered 2 IDs, asked for " + (buffer ? 8 : 1)), state.lastError());
          assertTrue(c.serverStates().get(1).current(), where);
          assertEquals(1, fake.requests.get(), where);
        }
      }
    }
  }

  @Test
  void aFailedBackgroundRefillWaitsBeforeTryingAgain() throws Exception {
    // A refill refused as a wrong request (here a tag the server lost: 404) is not sent
    // again by every call below refillBelow: the next background refill waits backoffMs.
    // (Generous periods: a busy machine may take a while between two steps.)
    StringBuilder ids = new StringBuilder();
    for (int i = 1; i <= 10; i++) ids.append(i == 1 ? "" : ",").append('"').append(i).append('"');
    try (FakeServer fake = new FakeServer(http("200 OK", "{\"ids\":[" + ids + "]}"),
            http("404 Not Found", "{\"error\":{\"code\":\"not_found\",\"message\":\"unknown tag 'gone'\"}}"));
        Client c = Client.builder("http://127.0.0.1:" + fake.port()).batch(10).refillBelow(9).backoffMs(700)
            .timeoutMs(SLOW_OK).build()) {
      assertEquals(1, c.segment("gone"));
      assertEquals(2, c.segment("gone")); // 8 left: a background refill, refused
      long deadline = System.nanoTime() + 2_000_000_000L;
      while (fake.requests.get() < 2 && System.nanoTime() < deadline) TestServers.sleep(5);
      TestServers.sleep(20);
      for (long want = 3; want <= 6; want++) assertEquals(want, c.segment("gone"));
      TestServers.sleep(50);
      assertEquals(2, fake.requests.get(), "a refill per call below refillBelow");
      assertEquals("not_found", c.bufferStates().get(0).lastError().split(":")[0]);
      TestServers.sleep(800);
      assertEquals(7, c.segment("gone")); // the period passed: one more background refill
      deadline = System.nanoTime() + 2_000_000_000L;
      while (fake.requests.get() < 3 && System.nanoTime() < deadline) TestServers.sleep(5);
      assertEquals(8, c.segment("gone"));
      TestServers.sleep(50);
      assertEquals(3, fake.requests.get());
      assertEquals(0, c.serverStates().get(0).failures()); // a wrong request is no failure
      assertEquals(List.of(9L, 10L), toList(c.segments("gone", 2)));
      // Empty: the caller asks itself and gets the server's answer.
      IdforgeException e = assertThrows(IdforgeException.class, () -> c.segment("gone"));
      assertEquals("not_found", e.code());
      assertEquals(4, fake.requests.get());
    }
  }

  // -- wrong requests -------------------------------------------------------------------

  double refusedOnB() throws Exception {
    double sum = 0;
    for (String p : List.of("http", "resp")) {
      for (String st : List.of("400", "404")) {
        sum += b.metric("idforge_requests_total{protocol=\"" + p + "\",route=\"segment\",status=\"" + st + "\"}");
      }
    }
    return sum;
  }

  @Test
  void aWrongRequestIsAnErrorAtOnceWithoutFailover() throws Exception {
    for (List<String> servers : List.of(List.of(a.http(), b.http()), List.of(a.resp(), b.resp()))) {
      for (boolean buffer : List.of(true, false)) {
        String where = servers + " buffer=" + buffer;
        double before = refusedOnB();
        try (Client c = Client.builder(servers).buffer(buffer).timeoutMs(SLOW_OK).build()) {
          long t0 = System.nanoTime();
          IdforgeException e = assertThrows(IdforgeException.class, () -> c.segment("no_such_tag"), where);
          assertTrue(seconds(System.nanoTime() - t0) < 2.0, where);
          assertFalse(e instanceof IdforgeUnavailableException, where + ": " + e);
          assertEquals("not_found", e.code(), where);
          assertTrue(e.getMessage().contains("no_such_tag"), e.getMessage());
          assertEquals(servers.get(0), e.server(), where);
          assertEquals(servers.get(0).startsWith("http") ? 404 : 0, e.status(), where);
          e = assertThrows(IdforgeException.class, () -> c.segment("bad tag"), where);
          assertEquals("invalid_argument", e.code(), where);
          // B never heard of them; A is not counted as failed.
          assertEquals(before, refusedOnB(), where);
          assertEquals(List.of(0, 0), c.serverStates().stream().map(Client.ServerState::failures).toList(), where);
        }
      }
    }
    try (Client c = Client.builder(a.resp(), b.http()).batch(20000).build()) {
      IdforgeException e = assertThrows(IdforgeException.class, c::snowflake); // above limits.max_count
      assertEquals("out_of_range", e.code());
    }
  }

  // -- the buffer -----------------------------------------------------------------------

  @Test
  void oldTimeOrderedIdsAreDroppedSegmentIdsKept() throws Exception {
    try (Client c = Client.builder(a.http()).batch(50).maxAgeMs(200).timeoutMs(SLOW_OK).build()) {
      long old = c.snowflake();
      long seg = c.segment("item");
      TestServers.sleep(300);
      long tMs = System.currentTimeMillis();
      long fresh = c.snowflake();
      assertTrue(Client.parse(fresh).unixMs() > tMs - 150);
      assertTrue(Client.parse(fresh).unixMs() > Client.parse(old).unixMs() + 250);
      assertEquals(49, c.buffered(Kind.SNOWFLAKE)); // a new batch, less this one
      assertEquals(seg + 1, c.segment("item")); // no age limit
      assertEquals(49, c.bufferStates().get(0).dropped());
    }
  }

  @Test
  void threadsShareOneClientAndTheBufferStaysBounded() throws Exception {
    int batch = 64;
    int below = 32;
    ConcurrentLinkedQueue<Long> ids = new ConcurrentLinkedQueue<>();
    ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
    AtomicLong most = new AtomicLong();
    try (Client c = Client.builder(a.resp(), b.http()).batch(batch).refillBelow(below).timeoutMs(SLOW_OK).build()) {
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 6; t++) {
        threads.add(new Thread(() -> {
          try {
            List<Long> mine = new ArrayList<>();
            for (int i = 0; i < 1500; i++) {
              mine.add(i % 2 == 1 ? c.snowflake() : c.segment("order"));
              most.accumulateAndGet(Math.max(c.buffered(Kind.SNOWFLAKE), c.buffered(Kind.SEGMENT, "order")), Math::max);
            }
            ids.addAll(mine);
          } catch (RuntimeException e) {
            errors.add(e.toString());
          }
        }));
      }
      threads.forEach(Thread::start);
      for (Thread t : threads) t.join(30_000);
    }
    assertEquals(List.of(), new ArrayList<>(errors));
    assertEquals(6 * 1500, ids.size());
    assertEquals(ids.size(), new HashSet<>(ids).size());
    assertTrue(most.get() <= batch + below, "most buffered: " + most.get());
  }

  @Test
  void busyThreadsDoNotStarveAWaitingOne() throws Exception {
    // More callers than a batch feeds: each refill hands its IDs to the callers waiting
    // for it first; otherwise a waiting caller can see every refill emptied by running
    // threads and give up after timeoutMs x servers.
    int threadCount = 8;
    int perThread = 15_000;
    ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
    Set<Long> ids = Collections.synchronizedSet(new HashSet<>());
    try (Client c = Client.builder(a.resp()).batch(16).timeoutMs(1000).build()) {
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < threadCount; t++) {
        threads.add(new Thread(() -> {
          try {
            long[] mine = new long[perThread];
            for (int i = 0; i < perThread; i++) mine[i] = c.snowflake();
            for (long x : mine) ids.add(x);
          } catch (RuntimeException e) {
            errors.add(e.toString());
          }
        }));
      }
      threads.forEach(Thread::start);
      for (Thread t : threads) t.join(60_000);
    }
    assertEquals(List.of(), new ArrayList<>(errors));
    assertEquals(threadCount * perThread, ids.size());
  }

  @Test
  void aRefillHandsItsIdsToTheCallersWaitingFirst() throws Exception {
    // A slow server: the first caller runs the refill, the second waits for it. The refill
    // brings two IDs: one for the caller that ran it, one for the caller waiting, even
    // though the first is back for another before the second has woken up.
    try (FakeServer fake = new FakeServer(http("200 OK", "{\"ids\":[\"1\",\"2\"]}"));
        Client c = Client.builder("http://127.0.0.1:" + fake.port()).batch(2).refillBelow(0).timeoutMs(SLOW_OK).build()) {
      fake.delayMs = 600;
      long[] first = new long[2];
      long[] second = new long[1];
      Thread runner = new Thread(() -> {
        first[0] = c.snowflake();
        first[1] = c.snowflake();
      });
      Thread waiter = new Thread(() -> second[0] = c.snowflake());
      runner.start();
      TestServers.sleep(100);
      waiter.start();
      runner.join(5000);
      waiter.join(5000);
      assertEquals(2, second[0], "the waiting caller got no ID of the refill it waited for");
      assertEquals(List.of(1L, 1L), toList(first)); // the runner's second call made a refill of its own
      assertEquals(2, fake.requests.get());
    }
  }

  @Test
  void closedClient() throws Exception {
    Client c = Client.builder(a.http()).timeoutMs(SLOW_OK).build();
    c.snowflake();
    c.close();
    IdforgeException e = assertThrows(IdforgeException.class, c::snowflake);
    assertEquals("closed", e.code());
    assertThrows(IdforgeException.class, () -> c.segment("order"));
    c.close(); // twice is fine

    // close() ends a call under way at once: its request to a stopped server, and a
    // caller waiting for that refill.
    Client d = Client.builder(a.http()).timeoutMs(SLOW_OK).build();
    ConcurrentLinkedQueue<String> codes = new ConcurrentLinkedQueue<>();
    a.sigstop();
    long took;
    try {
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 2; t++) {
        threads.add(new Thread(() -> {
          try {
            d.snowflake();
            codes.add("an ID");
          } catch (IdforgeException x) {
            codes.add(x.code());
          }
        }));
      }
      threads.forEach(Thread::start);
      TestServers.sleep(200);
      long t0 = System.nanoTime();
      d.close();
      for (Thread t : threads) t.join(5000);
      took = System.nanoTime() - t0;
    } finally {
      a.sigcont();
    }
    assertEquals(List.of("closed", "closed"), new ArrayList<>(codes));
    assertTrue(seconds(took) < 1.0, "close took " + seconds(took));
  }
}
