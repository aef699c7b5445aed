package dev.idforge.client;

import dev.idforge.client.TestServers.Cluster;
import dev.idforge.client.TestServers.ServerProc;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What the tests of the client against real servers share (ClientFailoverTest,
 * ClientBufferTest, ClientErrorsTest, split by theme from one class): two {@code idforge
 * serve}, A and B, started once for the whole run and stopped after the last test,
 * healed before and after each test, and the helpers those tests use. One cluster rather
 * than one per class: the tests ran against one before the split, and a start costs time.
 * Servers are started, stopped and killed from the main thread only: see
 * TestServers.ServerProc.start.
 */
@ExtendWith(ClusterTestBase.SharedCluster.class)
abstract class ClusterTestBase {
  /** Requests that are not about timeouts get a generous one: a busy machine must not make a starved server look dead. */
  static final int SLOW_OK = 3000;

  static Cluster cluster;
  ServerProc a;
  ServerProc b;

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

  /**
   * Starts the cluster before the first test class that needs it; JUnit closes it when the
   * whole run ends (a resource in the root context's store), on the main thread.
   */
  static final class SharedCluster implements BeforeAllCallback {
    record Running(Cluster cluster) implements ExtensionContext.Store.CloseableResource {
      @Override
      public void close() {
        cluster.close();
      }
    }

    @Override
    public void beforeAll(ExtensionContext context) {
      ExtensionContext.Store store = context.getRoot().getStore(ExtensionContext.Namespace.create(SharedCluster.class));
      cluster = store.getOrComputeIfAbsent(Running.class, key -> start(), Running.class).cluster();
    }

    private static Running start() {
      try {
        return new Running(new Cluster("order", "bulk", "stock", "item", "outage"));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  // -- helpers --------------------------------------------------------------------------

  /** The datacenter and worker of a Twitter-layout Snowflake ID: which server made it. */
  static List<Long> nodeOf(long snowflake) {
    ParsedId p = Client.parse(snowflake);
    return List.of(p.get("datacenter"), p.get("worker"));
  }

  static double seconds(long nanos) {
    return nanos / 1e9;
  }

  static List<Long> toList(long[] values) {
    List<Long> out = new ArrayList<>();
    for (long v : values) out.add(v);
    return out;
  }

  /** An HTTP answer with a JSON body, for a FakeServer to give. */
  static String http(String status, String body) {
    return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length()
        + "\r\n\r\n" + body;
  }
}
