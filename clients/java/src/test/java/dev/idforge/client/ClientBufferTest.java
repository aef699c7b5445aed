package dev.idforge.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idforge.client.TestServers.FakeServer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The client's buffer against real {@code idforge serve} processes and fake servers:
 * background refills and their bound, the age limit, threads sharing one client, the
 * hand-off of a refill's IDs to the callers waiting for it, and close() (docs/clients.md,
 * "The behaviour"). Each test mirrors one of the Python client's tests/test_servers.py.
 * Kept apart from failover (ClientFailoverTest) and errors (ClientErrorsTest): one theme
 * per file; the servers and helpers are ClusterTestBase's.
 */
class ClientBufferTest extends ClusterTestBase {
  // -- background refills ---------------------------------------------------------------

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

  // -- the buffer and threads -----------------------------------------------------------

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
