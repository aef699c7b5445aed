// The failover guard's calls on PostgreSQL: the server's identity, the identity and the
// striping place recorded in table idforge_meta, durability settings, and the
// min_replicas check. Each change is one statement, so it is one transaction.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/thread_annotations.h"
#include "idforge/segment_store.h"
#include "store/postgres/postgres_client.h"

namespace idforge::store {

inline constexpr const char* kPgCreateMetaSql =
    "CREATE TABLE IF NOT EXISTS idforge_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";
inline constexpr const char* kPgMetaColumns = "key, value";

// "pg:SYSTEM_IDENTIFIER/tl:TIMELINE" from the system identifier and the name of the
// current WAL file (whose first 8 hex digits are the timeline). `shown` names the store
// in errors.
Result<std::string> pg_identity_text(const std::string& sysid, const std::string& walfile,
                                     const std::string& shown);

// "pg:SYSTEM_IDENTIFIER/tl:TIMELINE" and the recorded identity. Unavailable on a
// standby, which has no WAL position of its own to report (and cannot allocate anyway).
Result<StoreIdentity> pg_identity(PgClient& db);
Result<bool> pg_adopt_identity(PgClient& db, const IdentityChange& change);
Status pg_claim_place(PgClient& db, uint32_t index, uint32_t count);
Result<Durability> pg_durability(PgClient& db, uint32_t min_replicas);

// min_replicas=N: before an allocation, at least N standbys must be listed as
// synchronous (sync or quorum) in pg_stat_replication and synchronous_commit must make
// a commit wait for them. A good answer is reused for kInterval, so the check costs one
// round trip a second at most; a bad one is asked again at the next allocation.
class PgReplicaCheck {
 public:
  static constexpr auto kInterval = std::chrono::seconds(1);

  explicit PgReplicaCheck(uint32_t wanted) : wanted_(wanted) {}
  uint32_t wanted() const { return wanted_; }
  // Ok, or Unavailable saying what is missing.
  Status check(PgClient& db) IDFORGE_EXCLUDES(mu_);

 private:
  const uint32_t wanted_;
  Mutex mu_;
  bool good_ IDFORGE_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point good_at_ IDFORGE_GUARDED_BY(mu_);
};

}  // namespace idforge::store
