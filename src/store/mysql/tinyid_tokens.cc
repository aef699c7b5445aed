#include "store/mysql/tinyid_tokens.h"

#include <fmt/format.h>

#include <utility>

#include "store/mysql/mysql_client.h"
#include "store/mysql/mysql_url.h"

namespace idforge::store {

struct TinyidTokens::Impl {
  explicit Impl(MysqlUrl url) : db(std::move(url)) {}
  MysqlClient db;
};

TinyidTokens::TinyidTokens(std::unique_ptr<Impl> impl, std::string shown)
    : impl_(std::move(impl)), shown_(std::move(shown)), map_(std::make_shared<Map>()) {}

Result<std::unique_ptr<TinyidTokens>> TinyidTokens::open(std::string_view url,
                                                         std::chrono::milliseconds every) {
  IDFORGE_ASSIGN_OR_RETURN(MysqlUrl parsed, parse_mysql_url(url));
  parsed.pool = 1;
  std::string shown = parsed.shown;
  std::unique_ptr<TinyidTokens> tokens(
      new TinyidTokens(std::make_unique<Impl>(std::move(parsed)), std::move(shown)));
  IDFORGE_RETURN_IF_ERROR(tokens->reload());
  tokens->thread_ = std::thread([t = tokens.get(), every] { t->reloader(every); });
  return tokens;
}

TinyidTokens::~TinyidTokens() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TinyidTokens::reloader(std::chrono::milliseconds every) {
  MutexLock lock(mu_);
  for (;;) {
    const auto until = std::chrono::steady_clock::now() + every;
    while (!stopping_ && lock.wait_until(stop_cv_, until)) {
    }
    if (stopping_) return;
    lock.unlock();
    (void)reload();  // the tokens read last stay in use
    lock.lock();
  }
}

Status TinyidTokens::reload() {
  IDFORGE_ASSIGN_OR_RETURN(MysqlAnswer got,
                           impl_->db.run("SELECT token, biz_type FROM tiny_id_token",
                                         "reading Tinyid's tokens (table tiny_id_token)"));
  auto next = std::make_shared<Map>();
  for (size_t i = 0; i < got.rows.size(); ++i) {
    (*next)[got.text(i, 0)].insert(got.text(i, 1));
  }
  MutexLock lock(mu_);
  map_ = std::move(next);
  return Status::Ok();
}

bool TinyidTokens::can_visit(std::string_view biz_type, std::string_view token) const {
  if (biz_type.empty() || token.empty()) return false;
  std::shared_ptr<const Map> map;
  {
    MutexLock lock(mu_);
    map = map_;
  }
  const auto it = map->find(token);
  return it != map->end() && it->second.contains(biz_type);
}

size_t TinyidTokens::size() const {
  MutexLock lock(mu_);
  return map_->size();
}

}  // namespace idforge::store
