// For the session fuzzers: one real IdService per process (static worker id 0/1, SQLite
// segments in a temporary directory, two tags) and a driver that feeds a session as the
// network runtime does (net_server.h), checking the Session contract on every step.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz_support.h"
#include "idforge/segment_store.h"
#include "server/net/session.h"
#include "server/service/id_service.h"

namespace idforge::fuzz {

inline constexpr const char* kAdminToken = "fuzz-token";

// Starts the service once; it lives until the process ends. Small request limits keep
// one execution fast (a count of 10000 UUIDs is a lot of work for one input).
inline server::IdService& fuzz_service() {
  static TempDir dir("idforge-fuzz");  // made first, so removed after the service stops
  static std::unique_ptr<server::IdService> service = [] {
    server::ServiceConfig config;
    config.data_dir = dir.path();
    config.registry_url = "static:0/1";
    config.store_urls = {"sqlite:" + dir.path() + "/segments.db"};
    config.max_count = 64;
    config.admin_token = kAdminToken;
    Result<std::unique_ptr<server::IdService>> started = server::IdService::start(config);
    if (!started.ok()) {
      std::fprintf(stderr, "cannot start IdService: %s\n", started.status().to_string().c_str());
      abort();
    }
    for (const char* name : {"order", "pay"}) {
      TagSpec spec;
      spec.name = name;
      spec.start = 1001;
      spec.step = 100;
      if (std::string_view(name) == "pay") spec.serial_template = "PAY{yyyyMMdd}{seq:08}";
      Result<TagInfo> created = (*started)->create_tag(spec);
      if (!created.ok()) {
        std::fprintf(stderr, "cannot create tag %s: %s\n", name,
                     created.status().to_string().c_str());
        abort();
      }
    }
    return std::move(started).value();
  }();
  return *service;
}

// What came out of one connection.
struct Transcript {
  std::string out;        // every byte the session wrote, in order
  bool closed = false;    // the session ended the connection (kClose)
  size_t unconsumed = 0;  // input bytes never consumed
};

// Feeds `input` to `session` as it arrives in pieces of `chunk` bytes (0: all at once):
// runs kBlocking jobs inline, "writes" the output on kFlush and kNeedMore, and reads the
// next piece after kNeedMore. At the end of the input an open connection times out
// (on_timeout), as the runtime's idle timer would do it.
inline Transcript drive(server::Session& session, std::string_view input, size_t chunk) {
  using Next = server::Session::Next;
  Transcript t;
  std::string in;   // received and not yet consumed
  std::string out;  // answers not yet written
  size_t arrived = 0;
  auto arrive = [&] {
    const size_t n = chunk == 0 ? input.size() - arrived : std::min(chunk, input.size() - arrived);
    in.append(input.substr(arrived, n));
    arrived += n;
  };
  arrive();
  // Each round consumes a byte, runs a job or takes a new piece; anything more is a
  // session that spins.
  const size_t max_rounds = 4 * input.size() + 64;
  for (size_t round = 0;; ++round) {
    IDFORGE_FUZZ_CHECK(round < max_rounds, "feed() keeps returning without progress");
    server::Session::Step step = session.feed(in, out);
    IDFORGE_FUZZ_CHECK(step.consumed <= in.size(), "consumed " + std::to_string(step.consumed) +
                                                       " of " + std::to_string(in.size()));
    in.erase(0, step.consumed);
    if (step.next == Next::kBlocking) {
      IDFORGE_FUZZ_CHECK(static_cast<bool>(step.blocking), "kBlocking without a job");
      IDFORGE_FUZZ_CHECK(step.consumed > 0, "a job answers a request of no bytes");
      step.blocking(out);
      continue;
    }
    t.out += out;
    if (step.next == Next::kFlush) {
      IDFORGE_FUZZ_CHECK(out.size() >= server::Session::kFlushBytes,
                         "kFlush with only " + std::to_string(out.size()) + " bytes to write");
      out.clear();
      continue;
    }
    out.clear();
    if (step.next == Next::kClose) {
      t.closed = true;
      break;
    }
    if (arrived == input.size()) break;
    arrive();
  }
  if (!t.closed) session.on_timeout(t.out);
  t.unconsumed = in.size();
  return t;
}

// How one input arrives: in pieces whose size follows from its bytes, so an input always
// arrives the same way (a crash replays) and the corpus files stay plain requests.
inline size_t chunk_for(std::string_view input) {
  static constexpr size_t kChunks[] = {0, 0, 1, 2, 3, 7, 16, 64, 1000};
  return kChunks[hash64(input) % (sizeof(kChunks) / sizeof(kChunks[0]))];
}

}  // namespace idforge::fuzz
