// The failover guard's calls on MySQL and MariaDB: the server's identity, the identity,
// GTID position and striping place recorded in table idforge_meta, and the durability
// settings. Keys carry the table's name (`identity:leaf_alloc`), so stores on several
// tables of one database each keep their own record.
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "store/mysql/mysql_tables.h"
#include "store/store_common.h"
#include "url/url_options.h"

namespace idforge::store {
namespace {

std::string key(const MysqlTable& t, std::string_view what) {
  return fmt::format("{}:{}", what, t.name);
}

// The GTID position, where the server keeps GTIDs: MariaDB's binlog position, MySQL's
// executed set. "" when GTIDs are off or the variable is unknown.
std::string gtid_sql(bool mariadb) {
  return mariadb ? "@@GLOBAL.gtid_binlog_pos" : "@@GLOBAL.gtid_executed";
}

}  // namespace

const char* mysql_identity_sql(bool mariadb) {
  // MariaDB has no server_uuid. Its server_id is unique among the servers of one
  // replication topology (replication requires it), so a promoted replica is a new
  // identity; host and port tell apart two standalone servers left at server_id 1.
  return mariadb ? "CONCAT('mariadb:', @@GLOBAL.server_id, '@', @@hostname, ':', @@port)"
                 : "CONCAT('mysql:', @@GLOBAL.server_uuid)";
}

Result<StoreIdentity> mysql_identity(MysqlTable& t) {
  StoreIdentity id;
  IDFORGE_RETURN_IF_ERROR(t.db.with_connection([&](MysqlConn& conn) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(
        MysqlAnswer got,
        exec(t.db, conn,
             fmt::format("SELECT {}, @@GLOBAL.read_only, (SELECT v FROM idforge_meta WHERE k = {})",
                         mysql_identity_sql(t.mariadb), conn.quote(key(t, "identity"))),
             "reading the server's identity"));
    if (got.text(0, 1) == "1") {
      return Status::Unavailable(fmt::format(
          "{}: the server is read-only (a replica?); the store needs the primary", t.db.shown()));
    }
    id.current = got.text(0, 0);
    id.recorded = got.text(0, 2);
    return Status::Ok();
  }));
  return id;
}

Result<bool> mysql_adopt_identity(MysqlTable& t, const IdentityChange& change) {
  if (change.adopt.empty()) return Status::InvalidArgument("the identity to adopt is empty");
  if (change.margin > kMaxId) {
    return Status::OutOfRange(fmt::format("margin {} is larger than 2^63-1", change.margin));
  }
  for (const auto& [tag, floor] : change.floors) {
    IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
    if (floor > kMaxId) {
      return Status::OutOfRange(
          fmt::format("the floor {} of tag '{}' is larger than 2^63-1", floor, tag));
    }
  }
  const MysqlColumns& c = mysql_columns(t.scheme);
  const std::string doing = "adopting a new identity";
  bool applied = false;
  Status st = t.db.transaction(
      [&](MysqlConn& conn) -> Status {
        const std::string k = conn.quote(key(t, "identity"));
        // The row lock on the record makes concurrent adopters take turns; the second
        // sees the first one's identity and changes nothing.
        IDFORGE_ASSIGN_OR_RETURN(
            MysqlAnswer seen,
            exec(t.db, conn, fmt::format("SELECT v FROM idforge_meta WHERE k = {} FOR UPDATE", k),
                 doing));
        if (seen.rows.empty()) {
          if (!change.expected.empty()) return Status::Ok();
          MysqlAnswer ins = conn.run(fmt::format("INSERT INTO idforge_meta (k, v) VALUES ({}, {})",
                                                 k, conn.quote(change.adopt)));
          if (ins.error == kErDupEntry) return Status::Ok();  // another node was first
          if (!ins.ok()) return t.db.error(ins, doing);
        } else {
          if (seen.text(0, 0) != change.expected) return Status::Ok();
          IDFORGE_RETURN_IF_ERROR(exec(t.db, conn,
                                       fmt::format("UPDATE idforge_meta SET v = {} WHERE k = {}",
                                                   conn.quote(change.adopt), k),
                                       doing));
        }
        // Each tag first rises to the caller's floor (what it served is below the next
        // range: in the next-free convention max_id must pass the floor), then all move
        // by the margin. Tinyid's version moves too, so its servers re-read the row.
        const uint64_t past = stores_next_free(t.scheme) ? 1 : 0;
        for (const auto& [tag, floor] : change.floors) {
          IDFORGE_RETURN_IF_ERROR(
              exec(t.db, conn,
                   fmt::format("UPDATE {0} SET `{1}` = GREATEST(`{1}`, {2}) WHERE `{3}` = {4}",
                               t.quoted, c.max_id, floor + past, c.tag, conn.quote(tag)),
                   doing));
        }
        std::string set = fmt::format("`{0}` = `{0}` + {1}", c.max_id, change.margin);
        if (t.scheme == MysqlScheme::kTinyid) set += ", version = version + 1";
        MysqlAnswer bump = conn.run(fmt::format("UPDATE {} SET {}", t.quoted, set));
        if (bump.error == kErDataOutOfRange || bump.error == kErWarnOutOfRange) {
          return Status::OutOfRange(fmt::format(
              "{}: moving the tags forward by {} would pass 2^63-1 for some tag; nothing changed",
              t.db.shown(), change.margin));
        }
        if (!bump.ok()) return t.db.error(bump, doing);
        // The GTID position at the change, for an operator reading the record.
        IDFORGE_RETURN_IF_ERROR(exec(
            t.db, conn,
            fmt::format("INSERT INTO idforge_meta (k, v) VALUES ({0}, LEFT(COALESCE({1}, ''), 255))"
                        " ON DUPLICATE KEY UPDATE v = LEFT(COALESCE({1}, ''), 255)",
                        conn.quote(key(t, "gtid")), gtid_sql(t.mariadb)),
            doing));
        applied = true;
        return Status::Ok();
      },
      doing);
  IDFORGE_RETURN_IF_ERROR(st);
  return applied;
}

Status mysql_claim_place(MysqlTable& t, uint32_t index, uint32_t count) {
  if (count < 1 || index >= count) {
    return Status::InvalidArgument(
        fmt::format("store place {} of {}: the index must be below the count", index, count));
  }
  const std::string wanted = place_text(index, count);
  std::string recorded;
  IDFORGE_RETURN_IF_ERROR(t.db.with_connection([&](MysqlConn& conn) -> Status {
    const std::string k = conn.quote(key(t, "place"));
    IDFORGE_RETURN_IF_ERROR(
        exec(t.db, conn,
             fmt::format("INSERT IGNORE INTO idforge_meta (k, v) VALUES ({}, {})", k,
                         conn.quote(wanted)),
             "recording the store's place"));
    IDFORGE_ASSIGN_OR_RETURN(
        MysqlAnswer got, exec(t.db, conn, fmt::format("SELECT v FROM idforge_meta WHERE k = {}", k),
                              "recording the store's place"));
    recorded = got.text(0, 0);
    return Status::Ok();
  }));
  return check_place(t.db.shown(), recorded, index, count);
}

Result<Durability> mysql_durability(MysqlTable& t) {
  MysqlAnswer got;
  IDFORGE_RETURN_IF_ERROR(t.db.with_connection([&](MysqlConn& conn) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(
        got,
        exec(t.db, conn,
             fmt::format("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit, @@GLOBAL.sync_binlog,"
                         " @@GLOBAL.log_bin, COALESCE({}, ''), (SELECT ENGINE FROM"
                         " information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND"
                         " TABLE_NAME = {})",
                         gtid_sql(t.mariadb), conn.quote(t.name)),
             "reading the durability settings"));
    return Status::Ok();
  }));
  const std::string flush = got.text(0, 0);
  const std::string sync_binlog = got.text(0, 1);
  const bool log_bin = got.text(0, 2) == "1";
  const std::string gtid = got.text(0, 3);
  const std::string engine = got.text(0, 4);
  Durability d;
  d.summary = fmt::format("innodb_flush_log_at_trx_commit={} sync_binlog={} log_bin={} engine={}",
                          flush, sync_binlog, log_bin ? "ON" : "OFF", engine);
  if (!gtid.empty()) d.summary += " gtid=" + gtid;
  // 1 writes and flushes the redo log at every commit; 0 and 2 flush once a second, so
  // a crash of the machine (2) or of the server (0) forgets the last commits. With the
  // binary log on, a commit is durable only if its binlog events are too: recovery rolls
  // back prepared transactions missing from the binlog.
  if (engine != "InnoDB") {
    d.safe = false;
    d.risk = fmt::format(
        "table {} uses the {} engine, whose writes are not transactional or not crash-safe; "
        "ALTER TABLE {} ENGINE=InnoDB",
        t.name, engine.empty() ? "unknown" : engine, t.name);
  } else if (flush != "1") {
    d.safe = false;
    d.risk = fmt::format(
        "innodb_flush_log_at_trx_commit={}: a crash forgets up to a second of commits, and "
        "those ranges would be handed out again; set innodb_flush_log_at_trx_commit=1",
        flush);
  } else if (log_bin && sync_binlog != "1") {
    d.safe = false;
    d.risk = fmt::format(
        "sync_binlog={} with the binary log on: after a crash of the machine, recovery rolls "
        "back commits whose binlog events were lost, and those ranges would be handed out "
        "again; set sync_binlog=1",
        sync_binlog);
  }
  return d;
}

}  // namespace idforge::store
