package dev.idforge.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idforge.client.IdforgeUnavailableException.ServerError;
import dev.idforge.client.TestServers.FakeServer;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * What a caller is told when servers fail or refuse, against real {@code idforge serve}
 * processes and fake servers: a full outage (the buffer serves it, then an unavailable
 * error names every server), broken and wrong-number answers (a failure: the next server),
 * a refill refused, and a wrong request (an error at once, no failover) (docs/clients.md,
 * "Errors"). Each test mirrors one of the Python client's tests/test_servers.py. Kept
 * apart from failover (ClientFailoverTest) and the buffer (ClientBufferTest): one theme
 * per file; the servers and helpers are ClusterTestBase's.
 */
class ClientErrorsTest extends ClusterTestBase {
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
}
