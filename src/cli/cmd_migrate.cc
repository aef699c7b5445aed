// `idforge migrate from-leaf|from-tinyid --store URL [--apply]`: checks a live Leaf or
// Tinyid table and says what idforge servers will do with each tag when they serve it
// in place, beside the Leaf or Tinyid servers (docs/migrating.md). With --apply it
// does what it printed under "--apply will", and nothing else.
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "idforge/segment_store.h"
#include "store/mysql/mysql_url.h"
#include "store/store_common.h"
#include "store/store_factory.h"
#include "store/store_guard.h"
#include "url/url_options.h"

namespace idforge::cli {
namespace {

struct MigrateFlags {
  std::string from;  // "leaf" or "tinyid"
  std::string url;
  bool apply = false;
  bool json = false;
};

std::string ago(int64_t then_ms) {
  if (then_ms <= 0) return "never";
  const int64_t s = (store::now_unix_ms() - then_ms) / 1000;
  if (s < 120) return fmt::format("{} s ago", s < 0 ? 0 : s);
  if (s < 7200) return fmt::format("{} min ago", s / 60);
  if (s < 172800) return fmt::format("{} h ago", s / 3600);
  return fmt::format("{} days ago", s / 86400);
}

// The URL with the system's table when it names none: `from-leaf` means leaf_alloc.
Result<std::string> table_url(const MigrateFlags& f) {
  const store::StoreKind* kind = store::find_store_kind(f.url);
  if (kind == nullptr || kind->name != "mysql") {
    return Status::InvalidArgument(fmt::format(
        "--store must be the MySQL or MariaDB database of the {} servers ({}), got '{}'", f.from,
        store::store_url_form("mysql"), redact_url(f.url)));
  }
  std::string url = f.url;
  if (url.find("table=") == std::string::npos) {
    url += url.find('?') == std::string::npos ? "?" : "&";
    url += f.from == "leaf" ? "table=leaf_alloc" : "table=tiny_id_info";
  }
  IDFORGE_ASSIGN_OR_RETURN(store::MysqlUrl parsed, store::parse_mysql_url(url));
  const store::MysqlScheme want =
      f.from == "leaf" ? store::MysqlScheme::kLeaf : store::MysqlScheme::kTinyid;
  if (parsed.scheme != want) {
    return Status::InvalidArgument(fmt::format(
        "table {} is read with the {} scheme; migrate from-{} needs scheme={} (add it to the URL)",
        parsed.table, store::mysql_scheme_name(parsed.scheme), f.from,
        store::mysql_scheme_name(want)));
  }
  return url;
}

// What idforge will hand out next for `tag`, in the table's own convention.
std::string next_range(const MigrateFlags& f, const TagInfo& tag) {
  const uint64_t from = tag.max_id + 1;
  if (f.from == "leaf") {
    return fmt::format("[{}, {}) as Leaf counts", from, from + tag.step);
  }
  return fmt::format("({}, {}] with Tinyid's delta and remainder", tag.max_id,
                     tag.max_id + tag.step);
}

int run_migrate(const MigrateFlags& f) {
  Result<std::string> url = table_url(f);
  if (!url.ok()) return fail(url.status());
  Result<std::unique_ptr<SegmentStore>> opened = store::open_store(*url);
  if (!opened.ok()) return fail(opened.status());
  SegmentStore& s = **opened;
  Result<std::vector<TagInfo>> tags = s.list_tags();
  if (!tags.ok()) return fail(tags.status());
  Result<Durability> durability = s.durability();
  if (!durability.ok()) return fail(durability.status());
  Result<StoreIdentity> identity = s.identity();
  if (!identity.ok()) return fail(identity.status());

  uint64_t max_step = 0;
  nlohmann::ordered_json out;
  out["from"] = f.from;
  out["store"] = s.describe();
  out["durability"] = {
      {"safe", durability->safe}, {"settings", durability->summary}, {"risk", durability->risk}};
  out["identity"] = {{"server", identity->current}, {"recorded", identity->recorded}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  size_t servable = 0;
  for (const TagInfo& tag : *tags) {
    nlohmann::ordered_json row;
    row["tag"] = tag.name;
    row["highest_in_use"] = std::to_string(tag.max_id);
    row["step"] = tag.step;
    row["last_change"] = ago(tag.updated_at_ms);
    if (Status name = validate_tag_name(tag.name); !name.ok()) {
      row["plan"] = "skip: " + name.message() + "; rename it to serve it from idforge";
    } else if (Status step = validate_step(tag.step); !step.ok()) {
      row["plan"] = "skip: " + step.message();
    } else {
      ++servable;
      max_step = std::max(max_step, tag.step);
      row["plan"] = "serve in place, next range " + next_range(f, tag);
    }
    rows.push_back(std::move(row));
  }
  out["tags"] = std::move(rows);

  // What --apply does: record the server's identity, so the first idforge server takes
  // the table as it is rather than as a store that may have lost writes (which would
  // move every tag forward by the failover margin).
  std::string action;
  std::string blocked;
  if (identity->recorded.empty()) {
    action = fmt::format(
        "record identity '{}' in idforge_meta, so the first idforge server does not move every "
        "tag forward by the failover margin ({})",
        identity->current, store::default_failover_margin(std::max<uint64_t>(max_step, 1)));
  } else if (identity->recorded != identity->current) {
    blocked = fmt::format(
        "identity '{}' is recorded but the server is '{}' now: the table may have lost writes "
        "since (a failover, a restore); the idforge servers' failover guard will move every tag "
        "forward once, and --apply changes nothing",
        identity->recorded, identity->current);
  }
  out["apply"] =
      action.empty() ? nlohmann::ordered_json::array() : nlohmann::ordered_json::array({action});
  if (!blocked.empty()) out["note"] = blocked;
  if (!durability->safe) {
    out["warning"] = "the server can lose committed ranges: " + durability->risk +
                     " (idforge refuses it unless segment.allow_unsafe_store is set)";
  }

  if (f.apply && !action.empty()) {
    IdentityChange record;
    record.adopt = identity->current;  // margin 0: the tags stay where they are
    Result<bool> done = s.adopt_identity(record);
    if (!done.ok()) return fail(done.status());
    out["applied"] =
        *done ? nlohmann::ordered_json::array({action}) : nlohmann::ordered_json::array();
    if (!*done) out["note"] = "another process recorded an identity first; nothing changed";
  }

  if (f.json) {
    fmt::print("{}\n", out.dump(2));
    return kExitOk;
  }
  fmt::print("store:      {}\n", out["store"].get<std::string>());
  fmt::print("durability: {} ({})\n", durability->summary, durability->safe ? "safe" : "UNSAFE");
  fmt::print("identity:   {}, {}\n", identity->current,
             identity->recorded.empty() ? "none recorded" : "recorded: " + identity->recorded);
  fmt::print("tags:       {} ({} idforge can serve)\n\n", tags->size(), servable);
  fmt::print("{:<24} {:>20} {:>10}  {:<14} {}\n", "tag", "highest in use", "step", "last change",
             "idforge will");
  for (const auto& row : out["tags"]) {
    fmt::print("{:<24} {:>20} {:>10}  {:<14} {}\n", row["tag"].get<std::string>(),
               row["highest_in_use"].get<std::string>(), row["step"].get<uint64_t>(),
               row["last_change"].get<std::string>(), row["plan"].get<std::string>());
  }
  if (out.contains("warning")) fmt::print("\nwarning: {}\n", out["warning"].get<std::string>());
  if (out.contains("note")) fmt::print("\nnote: {}\n", out["note"].get<std::string>());
  if (f.apply) {
    fmt::print("\n{}\n", action.empty() || out["applied"].empty() ? "--apply: nothing to do"
                                                                  : "done: " + action);
  } else {
    fmt::print("\n--apply will: {}\n", action.empty() ? "nothing" : action);
  }
  fmt::print("serve it with: idforge serve --store '{}' (with the password)\n", redact_url(*url));
  return kExitOk;
}

}  // namespace

void add_migrate_command(CLI::App& app, int& exit_status) {
  auto flags = std::make_shared<MigrateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "migrate", "Check a live Leaf or Tinyid table and plan serving it in place");
  cmd->require_subcommand(1);
  for (const char* from : {"leaf", "tinyid"}) {
    const std::string system = std::string(from) == "leaf" ? "Leaf" : "Tinyid";
    CLI::App* sub = cmd->add_subcommand(
        std::string("from-") + from,
        fmt::format("Check {}'s table (schema, tags, steps, highest IDs in use, durability) and "
                    "print what idforge servers will do with each tag",
                    system));
    sub->add_option(
           "--store", flags->url,
           fmt::format("The MySQL/MariaDB database of the {} servers: {} (the table defaults "
                       "to {})",
                       system, store::store_url_form("mysql"),
                       std::string(from) == "leaf" ? "leaf_alloc" : "tiny_id_info"))
        ->required()
        ->type_name("URL");
    sub->add_flag("--apply", flags->apply,
                  "Do what the plan lists under '--apply will', and nothing else");
    sub->add_flag("--json", flags->json, "The plan as JSON");
    sub->footer(fmt::format(
        "Example:\n  idforge migrate from-{0} --store 'mysql://ids:secret@db1:3306/{0}'\n"
        "  idforge migrate from-{0} --store 'mysql://ids:secret@db1:3306/{0}' --apply\n"
        "Then: docs/migrating.md",
        from));
    sub->callback([flags, from = std::string(from), &exit_status] {
      flags->from = from;
      exit_status = run_migrate(*flags);
    });
  }
}

}  // namespace idforge::cli
