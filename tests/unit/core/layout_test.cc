#include "idforge/layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bitset>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/bit_diagram.h"
#include "idforge/time_format.h"

namespace idforge {
namespace {

using ::testing::HasSubstr;

struct ExpectedField {
  std::string name;
  int bits;
  FieldRole role;
  int shift;
};

struct ExpectedPreset {
  std::string name;
  int64_t epoch_ms;
  int64_t tick_ms;
  int total_bits;
  std::vector<ExpectedField> fields;
};

// docs/snowflake.md; shifts worked out by hand (sum of the widths below each field).
const std::vector<ExpectedPreset>& expected_presets() {
  using R = FieldRole;
  static const std::vector<ExpectedPreset> presets = {
      {"twitter",
       1288834974657,
       1,
       63,
       {{"time", 41, R::kTime, 22},
        {"datacenter", 5, R::kNode, 17},
        {"worker", 5, R::kNode, 12},
        {"sequence", 12, R::kSequence, 0}}},
      {"discord",
       1420070400000,
       1,
       64,
       {{"time", 42, R::kTime, 22},
        {"worker", 5, R::kNode, 17},
        {"process", 5, R::kNode, 12},
        {"increment", 12, R::kSequence, 0}}},
      {"instagram",
       1314220021721,
       1,
       64,
       {{"time", 41, R::kTime, 23},
        {"shard", 13, R::kNode, 10},
        {"sequence", 10, R::kSequence, 0}}},
      {"sonyflake",
       1409529600000,
       10,
       63,
       {{"time", 39, R::kTime, 24},
        {"sequence", 8, R::kSequence, 16},
        {"machine", 16, R::kNode, 0}}},
      {"baidu",
       1463673600000,
       1000,
       63,
       {{"time", 28, R::kTime, 35},
        {"worker", 22, R::kNode, 13},
        {"sequence", 13, R::kSequence, 0}}},
  };
  return presets;
}

Layout must(Result<Layout> r) {
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return std::move(r).value();
}

TEST(LayoutPresets, FieldsShiftsAndBitsMatchTheDocumentedPresets) {
  for (const ExpectedPreset& want : expected_presets()) {
    SCOPED_TRACE(want.name);
    Result<Layout> got = Layout::preset(want.name);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(got->name(), want.name);
    EXPECT_EQ(got->epoch_ms(), want.epoch_ms);
    EXPECT_EQ(got->tick_ms(), want.tick_ms);
    EXPECT_EQ(got->total_bits(), want.total_bits);
    ASSERT_EQ(got->fields().size(), want.fields.size());
    for (size_t i = 0; i < want.fields.size(); ++i) {
      const int index = static_cast<int>(i);
      EXPECT_EQ(got->fields()[i].name, want.fields[i].name);
      EXPECT_EQ(got->fields()[i].bits, want.fields[i].bits);
      EXPECT_EQ(got->fields()[i].role, want.fields[i].role);
      EXPECT_EQ(got->shift(index), want.fields[i].shift);
      EXPECT_EQ(got->field_index(want.fields[i].name), index);
      EXPECT_EQ(got->max_value(index), (uint64_t{1} << want.fields[i].bits) - 1);
      if (want.fields[i].role == FieldRole::kTime) {
        EXPECT_EQ(got->time_index(), index);
        EXPECT_EQ(got->time_shift(), want.fields[i].shift);
        EXPECT_EQ(got->time_bits(), want.fields[i].bits);
      }
      if (want.fields[i].role == FieldRole::kSequence) {
        EXPECT_EQ(got->sequence_index(), index);
        EXPECT_EQ(got->sequence_shift(), want.fields[i].shift);
        EXPECT_EQ(got->sequence_bits(), want.fields[i].bits);
      }
    }
    EXPECT_EQ(got->field_index("nope"), -1);
  }
}

TEST(LayoutPresets, RoleNamesAreTheWordsTheSpecUses) {
  EXPECT_EQ(field_role_name(FieldRole::kTime), "time");
  EXPECT_EQ(field_role_name(FieldRole::kSequence), "sequence");
  EXPECT_EQ(field_role_name(FieldRole::kNode), "node");
  // Each preset's roles, by name, as `idforge layout` and /v1/decode show them.
  const Layout twitter = Layout::twitter();
  std::vector<std::string> roles;
  for (const Field& f : twitter.fields()) roles.emplace_back(field_role_name(f.role));
  EXPECT_EQ(roles, (std::vector<std::string>{"time", "node", "node", "sequence"}));
}

TEST(LayoutPresets, NamesAndLookup) {
  std::vector<std::string> names;
  for (const auto& p : expected_presets()) names.push_back(p.name);
  EXPECT_EQ(Layout::preset_names(), names);
  EXPECT_EQ(Layout::twitter(), must(Layout::preset("twitter")));
  EXPECT_EQ(must(Layout::preset("Discord")), must(Layout::preset("discord")));

  Result<Layout> bad = Layout::preset("flickr");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("flickr"));
  for (const auto& name : names) EXPECT_THAT(bad.status().message(), HasSubstr(name));
}

// Figures worked out independently (Python datetime) from docs/snowflake.md's table.
TEST(LayoutCapacity, Twitter) {
  const Capacity c = Layout::twitter().capacity();
  EXPECT_EQ(c.max_nodes, 1024u);
  EXPECT_EQ(c.ids_per_tick, 4096u);
  EXPECT_EQ(c.max_ids_per_second, 4096000.0);
  // 1288834974657 + (2^41 - 1): 69.7 years after 2010-11-04.
  EXPECT_EQ(c.last_unix_ms, 3487858230208);
  EXPECT_EQ(format_iso8601_utc(c.last_unix_ms), "2080-07-10T17:30:30.208Z");
}

TEST(LayoutCapacity, OtherPresets) {
  struct Want {
    const char* name;
    uint64_t nodes, per_tick;
    double per_second;
    const char* last;
  };
  const Want wants[] = {
      {"discord", 1024, 4096, 4096000.0, "2154-05-15T07:35:11.103Z"},
      {"instagram", 8192, 1024, 1024000.0, "2081-04-30T12:54:37.272Z"},
      {"sonyflake", 65536, 256, 25600.0, "2188-11-16T03:28:58.870Z"},  // "174 years"
      {"baidu", 4194304, 8192, 8192.0, "2024-11-20T13:24:15.000Z"},    // "8.7 years"
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.name);
    const Layout layout = must(Layout::preset(w.name));
    const Capacity c = layout.capacity();
    EXPECT_EQ(c.max_nodes, w.nodes);
    EXPECT_EQ(c.ids_per_tick, w.per_tick);
    EXPECT_EQ(c.max_ids_per_second, w.per_second);
    EXPECT_EQ(c.last_unix_ms,
              layout.epoch_ms() + static_cast<int64_t>(layout.max_tick()) * layout.tick_ms());
    EXPECT_EQ(format_iso8601_utc(c.last_unix_ms), w.last);
  }
}

TEST(LayoutCapacity, NoNodeFieldsMeansOneNode) {
  const Layout l = must(Layout::parse("time:50,seq:13"));
  EXPECT_EQ(l.capacity().max_nodes, 1u);
  EXPECT_EQ(l.capacity().ids_per_tick, 8192u);
}

// --- validation ----------------------------------------------------------------------

Status create_status(std::vector<Field> fields, int64_t epoch = 0, int64_t tick = 1) {
  return Layout::create("test", epoch, tick, std::move(fields)).status();
}

std::vector<Field> twitter_fields() { return Layout::twitter().fields(); }

void expect_invalid(const Status& s, const std::string& fragment) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_THAT(s.message(), HasSubstr(fragment));
}

TEST(LayoutValidation, WidthOutOfRangeNamesTheField) {
  auto fields = twitter_fields();
  fields[2].bits = 0;
  EXPECT_EQ(create_status(fields).message(), "layout field 'worker': width 0 is not in 1..63");
  fields[2].bits = -3;
  expect_invalid(create_status(fields), "'worker': width -3");
  fields = {{"time", 1, FieldRole::kTime}, {"sequence", 64, FieldRole::kSequence}};
  expect_invalid(create_status(fields), "'sequence': width 64 is not in 1..63");
}

TEST(LayoutValidation, TotalOverSixtyFourBits) {
  auto fields = twitter_fields();
  fields[1].bits = 7;  // 41 + 7 + 5 + 12 = 65
  expect_invalid(create_status(fields), "layout field 'sequence'");
  expect_invalid(create_status(fields), "65 bits");
  fields[1].bits = 6;  // exactly 64 is fine (discord)
  EXPECT_TRUE(create_status(fields).ok());
}

TEST(LayoutValidation, Names) {
  for (const char* bad : {"Worker", "1st", "", "a-b", "wörker", "_x", "a b"}) {
    SCOPED_TRACE(bad);
    auto fields = twitter_fields();
    fields[2].name = bad;
    const Status s = create_status(fields);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("layout field \""));
  }
  for (const char* good : {"w", "worker_2", "a1_b"}) {
    auto fields = twitter_fields();
    fields[2].name = good;
    EXPECT_TRUE(create_status(fields).ok()) << good;
  }
  auto fields = twitter_fields();
  fields[2].name = "datacenter";
  expect_invalid(create_status(fields), "layout field 'datacenter': the name is used twice");
}

TEST(LayoutValidation, FieldCount) {
  expect_invalid(create_status({}), "has 0 fields");
  std::vector<Field> many = {{"time", 20, FieldRole::kTime}, {"seq", 2, FieldRole::kSequence}};
  for (int i = 0; many.size() < static_cast<size_t>(Layout::kMaxFields); ++i) {
    many.push_back({"n" + std::to_string(i), 1, FieldRole::kNode});
  }
  EXPECT_TRUE(create_status(many).ok());
  many.push_back({"extra", 1, FieldRole::kNode});
  expect_invalid(create_status(many), "has 17 fields");
}

TEST(LayoutValidation, ExactlyOneTimeAndOneSequence) {
  auto fields = twitter_fields();
  fields[0].role = FieldRole::kNode;
  expect_invalid(create_status(fields), "no time field");
  fields = twitter_fields();
  fields[3].role = FieldRole::kNode;
  expect_invalid(create_status(fields), "no sequence field");
  fields = twitter_fields();
  fields[1].role = FieldRole::kTime;
  expect_invalid(create_status(fields), "layout field 'datacenter': a layout has one time field");
  fields = twitter_fields();
  fields[2].role = FieldRole::kSequence;
  expect_invalid(create_status(fields), "'sequence': a layout has one sequence field and 'worker'");
}

TEST(LayoutValidation, TickAndEpoch) {
  expect_invalid(create_status(twitter_fields(), 0, 0), "tick_ms 0");
  expect_invalid(create_status(twitter_fields(), 0, -5), "tick_ms -5");
  expect_invalid(create_status(twitter_fields(), -1, 1), "epoch_ms -1");
  EXPECT_TRUE(create_status(twitter_fields(), 0, 1).ok());
}

TEST(LayoutValidation, TimeRangeMustFitInt64) {
  const std::vector<Field> t63 = {{"time", 62, FieldRole::kTime},
                                  {"sequence", 1, FieldRole::kSequence}};
  // (2^62 - 1) * 2 = 2^63 - 2: fits with epoch 0 or 1, not 2.
  EXPECT_TRUE(create_status(t63, 0, 2).ok());
  EXPECT_TRUE(create_status(t63, 1, 2).ok());
  expect_invalid(create_status(t63, 2, 2), "layout field 'time'");
  expect_invalid(create_status(t63, 0, 3), "past the largest int64");
  const std::vector<Field> t64 = {{"time", 63, FieldRole::kTime},
                                  {"sequence", 1, FieldRole::kSequence}};
  EXPECT_TRUE(create_status(t64, 0, 1).ok());  // 2^63 - 1 = INT64_MAX exactly
  expect_invalid(create_status(t64, 1, 1), "'time'");
  // The largest layout that fits decodes its last tick without overflow.
  const Layout edge = must(Layout::create("edge", 0, 1, t64));
  EXPECT_EQ(edge.capacity().last_unix_ms, std::numeric_limits<int64_t>::max());
}

// --- parse ---------------------------------------------------------------------------

TEST(LayoutParse, PresetsAndOverrides) {
  EXPECT_EQ(must(Layout::parse("sonyflake")), must(Layout::preset("sonyflake")));
  EXPECT_EQ(must(Layout::parse(" TWITTER ")), Layout::twitter());
  const Layout l = must(Layout::parse("twitter", 1420041600000, 5));
  EXPECT_EQ(l.name(), "twitter");
  EXPECT_EQ(l.epoch_ms(), 1420041600000);
  EXPECT_EQ(l.tick_ms(), 5);
  EXPECT_EQ(l.fields(), Layout::twitter().fields());
  // Values outside ">= 0 / > 0" mean "not given" (header contract).
  EXPECT_EQ(must(Layout::parse("twitter", -1, 0)), Layout::twitter());
  // An override is still validated.
  expect_invalid(Layout::parse("baidu", std::numeric_limits<int64_t>::max() - 1000).status(),
                 "'time'");
}

TEST(LayoutParse, CustomSpecs) {
  const Layout l = must(Layout::parse("time:41, datacenter:5 ,worker : 5,sequence:12"));
  EXPECT_EQ(l.name(), "custom");
  EXPECT_EQ(l.epoch_ms(), Layout::twitter().epoch_ms());
  EXPECT_EQ(l.tick_ms(), 1);
  EXPECT_EQ(l.fields(), Layout::twitter().fields());
  EXPECT_EQ(l.spec(), "time:41,datacenter:5,worker:5,sequence:12");

  for (const char* seq : {"sequence", "seq", "increment"}) {
    const Layout s = must(Layout::parse(std::string("node:10,") + seq + ":8,time:40", 7, 3));
    EXPECT_EQ(s.sequence_index(), 1) << seq;
    EXPECT_EQ(s.time_index(), 2);
    EXPECT_EQ(s.fields()[0].role, FieldRole::kNode);
    EXPECT_EQ(s.epoch_ms(), 7);
    EXPECT_EQ(s.tick_ms(), 3);
  }
  // Two sequence-like names are two sequence fields.
  expect_invalid(Layout::parse("time:40,seq:8,sequence:8").status(), "one sequence field");
  expect_invalid(Layout::parse("ts:41,worker:10,sequence:12").status(), "no time field");
  expect_invalid(Layout::parse("time:41,worker:10,counter:12").status(), "no sequence field");
  expect_invalid(Layout::parse("time:41,Worker:10,seq:12").status(), "\"Worker\"");
}

TEST(LayoutParse, UnknownPresetListsThePresets) {
  const Status s = Layout::parse("snowflake").status();
  expect_invalid(s, "\"snowflake\"");
  for (const auto& name : Layout::preset_names()) EXPECT_THAT(s.message(), HasSubstr(name));
  expect_invalid(Layout::parse("").status(), "unknown layout \"\"");
}

TEST(LayoutParse, MalformedSpecQuotesTheBadPart) {
  expect_invalid(Layout::parse("time:41,worker,seq:12").status(), "\"worker\" is not name:bits");
  expect_invalid(Layout::parse("time:41,,seq:12").status(), "empty item");
  expect_invalid(Layout::parse("time:41,seq:12,").status(), "empty item");
  expect_invalid(Layout::parse("time:4x,seq:12").status(), "\"time:4x\": width \"4x\"");
  expect_invalid(Layout::parse("time:-4,seq:12").status(), "width \"-4\"");
  expect_invalid(Layout::parse("time:,seq:12").status(), "width \"\"");
  expect_invalid(Layout::parse("time:41:1,seq:12").status(), "\"time:41:1\" is not name:bits");
  expect_invalid(Layout::parse("time:99999999999,seq:12").status(), "\"99999999999\"");
  expect_invalid(Layout::parse("time:41,seq:0").status(), "'seq': width 0");
  // Control characters are escaped, not copied into the message.
  const Status s = Layout::parse(std::string("time:41,w\n\x01,seq:1")).status();
  EXPECT_THAT(s.message(), HasSubstr("w\\x0a\\x01"));
}

// --- decode / compose -----------------------------------------------------------------

TEST(LayoutDecode, TwitterWorkedExample) {
  // tests/data/published_snowflake.txt, first line.
  Result<DecodedId> d = Layout::twitter().decode(910499571847892992);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->id, 910499571847892992u);
  EXPECT_EQ(d->unix_ms, 1505914988849);
  EXPECT_EQ(d->get("datacenter"), 17u);
  EXPECT_EQ(d->get("worker"), 25u);
  EXPECT_EQ(d->get("sequence"), 0u);
  EXPECT_EQ(d->get("nope"), 0u);
  ASSERT_EQ(d->fields.size(), 4u);
  EXPECT_EQ(d->fields[0].name, "time");
  EXPECT_EQ(d->fields[0].role, FieldRole::kTime);
  EXPECT_EQ(d->fields[0].value, 1505914988849u - 1288834974657u);
  EXPECT_EQ(d->fields[1].shift, 17);
  EXPECT_EQ(d->fields[1].bits, 5);
  EXPECT_EQ(format_iso8601_utc(d->unix_ms), "2017-09-20T13:43:08.849Z");
}

TEST(LayoutDecode, DiscordDocsExample) {
  // Discord developer docs: 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7.
  Result<DecodedId> d = must(Layout::preset("discord")).decode(175928847299117063);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(format_iso8601_utc(d->unix_ms), "2016-04-30T11:18:25.796Z");
  EXPECT_EQ(d->get("worker"), 1u);
  EXPECT_EQ(d->get("process"), 0u);
  EXPECT_EQ(d->get("increment"), 7u);
}

TEST(LayoutDecode, BitsAboveTheLayoutAreRejected) {
  const uint64_t top = uint64_t{1} << 63;
  Result<DecodedId> d = Layout::twitter().decode(top);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(d.status().message(), "ID 9223372036854775808 does not fit the 63-bit layout twitter");
  EXPECT_TRUE(Layout::twitter().decode(top - 1).ok());
  // 64-bit discord reads every value as unsigned.
  Result<DecodedId> all = must(Layout::preset("discord")).decode(~uint64_t{0});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->get("increment"), 4095u);
  EXPECT_EQ(all->fields[0].value, (uint64_t{1} << 42) - 1);
  const Layout small = must(Layout::parse("time:20,seq:4"));
  EXPECT_TRUE(small.decode((uint64_t{1} << 24) - 1).ok());
  EXPECT_THAT(small.decode(uint64_t{1} << 24).status().message(),
              HasSubstr("24-bit layout custom"));
}

TEST(LayoutCompose, PositionalAndNamed) {
  const Layout& t = Layout::twitter();
  const uint64_t values[] = {1505914988849u - 1288834974657u, 17, 25, 0};
  Result<uint64_t> id = t.compose(values);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 910499571847892992u);

  const std::vector<std::pair<std::string, uint64_t>> named = {{"worker", 25}, {"datacenter", 17}};
  Result<uint64_t> id2 = t.compose_named(1505914988849, named);
  ASSERT_TRUE(id2.ok()) << id2.status().to_string();
  EXPECT_EQ(*id2, 910499571847892992u);
  // Absent fields are zero.
  EXPECT_EQ(t.compose_named(t.epoch_ms(), {}).value_or(1), 0u);
}

TEST(LayoutCompose, ValueTooWideNamesTheField) {
  const Layout& t = Layout::twitter();
  const uint64_t values[] = {0, 0, 32, 0};
  Result<uint64_t> id = t.compose(values);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(id.status().message(),
            "layout field 'worker': value 32 does not fit in 5 bits (max 31)");
  const uint64_t time_too_big[] = {uint64_t{1} << 41, 0, 0, 0};
  EXPECT_THAT(t.compose(time_too_big).status().message(), HasSubstr("'time'"));
  const uint64_t three[] = {0, 0, 0};
  expect_invalid(t.compose(three).status(), "needs 4 values, got 3");

  const std::vector<std::pair<std::string, uint64_t>> seq = {{"sequence", 4096}};
  EXPECT_THAT(t.compose_named(t.epoch_ms(), seq).status().message(), HasSubstr("'sequence'"));
}

TEST(LayoutCompose, NamedRejectsUnknownRepeatedAndTime) {
  const Layout& t = Layout::twitter();
  const std::vector<std::pair<std::string, uint64_t>> unknown = {{"shard", 1}};
  const Status s = t.compose_named(t.epoch_ms(), unknown).status();
  expect_invalid(s, "no field \"shard\"");
  EXPECT_THAT(s.message(), HasSubstr("datacenter, worker, sequence"));
  const std::vector<std::pair<std::string, uint64_t>> time = {{"time", 1}};
  expect_invalid(t.compose_named(t.epoch_ms(), time).status(), "'time': is the time field");
  const std::vector<std::pair<std::string, uint64_t>> twice = {{"worker", 1}, {"worker", 2}};
  expect_invalid(t.compose_named(t.epoch_ms(), twice).status(), "'worker': is given twice");
}

TEST(LayoutCompose, NamedTimeRange) {
  const Layout& t = Layout::twitter();
  const Status before = t.compose_named(t.epoch_ms() - 1, {}).status();
  EXPECT_EQ(before.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(before.message(), HasSubstr("before the epoch 2010-11-04T01:42:54.657Z"));
  const int64_t last = t.capacity().last_unix_ms;
  EXPECT_TRUE(t.compose_named(last, {}).ok());
  const Status after = t.compose_named(last + 1, {}).status();
  EXPECT_EQ(after.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(after.message(), HasSubstr("2080-07-10T17:30:30.208Z"));
}

TEST(LayoutTick, TickOfRoundsDownWithinATick) {
  const Layout s = must(Layout::preset("sonyflake"));
  EXPECT_EQ(s.tick_of(s.epoch_ms()).value_or(99), 0u);
  EXPECT_EQ(s.tick_of(s.epoch_ms() + 9).value_or(99), 0u);
  EXPECT_EQ(s.tick_of(s.epoch_ms() + 10).value_or(99), 1u);
  EXPECT_EQ(s.unix_ms_of(1), s.epoch_ms() + 10);
  // Every ms of the last tick is inside the range; the next one is not.
  const int64_t last = s.capacity().last_unix_ms;
  EXPECT_EQ(s.tick_of(last + 9).value_or(0), s.max_tick());
  EXPECT_FALSE(s.tick_of(last + 10).ok());
  EXPECT_FALSE(s.tick_of(std::numeric_limits<int64_t>::min()).ok());
  EXPECT_FALSE(s.tick_of(std::numeric_limits<int64_t>::max()).ok());
}

// --- bit_diagram ---------------------------------------------------------------------

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The cells of one diagram line, trimmed, without the row label.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream in(line);
  std::string cell;
  std::getline(in, cell, '|');  // the row label
  while (std::getline(in, cell, '|')) {
    const size_t first = cell.find_first_not_of(' ');
    const size_t last = cell.find_last_not_of(' ');
    cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  return cells;
}

void check_diagram(const Layout& layout, uint64_t id) {
  SCOPED_TRACE(layout.name() + " " + std::to_string(id));
  const std::string text = bit_diagram(layout, id);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 4u);
  const char* labels[] = {"field", "bits", "binary", "value"};
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].rfind(labels[i], 0), 0u) << lines[i];
    EXPECT_EQ(lines[i].size(), lines[0].size()) << "columns are aligned";
    EXPECT_EQ(lines[i].back(), '|') << "no trailing spaces";
    for (size_t c = 0; c < lines[i].size(); ++c) {
      if (lines[i][c] == '|') {
        EXPECT_EQ(lines[0][c], '|') << "column bars line up";
      }
    }
  }
  const auto names = cells_of(lines[0]);
  const auto binary = cells_of(lines[2]);
  const auto values = cells_of(lines[3]);
  const size_t unused = layout.total_bits() < 64 ? 1 : 0;
  ASSERT_EQ(names.size(), layout.fields().size() + unused);
  ASSERT_EQ(binary.size(), names.size());
  ASSERT_EQ(values.size(), names.size());
  // The binary cells, read left to right, are the id's 64 bits.
  std::string all_bits;
  for (const auto& b : binary) all_bits += b;
  EXPECT_EQ(all_bits, std::bitset<64>(id).to_string());
  for (size_t i = 0; i < layout.fields().size(); ++i) {
    const Field& f = layout.fields()[i];
    EXPECT_EQ(names[i + unused], f.name + " (" + std::to_string(f.bits) + ")");
    const uint64_t value =
        (id >> layout.shift(static_cast<int>(i))) & layout.max_value(static_cast<int>(i));
    EXPECT_EQ(values[i + unused], std::to_string(value));
  }
}

TEST(LayoutBitDiagram, ShowsEveryBitOfEveryField) {
  for (const auto& name : Layout::preset_names()) {
    const Layout l = must(Layout::preset(name));
    check_diagram(l, 0);
    check_diagram(l, 910499571847892992);
    check_diagram(l, 175928847299117063);
    check_diagram(l, ~uint64_t{0});  // also for an id that decode() rejects
  }
  check_diagram(must(Layout::parse("a:3,time:30,b:1,seq:2")), 0x123456789u);
}

TEST(LayoutBitDiagram, SmallLayoutByHand) {
  // 12 bits: time 3 (bits 11..9), node 1 (bit 8), seq 8 (bits 7..0); 52 unused bits.
  const Layout l = must(Layout::parse("time:3,node:1,seq:8"));
  const uint64_t id = 0b101'1'00000111;
  const std::string want =
      "field  | unused (52)                                          | time (3) | node (1) | seq "
      "(8)  |\n"
      "bits   | 63..12                                               | 11..9    | 8        | 7..0  "
      "   |\n"
      "binary | 0000000000000000000000000000000000000000000000000000 | 101      | 1        | "
      "00000111 |\n"
      "value  | 0                                                    | 5        | 1        | 7     "
      "   |\n";
  EXPECT_EQ(bit_diagram(l, id), want);
  EXPECT_THAT(bit_diagram(Layout::twitter(), 0), HasSubstr("| sign (1) | time (41)"));
  EXPECT_THAT(bit_diagram(must(Layout::preset("discord")), 0), HasSubstr("field  | time (42)"));
}

}  // namespace
}  // namespace idforge
