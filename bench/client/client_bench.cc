// IDs per second through the C++ client (include/idforge/client.h), each beside its
// baseline in the same run (docs/clients.md; issue: "Benchmark"):
//
//   with the buffer     Client::snowflake() / segment()  vs  a plain in-process counter
//                                                             (std::atomic fetch_add)
//   without the buffer  Client::snowflake(), buffer=false  vs  one RESP request per ID on a
//                                                             raw socket, as redis-cli sends
//
// against a real `idforge serve` it starts (loopback, its own data dir), or the one given.
//
//   idforge_client_bench [--seconds S] [--threads N] [--idforge BIN | --server HOST:HTTP:RESP]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client_cluster.h"
#include "idforge/client.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Figure {
  double ids_per_second = 0;
  uint64_t ids = 0;
  bool failed = false;
};

// Runs `one` (which returns false on an error) in `threads` threads for `seconds`.
Figure measure(double seconds, int threads, const std::function<bool()>& one) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> total{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  const Clock::time_point start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 64; ++i) {
          if (!one()) {
            failed = true;
            stop = true;
            break;
          }
          ++n;
        }
      }
      total += n;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  return {static_cast<double>(total.load()) / elapsed, total.load(), failed.load()};
}

void row(const char* what, const Figure& f, const Figure* baseline) {
  std::printf("  %-52s %14.0f IDs/s", what, f.ids_per_second);
  if (baseline != nullptr && baseline->ids_per_second > 0) {
    std::printf("   %6.1f%% of the baseline", 100.0 * f.ids_per_second / baseline->ids_per_second);
  }
  std::printf("%s\n", f.failed ? "   (an error stopped it)" : "");
}

// One `ID.SNOWFLAKE` per ID on a blocking socket, as redis-cli sends it: a request, then
// its answer, then the next.
class RawResp {
 public:
  explicit RawResp(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawResp() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool next() {
    static constexpr char kRequest[] = "*1\r\n$12\r\nID.SNOWFLAKE\r\n";
    if (fd_ < 0 || ::send(fd_, kRequest, sizeof kRequest - 1, MSG_NOSIGNAL) < 0) return false;
    char buf[64];
    size_t got = 0;
    for (;;) {  // ":910499571847892992\r\n"
      const ssize_t n = ::recv(fd_, buf + got, sizeof buf - got, 0);
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
      if (got >= 2 && buf[got - 2] == '\r' && buf[got - 1] == '\n') return buf[0] == ':';
      if (got == sizeof buf) return false;
    }
  }

 private:
  int fd_ = -1;
};

std::unique_ptr<idforge::Client> open(const std::string& url, bool buffer, uint64_t batch = 256) {
  idforge::ClientOptions options;
  options.servers = {url};
  options.buffer = buffer;
  options.batch = batch;
  options.timeout_ms = 5000;
  idforge::Result<std::unique_ptr<idforge::Client>> client = idforge::Client::open(options);
  if (!client.ok()) {
    std::fprintf(stderr, "client_bench: %s\n", client.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(client).value();
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 2;
  int threads = 4;
  std::string bin = IDFORGE_BIN;
  std::string server;  // HOST:HTTP_PORT:RESP_PORT of a running server
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 < argc && arg == "--seconds") {
      seconds = std::atof(argv[++i]);
    } else if (i + 1 < argc && arg == "--threads") {
      threads = std::atoi(argv[++i]);
    } else if (i + 1 < argc && arg == "--idforge") {
      bin = argv[++i];
    } else if (i + 1 < argc && arg == "--server") {
      server = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: idforge_client_bench [--seconds S] [--threads N] "
                   "[--idforge BIN | --server 127.0.0.1:HTTP_PORT:RESP_PORT]\n");
      return 2;
    }
  }

  std::unique_ptr<idforge::client_test::Cluster> cluster;
  std::string http;
  std::string resp;
  uint16_t resp_port = 0;
  if (server.empty()) {
    std::string error;
    cluster = idforge::client_test::Cluster::start(bin, {"bench"}, &error);
    if (!cluster) {
      std::fprintf(stderr, "client_bench: %s\n", error.c_str());
      return 1;
    }
    cluster->b().terminate();  // one server: the figures are one server's
    http = cluster->a().http();
    resp = cluster->a().resp();
    resp_port = static_cast<uint16_t>(std::stoi(resp.substr(resp.rfind(':') + 1)));
  } else {
    const size_t first = server.find(':');
    const size_t second = server.rfind(':');
    http = "http://" + server.substr(0, second);
    resp = "redis://" + server.substr(0, first) + server.substr(second);
    resp_port = static_cast<uint16_t>(std::stoi(server.substr(second + 1)));
  }
  std::printf("idforge client benchmark: %.1f s per figure, server %s / %s\n", seconds,
              http.c_str(), resp.c_str());

  std::atomic<uint64_t> counter{0};
  const auto count = [&] {
    counter.fetch_add(1, std::memory_order_relaxed);
    return true;
  };
  std::unique_ptr<idforge::Client> buffered = open(resp, true);
  std::unique_ptr<idforge::Client> buffered_http = open(http, true);
  const auto from = [](idforge::Client* c) { return [c] { return c->snowflake().ok(); }; };

  std::printf("\nwith the buffer (batch 256), 1 thread:\n");
  const Figure counter_1 = measure(seconds, 1, count);
  row("in-process counter (std::atomic fetch_add)", counter_1, nullptr);
  row("Client::snowflake(), redis://", measure(seconds, 1, from(buffered.get())), &counter_1);
  row("Client::snowflake(), http://", measure(seconds, 1, from(buffered_http.get())), &counter_1);
  row("Client::segment(\"bench\"), redis://",
      measure(seconds, 1, [&] { return buffered->segment("bench").ok(); }), &counter_1);
  // One refill is in flight at a time: with small batches a fast caller waits for it.
  std::unique_ptr<idforge::Client> big = open(resp, true, 10000);
  row("Client::segment(\"bench\"), redis://, batch 10000",
      measure(seconds, 1, [&] { return big->segment("bench").ok(); }), &counter_1);

  std::printf("\nwith the buffer (batch 256), %d threads sharing one client:\n", threads);
  const Figure counter_n = measure(seconds, threads, count);
  row("in-process counter (std::atomic fetch_add)", counter_n, nullptr);
  row("Client::snowflake(), redis://", measure(seconds, threads, from(buffered.get())), &counter_n);

  std::printf("\nwithout the buffer, 1 thread (one request per ID):\n");
  RawResp raw(resp_port);
  const Figure raw_1 = measure(seconds, 1, [&] { return raw.next(); });
  row("raw socket, ID.SNOWFLAKE per ID (redis-cli style)", raw_1, nullptr);
  std::unique_ptr<idforge::Client> direct = open(resp, false);
  std::unique_ptr<idforge::Client> direct_http = open(http, false);
  row("Client::snowflake(), buffer=false, redis://", measure(seconds, 1, from(direct.get())),
      &raw_1);
  row("Client::snowflake(), buffer=false, http://", measure(seconds, 1, from(direct_http.get())),
      &raw_1);
  return 0;
}
