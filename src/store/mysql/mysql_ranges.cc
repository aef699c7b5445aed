// Ranges and tags on the four tables a MySQL store can use. Every change of a tag's
// max_id happens under that row's InnoDB lock, which is the only coordination with
// other idforge processes and with Leaf or Tinyid servers on the same rows:
//   idforge_segments, leaf_alloc, SEQUENCE: one short transaction, UPDATE then SELECT of
//     the same row (READ COMMITTED, the row still locked by the UPDATE).
//   tiny_id_info: Tinyid's optimistic update, `... WHERE id AND max_id AND version`,
//     retried when another server moved the row first.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "store/mysql/mysql_tables.h"
#include "store/store_common.h"

namespace idforge::store {
namespace {

constexpr MysqlColumns kIdforgeColumns{"tag",         "max_id",     "step",
                                       "description", "updated_at", "serial_template"};
constexpr MysqlColumns kLeafColumns{"biz_tag", "max_id", "step", "description", "update_time", ""};
constexpr MysqlColumns kTinyidColumns{
    "biz_type", "max_id", "step", "''", "update_time", "id, delta, remainder, version, begin_id"};
constexpr MysqlColumns kSequenceColumns{"table_name", "next_id", "", "", "", ""};

// The numbers a scheme's max_id stands for: the highest handed out so far.
uint64_t highest_of(MysqlScheme scheme, int64_t stored) {
  if (!stores_next_free(scheme)) return static_cast<uint64_t>(stored);
  return stored > 0 ? static_cast<uint64_t>(stored - 1) : 0;
}

Status out_of_ids(const MysqlTable& t, std::string_view tag) {
  return Status::OutOfRange(fmt::format(
      "tag '{}' has run out of IDs in {}: max_id plus step passes 2^63-1", tag, t.db.shown()));
}

Status hand_edited(const MysqlTable& t, std::string_view tag, std::string_view why) {
  return Status::IoError(
      fmt::format("{}: tag '{}' in table {} {} (edited by hand?)", t.db.shown(), tag, t.name, why));
}

// The SELECT list of a tag row: tag, max_id, step, description, updated (ms), then the
// scheme's extra columns.
std::string row_columns(const MysqlTable& t) {
  const MysqlColumns& c = mysql_columns(t.scheme);
  std::string out = fmt::format("`{}`, `{}`", c.tag, c.max_id);
  out += c.step[0] != '\0' ? fmt::format(", `{}`", c.step) : fmt::format(", {}", t.default_step);
  out += c.description[0] == '\0'   ? ", ''"
         : c.description[0] == '\'' ? fmt::format(", {}", c.description)
                                    : fmt::format(", `{}`", c.description);
  if (c.updated[0] == '\0') {
    out += ", 0";
  } else if (t.scheme == MysqlScheme::kIdforge) {
    out += fmt::format(", `{}`", c.updated);
  } else {
    out += fmt::format(", CAST(UNIX_TIMESTAMP(`{}`) * 1000 AS SIGNED)", c.updated);
  }
  if (c.extra[0] != '\0') out += fmt::format(", {}", c.extra);
  return out;
}

Result<TagInfo> read_tag(const MysqlTable& t, const MysqlAnswer& a, size_t row) {
  TagInfo info;
  info.name = a.text(row, 0);
  Result<int64_t> max_id = parse_mysql_int(a.text(row, 1));
  Result<int64_t> step = parse_mysql_int(a.text(row, 2));
  if (!max_id.ok() || !step.ok() || *max_id < 0 || *step < 1) {
    // The table is open to DBAs and other servers; a hand-edited row must not become a
    // wrong ID.
    return hand_edited(t, info.name,
                       fmt::format("has max_id '{}' and step '{}'; both must be positive integers",
                                   a.text(row, 1), a.text(row, 2)));
  }
  info.max_id = highest_of(t.scheme, *max_id);
  info.step = static_cast<uint64_t>(*step);
  info.description = a.text(row, 3);
  Result<int64_t> updated = parse_mysql_int(a.text(row, 4));
  info.updated_at_ms = updated.ok() ? *updated : 0;
  if (t.scheme == MysqlScheme::kIdforge) info.serial_template = a.text(row, 5);
  return info;
}

// idforge_segments, leaf_alloc and SEQUENCE: UPDATE then SELECT in one transaction.
Result<Segment> allocate_locked(MysqlTable& t, std::string_view tag, uint64_t step) {
  const MysqlColumns& c = mysql_columns(t.scheme);
  if (step == 0 && c.step[0] == '\0') step = t.default_step;
  Segment out;
  const std::string doing = fmt::format("allocating for tag '{}'", tag);
  Status st = t.db.transaction(
      [&](MysqlConn& conn) -> Status {
        const std::string q = conn.quote(tag);
        const std::string add = step > 0 ? std::to_string(step) : fmt::format("`{}`", c.step);
        std::string set = fmt::format("`{0}` = `{0}` + {1}", c.max_id, add);
        if (t.scheme == MysqlScheme::kIdforge) {
          set += fmt::format(", `updated_at` = {}", now_unix_ms());
        } else if (c.updated[0] != '\0') {
          set += fmt::format(", `{}` = NOW()", c.updated);
        }
        // The extra terms refuse a hand-edited row that would move max_id down.
        std::string where = fmt::format("`{}` = {} AND `{}` >= 0", c.tag, q, c.max_id);
        if (step == 0) where += fmt::format(" AND `{}` >= 1", c.step);
        MysqlAnswer up = conn.run(fmt::format("UPDATE {} SET {} WHERE {}", t.quoted, set, where));
        if (up.error == kErDataOutOfRange || up.error == kErWarnOutOfRange) {
          return out_of_ids(t, tag);
        }
        if (!up.ok()) return t.db.error(up, doing);
        if (up.affected == 0) {
          MysqlAnswer seen =
              conn.run(fmt::format("SELECT 1 FROM {} WHERE `{}` = {}", t.quoted, c.tag, q));
          if (!seen.ok()) return t.db.error(seen, doing);
          if (seen.rows.empty()) return unknown_tag(tag);
          return hand_edited(t, tag, "cannot be allocated from: max_id < 0 or step < 1");
        }
        const std::string used = step > 0 ? std::to_string(step) : fmt::format("`{}`", c.step);
        IDFORGE_ASSIGN_OR_RETURN(
            MysqlAnswer got,
            exec(t.db, conn,
                 fmt::format("SELECT `{}`, {}, {} FROM {} WHERE `{}` = {}", c.max_id, used,
                             mysql_identity_sql(t.mariadb), t.quoted, c.tag, q),
                 doing));
        Result<int64_t> max_id = parse_mysql_int(got.text(0, 0));
        Result<int64_t> count = parse_mysql_int(got.text(0, 1));
        if (!max_id.ok() || !count.ok() || *count < 1 || *max_id < *count) {
          return Status::Internal(fmt::format("{}: tag '{}' returned max_id '{}' for step '{}'",
                                              t.db.shown(), tag, got.text(0, 0), got.text(0, 1)));
        }
        const auto n = static_cast<uint64_t>(*count);
        const auto top = static_cast<uint64_t>(*max_id);
        // idforge: (max_id - n, max_id]; Leaf and SEQUENCE: [max_id - n, max_id).
        out.first = stores_next_free(t.scheme) ? top - n : top - n + 1;
        out.count = n;
        out.identity = got.text(0, 2);
        return Status::Ok();
      },
      doing);
  IDFORGE_RETURN_IF_ERROR(st);
  if (out.first == 0) {
    // A row that starts at 0 in the next-free convention hands out 0 first; IDs are
    // positive, so 0 is skipped (the row's own server would hand it out).
    out.first = 1;
    out.count -= 1;
    if (out.count == 0) return allocate_locked(t, tag, step);
  }
  return out;
}

// tiny_id_info: Tinyid's update, `max_id` moved from the value read and only if the
// version is still the one read, so Tinyid servers beside idforge see the change and
// retry. idforge also reads the row FOR UPDATE in the same transaction: other idforge
// processes then wait for the row instead of losing the race and retrying, and the
// version check can only fail if someone ignored the lock.
Result<Segment> allocate_tinyid(MysqlTable& t, std::string_view tag, uint64_t step) {
  Segment out;
  const std::string doing = fmt::format("allocating for tag '{}'", tag);
  for (unsigned attempt = 0; attempt < t.db.url().retries; ++attempt) {
    bool moved = false;
    Status st = t.db.transaction(
        [&](MysqlConn& conn) -> Status {
          const std::string q = conn.quote(tag);
          IDFORGE_ASSIGN_OR_RETURN(
              MysqlAnswer row,
              exec(t.db, conn,
                   fmt::format("SELECT id, max_id, step, delta, remainder, version, {} FROM {} "
                               "WHERE biz_type = {} FOR UPDATE",
                               mysql_identity_sql(t.mariadb), t.quoted, q),
                   doing));
          if (row.rows.empty()) return unknown_tag(tag);
          Result<int64_t> id = parse_mysql_int(row.text(0, 0));
          Result<int64_t> max_id = parse_mysql_int(row.text(0, 1));
          Result<int64_t> own_step = parse_mysql_int(row.text(0, 2));
          Result<int64_t> delta = parse_mysql_int(row.text(0, 3));
          Result<int64_t> remainder = parse_mysql_int(row.text(0, 4));
          Result<int64_t> version = parse_mysql_int(row.text(0, 5));
          if (!id.ok() || !max_id.ok() || !own_step.ok() || !delta.ok() || !remainder.ok() ||
              !version.ok() || *max_id < 0 || *own_step < 1 || *delta < 1 || *remainder < 0 ||
              *remainder >= *delta) {
            return hand_edited(
                t, tag,
                fmt::format("has max_id '{}', step '{}', delta '{}', remainder '{}'; they must be "
                            "max_id >= 0, step >= 1, delta >= 1 and 0 <= remainder < delta",
                            row.text(0, 1), row.text(0, 2), row.text(0, 3), row.text(0, 4)));
          }
          const uint64_t use = step > 0 ? step : static_cast<uint64_t>(*own_step);
          const auto old_max = static_cast<uint64_t>(*max_id);
          if (use > kMaxId - old_max) return out_of_ids(t, tag);
          const uint64_t new_max = old_max + use;
          IDFORGE_ASSIGN_OR_RETURN(
              MysqlAnswer up,
              exec(t.db, conn,
                   fmt::format("UPDATE {} SET max_id = {}, update_time = NOW(), version = version "
                               "+ 1 WHERE id = {} AND max_id = {} AND version = {} AND biz_type = "
                               "{}",
                               t.quoted, new_max, *id, old_max, *version, q),
                   doing));
          if (up.affected != 1) return Status::Ok();  // moved by someone else: read again
          // (old_max, new_max] with x % delta == remainder, as Tinyid's SegmentId hands out.
          const auto d = static_cast<uint64_t>(*delta);
          const auto r = static_cast<uint64_t>(*remainder);
          const uint64_t from = old_max + 1;
          const uint64_t first = from + (r + d - from % d) % d;
          moved = true;
          out = Segment{first, first > new_max ? 0 : (new_max - first) / d + 1, d, row.text(0, 6)};
          return Status::Ok();
        },
        doing);
    IDFORGE_RETURN_IF_ERROR(st);
    if (moved && out.count > 0) return out;
    // Not moved, or a step below delta that held none of this database's numbers: the
    // row has moved on either way, so the next try takes the next range.
  }
  return Status::Unavailable(
      fmt::format("{}: tag '{}' was moved by another server on each of {} tries (raise ?retries=)",
                  t.db.shown(), tag, t.db.url().retries));
}

}  // namespace

const MysqlColumns& mysql_columns(MysqlScheme scheme) {
  switch (scheme) {
    case MysqlScheme::kLeaf:
      return kLeafColumns;
    case MysqlScheme::kTinyid:
      return kTinyidColumns;
    case MysqlScheme::kSequence:
      return kSequenceColumns;
    case MysqlScheme::kIdforge:
      break;
  }
  return kIdforgeColumns;
}

Result<Segment> mysql_allocate(MysqlTable& t, std::string_view tag, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  if (step > kMaxId) return Status::OutOfRange(fmt::format("step {} is larger than 2^63-1", step));
  if (t.scheme == MysqlScheme::kTinyid) return allocate_tinyid(t, tag, step);
  return allocate_locked(t, tag, step);
}

Status mysql_create_tag(MysqlTable& t, const TagSpec& spec) {
  // kMaxSegmentStep (10^9) fits the `int` step column of Leaf and Tinyid.
  IDFORGE_RETURN_IF_ERROR(check_new_tag(spec));
  if (!spec.serial_template.empty() && t.scheme != MysqlScheme::kIdforge) {
    return Status::InvalidArgument(fmt::format(
        "table {} has no column for a serial template; use idforge's own table for serials",
        t.name));
  }
  const std::string doing = fmt::format("creating tag '{}'", spec.name);
  return t.db.with_connection([&](MysqlConn& conn) -> Status {
    const std::string q = conn.quote(spec.name);
    const uint64_t last = spec.start - 1;
    std::string sql;
    switch (t.scheme) {
      case MysqlScheme::kIdforge:
        sql = fmt::format(
            "INSERT INTO {} (tag, max_id, step, description, serial_template, updated_at) "
            "VALUES ({}, {}, {}, {}, {}, {})",
            t.quoted, q, last, spec.step, conn.quote(spec.description),
            conn.quote(spec.serial_template), now_unix_ms());
        break;
      case MysqlScheme::kLeaf:
        sql = fmt::format(
            "INSERT INTO {} (biz_tag, max_id, step, description, update_time) "
            "VALUES ({}, {}, {}, {}, NOW())",
            t.quoted, q, spec.start, spec.step, conn.quote(spec.description));
        break;
      case MysqlScheme::kTinyid:
        // delta 1, remainder 0: every number; Tinyid's multi-database rows are made by
        // hand with their own delta and remainder.
        sql = fmt::format(
            "INSERT INTO {} (biz_type, begin_id, max_id, step, delta, remainder, create_time, "
            "update_time, version) VALUES ({}, {}, {}, {}, 1, 0, NOW(), NOW(), 0)",
            t.quoted, q, last, last, spec.step);
        break;
      case MysqlScheme::kSequence:
        sql = fmt::format("INSERT INTO {} (table_name, next_id) VALUES ({}, {})", t.quoted, q,
                          spec.start);
        break;
    }
    MysqlAnswer a = conn.run(sql);
    if (a.error == kErDupEntry) {
      return Status::AlreadyExists(
          fmt::format("tag '{}' already exists in {}", spec.name, t.db.shown()));
    }
    if (!a.ok()) return t.db.error(a, doing);
    return Status::Ok();
  });
}

Result<std::vector<TagInfo>> mysql_list_tags(MysqlTable& t) {
  const MysqlColumns& c = mysql_columns(t.scheme);
  IDFORGE_ASSIGN_OR_RETURN(MysqlAnswer got,
                           t.db.run(fmt::format("SELECT {} FROM {} ORDER BY BINARY `{}`",
                                                row_columns(t), t.quoted, c.tag),
                                    "listing tags"));
  std::vector<TagInfo> tags;
  tags.reserve(got.rows.size());
  for (size_t i = 0; i < got.rows.size(); ++i) {
    IDFORGE_ASSIGN_OR_RETURN(TagInfo info, read_tag(t, got, i));
    tags.push_back(std::move(info));
  }
  return tags;
}

Result<TagInfo> mysql_get_tag(MysqlTable& t, std::string_view name) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  const MysqlColumns& c = mysql_columns(t.scheme);
  MysqlAnswer got;
  IDFORGE_RETURN_IF_ERROR(t.db.with_connection([&](MysqlConn& conn) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(
        got, exec(t.db, conn,
                  fmt::format("SELECT {} FROM {} WHERE `{}` = {}", row_columns(t), t.quoted, c.tag,
                              conn.quote(name)),
                  fmt::format("reading tag '{}'", name)));
    return Status::Ok();
  }));
  if (got.rows.empty()) return unknown_tag(name);
  return read_tag(t, got, 0);
}

Status mysql_set_step(MysqlTable& t, std::string_view name, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  IDFORGE_RETURN_IF_ERROR(validate_step(step));
  const MysqlColumns& c = mysql_columns(t.scheme);
  if (c.step[0] == '\0') {
    return Status::InvalidArgument(
        fmt::format("table {} has no step column; the step of its tags is the URL's ?step= ({})",
                    t.name, t.default_step));
  }
  MysqlAnswer got;
  IDFORGE_RETURN_IF_ERROR(t.db.with_connection([&](MysqlConn& conn) -> Status {
    std::string set = fmt::format("`{}` = {}", c.step, step);
    if (t.scheme == MysqlScheme::kIdforge) {
      set += fmt::format(", updated_at = {}", now_unix_ms());
    } else {
      set += fmt::format(", `{}` = NOW()", c.updated);
    }
    IDFORGE_ASSIGN_OR_RETURN(got, exec(t.db, conn,
                                       fmt::format("UPDATE {} SET {} WHERE `{}` = {}", t.quoted,
                                                   set, c.tag, conn.quote(name)),
                                       fmt::format("setting the step of tag '{}'", name)));
    return Status::Ok();
  }));
  if (got.affected == 0) return unknown_tag(name);
  return Status::Ok();
}

}  // namespace idforge::store
