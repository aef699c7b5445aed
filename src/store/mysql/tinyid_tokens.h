// Tinyid's access tokens (table tiny_id_token: token, biz_type), so idforge's Tinyid
// routes accept the tokens Tinyid clients already send (docs/migrating.md). A token may
// fetch IDs of the business types its rows name, as in Tinyid. The table is read at
// open() and again every minute by a thread of its own, as Tinyid reads it; a failed
// reload keeps the tokens read last.
//
// Thread-safe. can_visit() never blocks: it reads the map published by the last load.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "core/thread_annotations.h"
#include "idforge/status.h"

namespace idforge::store {

class TinyidTokens {
 public:
  using Map = std::map<std::string, std::set<std::string, std::less<>>, std::less<>>;

  // Reads tiny_id_token from the MySQL database at `url` (mysql://...; the URL's table
  // option is ignored) and starts reloading it every `every`.
  static Result<std::unique_ptr<TinyidTokens>> open(
      std::string_view url, std::chrono::milliseconds every = std::chrono::minutes(1));
  ~TinyidTokens();
  TinyidTokens(const TinyidTokens&) = delete;
  TinyidTokens& operator=(const TinyidTokens&) = delete;

  // Whether `token` may fetch IDs of `biz_type`. Empty ones never may.
  bool can_visit(std::string_view biz_type, std::string_view token) const IDFORGE_EXCLUDES(mu_);
  size_t size() const IDFORGE_EXCLUDES(mu_);  // tokens known
  const std::string& describe() const { return shown_; }
  // Reads the table now. On failure the tokens read last stay in use.
  Status reload() IDFORGE_EXCLUDES(mu_);

 private:
  struct Impl;
  TinyidTokens(std::unique_ptr<Impl> impl, std::string shown);
  void reloader(std::chrono::milliseconds every) IDFORGE_EXCLUDES(mu_);

  std::unique_ptr<Impl> impl_;
  const std::string shown_;
  mutable Mutex mu_;
  std::shared_ptr<const Map> map_ IDFORGE_GUARDED_BY(mu_);
  bool stopping_ IDFORGE_GUARDED_BY(mu_) = false;
  std::condition_variable stop_cv_;
  std::thread thread_;
};

}  // namespace idforge::store
