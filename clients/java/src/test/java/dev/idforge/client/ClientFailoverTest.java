package dev.idforge.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idforge.client.TestServers.FakeServer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The client against two real {@code idforge serve} processes and fake servers: both
 * protocols, and failover when a server is killed, restarted, stopped or slow, with the
 * back-off that follows (docs/clients.md, "The behaviour"). Each test mirrors one of the
 * Python client's tests/test_servers.py. Kept apart from the buffer's tests
 * (ClientBufferTest) and the errors' (ClientErrorsTest): one theme per file; the servers
 * and helpers are ClusterTestBase's.
 */
class ClientFailoverTest extends ClusterTestBase {
  static final Pattern UUID7 = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  static final Pattern ULID = Pattern.compile("[0-9A-HJKMNP-TV-Z]{26}");

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
}
