package dev.idforge.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Server URLs and options, checked when the client is built: no server needed. */
class ClientOptionsTest {
  @Test
  void serverUrlsTakeTheDefaultPortsAndRefuseWhatIsNotHostAndPort() {
    try (Client c = new Client("http://idforge-a", "redis://idforge-b", "HTTP://[::1]:8080/", " redis://10.0.0.2:7000 ")) {
      assertEquals(List.of("http://idforge-a:80", "redis://idforge-b:6380", "http://[::1]:8080", "redis://10.0.0.2:7000"),
          c.servers());
    }
    for (String bad : List.of("https://a:1", "a:80", "http://", "http://:80", "http://a:0", "http://a:65536",
        "http://a:x", "http://a/v1", "http://a:1?x=1", "http://u@a:1", "http://::1:80", "http://[::1", "")) {
      assertThrows(IllegalArgumentException.class, () -> new Client(bad), bad);
    }
    assertThrows(IllegalArgumentException.class, () -> new Client());
    assertThrows(IllegalArgumentException.class, () -> new Client((String) null));
  }

  @Test
  void optionsAreChecked() {
    String url = "http://127.0.0.1:1";
    assertThrows(IllegalArgumentException.class, () -> Client.builder(url).timeoutMs(0).build());
    assertThrows(IllegalArgumentException.class, () -> Client.builder(url).batch(0).build());
    assertThrows(IllegalArgumentException.class, () -> Client.builder(url).batch(10).refillBelow(11).build());
    assertThrows(IllegalArgumentException.class, () -> Client.builder(url).refillBelow(-1).build());
    assertThrows(IllegalArgumentException.class, () -> Client.builder(url).maxAgeMs(-1).build());
    assertThrows(IllegalArgumentException.class, () -> Client.builder(url).segmentMaxAgeMs(-1).build());
    assertThrows(IllegalArgumentException.class, () -> Client.builder(url).backoffMs(-1).build());
    assertThrows(IllegalArgumentException.class, () -> Client.builder(url).backoffMs(500).maxBackoffMs(499).build());
    try (Client c = Client.builder(url).batch(10).refillBelow(0).backoffMs(0).maxBackoffMs(0).build()) {
      assertThrows(IllegalArgumentException.class, () -> c.segment(""));
      assertThrows(IllegalArgumentException.class, () -> c.segment(null));
      assertThrows(IllegalArgumentException.class, () -> c.snowflakes(-1));
      assertEquals(0, c.snowflakes(0).length);
      assertEquals(0, c.buffered(Kind.SNOWFLAKE));
      assertEquals(0, c.buffered(Kind.SEGMENT, "order"));
    }
  }
}
