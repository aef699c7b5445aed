#include "store/postgres/postgres_meta.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "store/store_common.h"
#include "url/url_options.h"

namespace idforge::store {
namespace {

// On a standby pg_current_wal_lsn() fails; the CASE keeps that from failing the whole
// statement so the answer can say what the server is.
constexpr const char* kIdentitySql =
    "SELECT (SELECT system_identifier::text FROM pg_control_system()),"
    " CASE WHEN pg_is_in_recovery() THEN NULL"
    " ELSE pg_walfile_name(pg_current_wal_lsn()) END,"
    " (SELECT value FROM idforge_meta WHERE key = 'identity')";

// Claiming the recorded identity: $1 = expected, $2 = the identity to adopt. With
// nothing recorded ($1 = '') the row may be missing, so it is inserted; a concurrent
// insert makes this one wait, then the WHERE of DO UPDATE sees the winner's value and
// claims nothing. With an identity expected, the UPDATE waits for any concurrent
// claimer's row lock and re-checks the value against the committed row.
constexpr const char* kClaimFromNothing =
    "INSERT INTO idforge_meta (key, value) VALUES ('identity', $2)"
    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
    " WHERE idforge_meta.value = $1 RETURNING 1";
constexpr const char* kClaimFromExpected =
    "UPDATE idforge_meta SET value = $2 WHERE key = 'identity' AND value = $1 RETURNING 1";

// The rest of the one statement: $3 = tags, $4 = their floors, $5 = margin, $6 = now.
// The bump runs only if the claim returned a row. A max_id past 2^63-1 fails the whole
// statement (SQLSTATE 22003), the claim included. A row a concurrent allocation changed
// is re-read by the UPDATE before it is written, so the bump starts from the newest
// max_id.
constexpr const char* kBumpSql =
    " ), floors AS (SELECT * FROM unnest($3::text[], $4::bigint[]) AS f(tag, floor)),"
    " bumped AS (UPDATE idforge_segments s"
    " SET max_id = GREATEST(s.max_id,"
    " COALESCE((SELECT floor FROM floors WHERE floors.tag = s.tag), s.max_id)) + $5::bigint,"
    " updated_at = $6::bigint"
    " WHERE EXISTS (SELECT 1 FROM claimed) RETURNING 1)"
    " SELECT (SELECT count(*) FROM claimed), (SELECT count(*) FROM bumped)";

// Records the place unless one is; returns the recorded one either way (the no-op
// update makes the existing row come back from RETURNING).
constexpr const char* kPlaceSql =
    "INSERT INTO idforge_meta (key, value) VALUES ('place', $1)"
    " ON CONFLICT (key) DO UPDATE SET value = idforge_meta.value RETURNING value";

constexpr const char* kDurabilitySql =
    "SELECT current_setting('fsync'), current_setting('synchronous_commit'),"
    " current_setting('synchronous_standby_names')";

// Without pg_read_all_stats, pg_stat_replication shows other roles' walsenders with
// their columns NULL; those are counted apart so the error can say so.
constexpr const char* kReplicasSql =
    "SELECT current_setting('synchronous_commit'),"
    " count(*) FILTER (WHERE sync_state IN ('sync', 'quorum')),"
    " count(*) FILTER (WHERE sync_state IS NULL), count(*)"
    " FROM pg_stat_replication";

}  // namespace

Result<std::string> pg_identity_text(const std::string& sysid, const std::string& walfile,
                                     const std::string& shown) {
  uint32_t timeline = 0;
  const char* end = walfile.data() + std::min<size_t>(8, walfile.size());
  const auto [stop, ec] = std::from_chars(walfile.data(), end, timeline, 16);
  if (sysid.empty() || walfile.size() != 24 || ec != std::errc() || stop != end) {
    return Status::IoError(fmt::format("{}: unexpected system identifier '{}' or WAL file '{}'",
                                       shown, sysid, walfile));
  }
  return fmt::format("pg:{}/tl:{}", sysid, timeline);
}

Result<StoreIdentity> pg_identity(PgClient& db) {
  IDFORGE_ASSIGN_OR_RETURN(Answer got, db.run(kIdentitySql, {}, "reading the server's identity"));
  const PGresult* r = got.result.get();
  if (PQgetisnull(r, 0, 1)) {
    return Status::Unavailable(fmt::format(
        "{}: the server is a standby (in recovery); the store needs the primary", db.shown()));
  }
  IDFORGE_ASSIGN_OR_RETURN(std::string current,
                           pg_identity_text(got.text(0, 0), got.text(0, 1), db.shown()));
  StoreIdentity id;
  id.current = std::move(current);
  id.recorded = PQgetisnull(r, 0, 2) ? "" : got.text(0, 2);
  return id;
}

Result<bool> pg_adopt_identity(PgClient& db, const IdentityChange& change) {
  if (change.adopt.empty()) return Status::InvalidArgument("the identity to adopt is empty");
  if (change.margin > kMaxId) {
    return Status::OutOfRange(fmt::format("margin {} is larger than 2^63-1", change.margin));
  }
  std::string tags = "{";
  std::string floors = "{";
  for (const auto& [tag, floor] : change.floors) {
    // Names are checked, so they need no quoting inside the array literal.
    IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
    if (floor > kMaxId) {
      return Status::OutOfRange(
          fmt::format("the floor {} of tag '{}' is larger than 2^63-1", floor, tag));
    }
    if (tags.size() > 1) {
      tags += ',';
      floors += ',';
    }
    tags += '"' + tag + '"';
    floors += std::to_string(floor);
  }
  tags += '}';
  floors += '}';
  const std::string sql =
      fmt::format("WITH claimed AS ({}{}",
                  change.expected.empty() ? kClaimFromNothing : kClaimFromExpected, kBumpSql);
  std::string sqlstate;
  Result<Answer> got = db.run(sql.c_str(),
                              {change.expected, change.adopt, tags, floors,
                               std::to_string(change.margin), std::to_string(now_unix_ms())},
                              "adopting a new identity", &sqlstate);
  if (!got.ok()) {
    if (sqlstate == "22003") {  // numeric_value_out_of_range
      return Status::OutOfRange(fmt::format(
          "{}: moving the tags forward by {} would pass 2^63-1 for some tag; nothing changed",
          db.shown(), change.margin));
    }
    return got.status();
  }
  return got->text(0, 0) == "1";
}

Status pg_claim_place(PgClient& db, uint32_t index, uint32_t count) {
  if (count < 1 || index >= count) {
    return Status::InvalidArgument(
        fmt::format("store place {} of {}: the index must be below the count", index, count));
  }
  const std::string wanted = place_text(index, count);
  IDFORGE_ASSIGN_OR_RETURN(Answer got, db.run(kPlaceSql, {wanted}, "recording the store's place"));
  return check_place(db.shown(), got.text(0, 0), index, count);
}

Result<Durability> pg_durability(PgClient& db, uint32_t min_replicas) {
  IDFORGE_ASSIGN_OR_RETURN(Answer got,
                           db.run(kDurabilitySql, {}, "reading the durability settings"));
  const std::string fsync = got.text(0, 0);
  const std::string commit = got.text(0, 1);
  const std::string standbys = got.text(0, 2);
  Durability d;
  d.summary = fmt::format("fsync={} synchronous_commit={} synchronous_standby_names='{}'", fsync,
                          commit, standbys);
  if (min_replicas > 0) d.summary += fmt::format(" min_replicas={}", min_replicas);
  // Every synchronous_commit value but `off` (on, local, remote_write, remote_apply)
  // flushes the commit's WAL to the server's own disk before the commit returns; they
  // differ only in what they also wait for from standbys. So for a crash of this
  // server, all but `off` are safe. A failover to a standby that had not received the
  // last commits is a different loss: the identity check (new timeline) and
  // min_replicas are what cover it.
  if (fsync != "on") {
    d.safe = false;
    d.risk =
        "fsync is off: a crash of the database machine can lose or corrupt committed "
        "ranges, which would be handed out again; set fsync = on";
  } else if (commit == "off") {
    d.safe = false;
    d.risk =
        "synchronous_commit is off: a crash of the server forgets the last commits "
        "(up to 3 x wal_writer_delay), and those ranges would be handed out again; set "
        "synchronous_commit = on for the idforge database or role";
  }
  return d;
}

Status PgReplicaCheck::check(PgClient& db) {
  if (wanted_ == 0) return Status::Ok();
  {
    MutexLock lock(mu_);
    if (good_ && std::chrono::steady_clock::now() - good_at_ < kInterval) return Status::Ok();
  }
  IDFORGE_ASSIGN_OR_RETURN(Answer got,
                           db.run(kReplicasSql, {}, "checking the synchronous standbys"));
  const std::string commit = got.text(0, 0);
  Result<int64_t> synced = parse_pg_int(got.text(0, 1));
  Result<int64_t> hidden = parse_pg_int(got.text(0, 2));
  Result<int64_t> senders = parse_pg_int(got.text(0, 3));
  if (!synced.ok() || !hidden.ok() || !senders.ok()) return synced.status();
  const std::string head =
      fmt::format("{}: min_replicas={} and no range is taken: ", db.shown(), wanted_);
  if (commit != "on" && commit != "remote_write" && commit != "remote_apply") {
    return Status::Unavailable(head + fmt::format("synchronous_commit is '{}', so a commit would "
                                                  "not wait for any standby (use on, "
                                                  "remote_write or remote_apply)",
                                                  commit));
  }
  if (*synced < wanted_) {
    if (*hidden > 0) {
      return Status::Unavailable(
          head + fmt::format("{} of the {} standbys in pg_stat_replication cannot be seen by "
                             "this role (grant it pg_read_all_stats or pg_monitor)",
                             *hidden, *senders));
    }
    return Status::Unavailable(
        head + fmt::format("only {} synchronous standbys are connected ({} in "
                           "pg_stat_replication; synchronous_standby_names must name them)",
                           *synced, *senders));
  }
  MutexLock lock(mu_);
  good_ = true;
  good_at_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

}  // namespace idforge::store
