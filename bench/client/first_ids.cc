// The clients of bench/load/tags.py ("Many tags" in docs/benchmarks.md): one segment ID of
// each tag, asked for by N threads at once, each with its own C++ client
// (include/idforge/client.h) without a buffer, so every call is one request on a kept-open
// connection. Python's HTTP clients cost more per request than the store costs per range
// (about 4,000 requests/s from 8 threads on the 2-vCPU VM); these do not hide the server.
//
// A co-process: it reads "FROM TO" lines on stdin (tags PREFIX{FROM}..PREFIX{TO-1}) and
// answers each with "SECONDS LATE": the time from the first request to the last answer,
// and the requests that failed as unavailable and were asked again (a 503 when the range
// took longer than segment.wait_ms; the client does not tell it from a server that did
// not answer). Ten in a row for one tag, or any other error, end it with exit status 1
// and the error on stderr.
//
//   idforge_first_ids --server http://127.0.0.1:PORT [--clients 8] [--prefix t]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "idforge/client.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxLateTries = 10;

struct Args {
  std::string server;
  int clients = 8;
  std::string prefix = "t";
};

bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    if (name == "--server") {
      args.server = argv[i + 1];
    } else if (name == "--clients") {
      args.clients = std::atoi(argv[i + 1]);
    } else if (name == "--prefix") {
      args.prefix = argv[i + 1];
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !args.server.empty() && args.clients >= 1 && args.clients <= 256;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    std::fprintf(stderr,
                 "usage: idforge_first_ids --server http://HOST:PORT [--clients N (1..256)] "
                 "[--prefix t]\n");
    return 2;
  }
  std::vector<std::unique_ptr<idforge::Client>> clients;
  for (int i = 0; i < args.clients; ++i) {
    idforge::ClientOptions options;
    options.servers = {args.server};
    options.buffer = false;
    options.timeout_ms = 60000;
    options.backoff_ms = 0;  // a 503 is retried at once, not after a back-off
    options.max_backoff_ms = 0;
    idforge::Result<std::unique_ptr<idforge::Client>> client = idforge::Client::open(options);
    if (!client.ok()) {
      std::fprintf(stderr, "idforge_first_ids: %s\n", client.status().to_string().c_str());
      return 2;
    }
    clients.push_back(std::move(*client));
  }
  long from = 0;
  long to = 0;
  while (std::cin >> from >> to) {
    std::atomic<long> next{from};
    std::atomic<long> late{0};
    std::mutex error_mu;
    std::string error;
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> threads;
    for (auto& client : clients) {
      threads.emplace_back([&, c = client.get()] {
        for (long i = next++; i < to; i = next++) {
          const std::string tag = args.prefix + std::to_string(i);
          idforge::Status last;
          for (int tries = 0; tries < kMaxLateTries; ++tries) {
            idforge::Result<uint64_t> id = c->segment(tag);
            if (id.ok()) {
              last = idforge::Status();
              break;
            }
            last = id.status();
            if (last.code() != idforge::StatusCode::kUnavailable) break;
            ++late;
          }
          if (!last.ok()) {
            std::lock_guard<std::mutex> lock(error_mu);
            error = tag + ": " + last.to_string();
            next = to;
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (!error.empty()) {
      std::fprintf(stderr, "idforge_first_ids: %s\n", error.c_str());
      return 1;
    }
    std::printf("%.6f %ld\n", seconds, late.load());
    std::fflush(stdout);
  }
  return 0;
}
