// `idforge tag create|list|show|set-step`: the segment-mode tags in one or more stores.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/http_get.h"
#include "cli/segment_stores.h"
#include "idforge/segment_store.h"
#include "idforge/serial.h"
#include "idforge/time_format.h"
#include "store/store_factory.h"

namespace idforge::cli {
namespace {

constexpr uint64_t kDefaultStart = 1;
constexpr uint64_t kDefaultStep = 1000;

struct TagFlags {
  StoreFlags stores;
  std::string command;  // "create", "show", ... for messages
  std::string name;
  std::string start = std::to_string(kDefaultStart);
  std::string step = std::to_string(kDefaultStep);
  std::string new_step;  // set-step's N
  std::string description;
  std::string serial_template;
  bool json = false;
  std::vector<std::string> servers;  // served's --server
};

// Runs `action` on every store and reports the outcome: a line on stdout per store
// that succeeded and one error line naming each one that failed, so a partial
// success over several stores is visible and the command can simply be rerun.
template <typename Action>
int on_each_store(const StoreFlags& flags, Action action) {
  Result<std::vector<OpenedStore>> opened = open_stores(flags);
  if (!opened.ok()) return fail(opened.status());
  Status first_error;
  std::string errors;
  for (OpenedStore& o : *opened) {
    Status st = o.error;
    if (o.store) {
      Result<std::string> done = action(*o.store);
      if (done.ok()) {
        fmt::print("{}\n", *done);
        continue;
      }
      st = done.status();
    }
    if (first_error.ok()) first_error = st;
    const bool names_store = st.message().find(o.url) != std::string::npos;
    errors += fmt::format("{}{}{}", errors.empty() ? "" : "; ", names_store ? "" : o.url + ": ",
                          st.message());
  }
  if (first_error.ok()) return kExitOk;
  // One store: its message as it is. Several: every failure on the one line.
  return fail(Status(first_error.code(), opened->size() == 1 ? first_error.message() : errors));
}

// Stores that answer, with their tags; the first store that fails ends the command,
// since a listing with a store silently missing would mislead.
template <typename Read>
int read_each_store(const StoreFlags& flags, Read read) {
  Result<std::vector<OpenedStore>> opened = open_stores(flags);
  if (!opened.ok()) return fail(opened.status());
  for (OpenedStore& o : *opened) {
    if (!o.store) return fail(o.error);
  }
  return read(*opened);
}

nlohmann::ordered_json tag_json(const TagInfo& tag, const std::string& store) {
  nlohmann::ordered_json out;
  out["name"] = tag.name;
  // A string, like IDs everywhere in our JSON: JavaScript loses integers above 2^53.
  out["max_id"] = std::to_string(tag.max_id);
  out["step"] = tag.step;
  out["description"] = tag.description;
  out["serial_template"] = tag.serial_template;
  out["updated_at_ms"] = tag.updated_at_ms;
  out["updated_at"] = format_iso8601_utc(tag.updated_at_ms);
  out["store"] = store;
  return out;
}

std::string tag_text(const TagInfo& tag, const std::string& store) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"name", tag.name},
      {"store", store},
      {"max_id", std::to_string(tag.max_id)},
      {"step", std::to_string(tag.step)},
      {"description", tag.description},
      {"serial_template", tag.serial_template},
      {"updated_at", format_iso8601_utc(tag.updated_at_ms)},
  };
  std::string text;
  for (const auto& [key, value] : rows) {
    std::string line = fmt::format("{:<17}{}", key + ":", value);
    while (!line.empty() && line.back() == ' ') line.pop_back();  // an empty value
    text += line + "\n";
  }
  return text;
}

// NAME is optional to CLI11 so that a missing one gets a message naming this command's
// help rather than the parent's.
Status check_name(const TagFlags& flags) {
  if (flags.name.empty()) {
    return Status::InvalidArgument(
        fmt::format("missing the tag NAME (see 'idforge tag {} --help')", flags.command));
  }
  return validate_tag_name(flags.name);
}

Result<TagSpec> spec_from(const TagFlags& flags) {
  IDFORGE_RETURN_IF_ERROR(check_name(flags));
  TagSpec spec;
  spec.name = flags.name;
  IDFORGE_ASSIGN_OR_RETURN(uint64_t start, parse_number(flags.start, "--start"));
  IDFORGE_ASSIGN_OR_RETURN(uint64_t step, parse_number(flags.step, "--step"));
  spec.start = start;
  spec.step = step;
  spec.description = flags.description;
  // The store keeps the text as given; checking it here means a tag never holds a
  // template that would fail later, when serials are made from it.
  if (!flags.serial_template.empty()) {
    IDFORGE_RETURN_IF_ERROR(SerialTemplate::parse(flags.serial_template));
  }
  spec.serial_template = flags.serial_template;
  return spec;
}

// A tag this data directory's node has served must not start again below what it
// served: the store that lost it would hand those IDs out a second time.
Status check_start_above_served(const TagFlags& flags, const TagSpec& spec) {
  const std::string path = store::served_marks_path(flags.stores.data_dir);
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<store::ServedMarks> marks,
                           store::ServedMarks::open(path));
  for (const store::ServedMarks::Mark& m : marks->all()) {
    if (m.tag != spec.name || spec.start > m.highest) continue;
    return Status::InvalidArgument(fmt::format(
        "this node ({}) has served tag '{}' up to {} (store place {}); a recreated tag must "
        "start above it: --start {} or higher (other nodes may have served more: "
        "`idforge tag served {} --server URL...` asks each running server)",
        flags.stores.data_dir, spec.name, m.highest, m.place, m.highest + 1, spec.name));
  }
  return Status::Ok();
}

// A tag recreated at or below what the fleet took of it (a store that lost it) starts
// above that instead: the fleet floor knows what every node served, the operator need
// not. A registry that cannot be asked leaves the start as given, with a warning: the
// servers' guards still refuse every range the fleet took.
void start_above_fleet_floor(const TagFlags& flags, TagSpec& spec) {
  if (spec.start == 0) return;  // the store refuses it, with the reason
  Result<coord::RegistryFloor> floor = open_floor(flags.stores);
  Status st = floor.status();
  uint64_t highest = 0;
  if (st.ok() && floor->floor) {
    Result<uint64_t> h = floor->floor->highest_of_tag(
        spec.name, static_cast<uint32_t>(std::max<size_t>(1, flags.stores.urls.size())));
    st = h.status();
    if (h.ok()) highest = *h;
  }
  if (!st.ok()) {
    print_error(
        fmt::format("warning: the fleet floor could not be read ({}); tag '{}' starts at "
                    "{} as given, and the servers refuse any range the fleet took",
                    st.message(), spec.name, spec.start));
    return;
  }
  if (highest == 0 || spec.start > highest) return;
  print_error(
      fmt::format("warning: the fleet has taken tag '{}' up to {} ({}): it starts at {} "
                  "instead of {}",
                  spec.name, highest, floor->floor->describe(), highest + 1, spec.start));
  spec.start = highest + 1;
}

int run_create(const TagFlags& flags) {
  Result<TagSpec> spec = spec_from(flags);
  if (!spec.ok()) return fail(spec.status());
  bool floor_read = false;
  return on_each_store(flags.stores, [&](SegmentStore& store) -> Result<std::string> {
    // An existing tag gets "already exists" from the store, not these checks.
    if (store.get_tag(spec->name).status().code() == StatusCode::kNotFound) {
      if (!std::exchange(floor_read, true)) start_above_fleet_floor(flags, *spec);
      IDFORGE_RETURN_IF_ERROR(check_start_above_served(flags, *spec));
    }
    // Best effort: a store that cannot tell its identity still takes the tag.
    store::record_new_store_identity(store).ignore_error();
    IDFORGE_RETURN_IF_ERROR(store.create_tag(*spec));
    return fmt::format("created tag '{}' in {}: first ID {}, step {}", spec->name, store.describe(),
                       spec->start, spec->step);
  });
}

int run_set_step(const TagFlags& flags) {
  if (Status valid = check_name(flags); !valid.ok()) return fail(valid);
  if (flags.new_step.empty()) {
    return fail(
        Status::InvalidArgument("missing the new step N (see 'idforge tag set-step --help')"));
  }
  Result<uint64_t> step = parse_number(flags.new_step, "step");
  if (!step.ok()) return fail(step.status());
  return on_each_store(flags.stores, [&](SegmentStore& store) -> Result<std::string> {
    IDFORGE_RETURN_IF_ERROR(store.set_step(flags.name, *step));
    return fmt::format("tag '{}' in {}: step is now {}", flags.name, store.describe(), *step);
  });
}

int run_list(const TagFlags& flags) {
  return read_each_store(flags.stores, [&](std::vector<OpenedStore>& stores) {
    nlohmann::ordered_json json = nlohmann::ordered_json::array();
    std::vector<std::vector<std::string>> rows;
    for (OpenedStore& o : stores) {
      Result<std::vector<TagInfo>> tags = o.store->list_tags();
      if (!tags.ok()) return fail(tags.status());
      for (const TagInfo& tag : *tags) {
        json.push_back(tag_json(tag, o.store->describe()));
        std::vector<std::string> row = {tag.name, std::to_string(tag.max_id),
                                        std::to_string(tag.step),
                                        format_iso8601_utc(tag.updated_at_ms), tag.description};
        if (stores.size() > 1) row.insert(row.begin() + 1, o.store->describe());
        rows.push_back(std::move(row));
      }
    }
    if (flags.json) {
      fmt::print("{}\n", json.dump());
      return kExitOk;
    }
    if (rows.empty()) {
      fmt::print("no tags yet (create one with: idforge tag create NAME)\n");
      return kExitOk;
    }
    std::vector<std::string> header = {"TAG", "MAX_ID", "STEP", "UPDATED", "DESCRIPTION"};
    if (stores.size() > 1) header.insert(header.begin() + 1, "STORE");
    rows.insert(rows.begin(), header);
    std::vector<size_t> width(header.size(), 0);
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    for (const auto& row : rows) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        const bool last = i + 1 == row.size();
        line += last ? row[i] : fmt::format("{:<{}}  ", row[i], width[i]);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      fmt::print("{}\n", line);
    }
    return kExitOk;
  });
}

int run_show(const TagFlags& flags) {
  if (Status valid = check_name(flags); !valid.ok()) return fail(valid);
  return read_each_store(flags.stores, [&](std::vector<OpenedStore>& stores) {
    nlohmann::ordered_json json = nlohmann::ordered_json::array();
    std::string text;
    for (OpenedStore& o : stores) {
      Result<TagInfo> tag = o.store->get_tag(flags.name);
      if (!tag.ok()) {
        const Status& st = tag.status();
        if (stores.size() == 1 || st.message().find(o.url) != std::string::npos) return fail(st);
        return fail(Status(st.code(), fmt::format("{}: {}", o.url, st.message())));
      }
      json.push_back(tag_json(*tag, o.store->describe()));
      text += (text.empty() ? "" : "\n") + tag_text(*tag, o.store->describe());
    }
    if (flags.json) {
      // One object for one store, an array when the tag is striped over several.
      fmt::print("{}\n", stores.size() == 1 ? json[0].dump() : json.dump());
    } else {
      fmt::print("{}", text);
    }
    return kExitOk;
  });
}

// `idforge tag served NAME`: the highest number of the tag each node has served, from
// each server's /v1/status (--server) or from this data directory's own record. A tag
// recreated after a store lost it must start above all of them.
int run_served(const TagFlags& flags) {
  if (Status valid = check_name(flags); !valid.ok()) return fail(valid);
  struct Row {
    std::string source, place;
    uint64_t highest = 0;
  };
  std::vector<Row> rows;
  Status first_error;
  if (flags.servers.empty()) {
    Result<std::unique_ptr<store::ServedMarks>> marks =
        store::ServedMarks::open(store::served_marks_path(flags.stores.data_dir));
    if (!marks.ok()) return fail(marks.status());
    for (const store::ServedMarks::Mark& m : (*marks)->all()) {
      if (m.tag == flags.name) rows.push_back({flags.stores.data_dir, m.place, m.highest});
    }
  }
  if (Result<coord::RegistryFloor> floor = open_floor(flags.stores); !floor.ok()) {
    first_error = floor.status();
  } else if (floor->floor) {
    const size_t count = std::max<size_t>(1, flags.stores.urls.size());
    for (size_t i = 0; i < count; ++i) {
      const std::string place =
          store::place_name(static_cast<uint32_t>(i), static_cast<uint32_t>(count));
      Result<uint64_t> highest = floor->floor->highest(place, flags.name);
      if (!highest.ok()) {
        if (first_error.ok()) first_error = highest.status();
      } else if (*highest > 0) {
        rows.push_back({"fleet floor " + floor->floor->describe(), place, *highest});
      }
    }
  }
  for (const std::string& server : flags.servers) {
    Result<HttpGetReply> reply =
        http_get(server, "/v1/status?tag=" + flags.name, std::chrono::seconds(5));
    Status st = reply.status();
    if (st.ok() && reply->status != 200) {
      st = Status::Unavailable(fmt::format("{}: /v1/status answered {}", server, reply->status));
    }
    if (st.ok()) {
      auto json = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
      if (json.is_discarded() || !json.contains("served") || !json["served"].is_array()) {
        st = Status::IoError(fmt::format("{}: /v1/status has no 'served' list", server));
      } else {
        for (const auto& m : json["served"]) {
          if (!m.is_object() || m.value("tag", "") != flags.name) continue;
          Result<uint64_t> highest = parse_number(m.value("highest", ""), "highest");
          if (highest.ok()) rows.push_back({server, m.value("place", ""), *highest});
        }
      }
    }
    if (!st.ok()) {
      // The first error closes the output (fail() prints it); the others are said here.
      if (first_error.ok()) {
        first_error = st;
      } else {
        print_error(st.message());
      }
    }
  }
  uint64_t top = 0;
  for (const Row& r : rows) top = std::max(top, r.highest);
  if (flags.json) {
    nlohmann::ordered_json out;
    out["tag"] = flags.name;
    out["nodes"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      out["nodes"].push_back(
          {{"source", r.source}, {"place", r.place}, {"highest", std::to_string(r.highest)}});
    }
    out["start_above"] = std::to_string(top);
    fmt::print("{}\n", out.dump());
  } else {
    for (const Row& r : rows)
      fmt::print("{}  store {}  served up to {}\n", r.source, r.place, r.highest);
    if (rows.empty()) fmt::print("no node reports tag '{}'\n", flags.name);
    // In store numbers: with K striped stores an ID n of store i is n * K + i.
    fmt::print("a recreated tag must start above {}: --start {}\n", top, top + 1);
  }
  return first_error.ok() ? kExitOk : fail(first_error);
}

CLI::App* add_sub(CLI::App& tag, const std::string& name, const std::string& help,
                  const std::shared_ptr<TagFlags>& flags) {
  CLI::App* cmd = tag.add_subcommand(name, help);
  add_store_flags(*cmd, flags->stores);
  if (name == "create" || name == "served") add_floor_registry_flag(*cmd, flags->stores);
  // Only the chosen subcommand's callback runs, so the flags can be shared.
  cmd->parse_complete_callback([flags, name] { flags->command = name; });
  return cmd;
}

}  // namespace

void add_tag_command(CLI::App& app, int& exit_status) {
  CLI::App* tag = app.add_subcommand("tag", "Create, list and change segment-mode tags");
  tag->require_subcommand(1);
  tag->footer(
      "Examples:\n"
      "  idforge tag create order --start 1000 --step 2000 --description 'order numbers'\n"
      "  idforge tag list\n"
      "  idforge next --tag order --count 5\n"
      "Stores (--store):\n" +
      store::describe_store_kinds());

  auto flags = std::make_shared<TagFlags>();

  CLI::App* create = add_sub(*tag, "create", "Create a tag", flags);
  create->add_option("NAME", flags->name, "Tag name: 1-64 of [A-Za-z0-9_.:-]");
  create->add_option("--start", flags->start, "First ID the tag hands out")
      ->type_name("N")
      ->default_str(std::to_string(kDefaultStart));
  create->add_option("--step", flags->step, "IDs per allocation from the store, 1..1000000000")
      ->type_name("N")
      ->default_str(std::to_string(kDefaultStep));
  create->add_option("--description", flags->description, "What the tag numbers")
      ->type_name("TEXT");
  create
      ->add_option("--template", flags->serial_template,
                   "Serial-number template, e.g. 'PAY{yyyyMMdd}{seq:08}'")
      ->type_name("T");
  create->footer(
      "Example:\n"
      "  idforge tag create invoice --step 500 --template 'INV{yyyyMMdd}{seq:06}'");
  create->callback([flags, &exit_status] { exit_status = run_create(*flags); });

  CLI::App* list = add_sub(*tag, "list", "List the tags", flags);
  list->add_flag("--json", flags->json, "Print a JSON array");
  list->footer("Example:\n  idforge tag list --json --store sqlite:/var/lib/idforge/segments.db");
  list->callback([flags, &exit_status] { exit_status = run_list(*flags); });

  CLI::App* show = add_sub(*tag, "show", "Show one tag", flags);
  show->add_option("NAME", flags->name, "Tag name");
  show->add_flag("--json", flags->json, "Print a JSON object");
  show->footer("Example:\n  idforge tag show order --json");
  show->callback([flags, &exit_status] { exit_status = run_show(*flags); });

  CLI::App* set_step = add_sub(*tag, "set-step", "Change the step of a tag", flags);
  set_step->add_option("NAME", flags->name, "Tag name");
  // Its own string: the create command's default step must not stand in for a missing N.
  set_step->add_option("N", flags->new_step, "New step, 1..1000000000");
  set_step->footer("Example:\n  idforge tag set-step order 5000");
  set_step->callback([flags, &exit_status] { exit_status = run_set_step(*flags); });

  CLI::App* served =
      add_sub(*tag, "served", "Show the highest number of a tag each node has served", flags);
  served->add_option("NAME", flags->name, "Tag name");
  served
      ->add_option("--server", flags->servers,
                   "A running server's HTTP URL (repeatable); none: this data directory's record")
      ->type_name("URL");
  served->add_flag("--json", flags->json, "Print a JSON object");
  served->footer(
      "Before recreating a tag on a store that lost it, ask every node:\n"
      "  idforge tag served order --server http://10.0.0.1:8080 --server http://10.0.0.2:8080\n"
      "  idforge tag create order --start N   (N above every node's answer)");
  served->callback([flags, &exit_status] { exit_status = run_served(*flags); });
}

}  // namespace idforge::cli
