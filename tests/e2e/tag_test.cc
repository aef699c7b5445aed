// `idforge tag ...` and `idforge next --tag`: the segment-mode flow as a user runs it,
// against SQLite files in a temporary directory.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "run_idforge.h"
#include "support/ordering.h"

namespace idforge::e2e {
namespace {

using test::strictly_increasing;

class TagTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-tag-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs `idforge <args> --data-dir <tmp>/data`: every command then shares the
  // default store, sqlite:<tmp>/data/segments.db.
  RunResult run(std::vector<std::string> args) const {
    args.insert(args.end(), {"--data-dir", data_dir()});
    return run_idforge(args);
  }
  std::string data_dir() const { return dir_ + "/data"; }

  // Runs `next --tag` and checks what every successful run must satisfy.
  std::vector<uint64_t> next_ids(const std::string& tag, size_t count,
                                 std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"next", "--tag", tag, "--count", std::to_string(count)};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = extra.empty() ? run(args) : run_idforge(args);
    EXPECT_EQ(r.exit_code, 0) << r.summary();
    std::vector<uint64_t> ids = parse_ids(r.lines());
    EXPECT_EQ(ids.size(), count);
    return ids;
  }

  std::string dir_;
};

TEST_F(TagTest, CreateListShowAndSetStep) {
  RunResult created = run({"tag", "create", "order", "--start", "1000", "--step", "500",
                           "--description", "order numbers", "--template", "ORD-{seq}"});
  ASSERT_EQ(created.exit_code, 0) << created.summary();
  EXPECT_EQ(created.err, "");
  EXPECT_NE(created.out.find("created tag 'order'"), std::string::npos) << created.out;
  ASSERT_EQ(run({"tag", "create", "user"}).exit_code, 0);

  RunResult list = run({"tag", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.summary();
  nlohmann::json tags = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(tags.is_array()) << list.out;
  ASSERT_EQ(tags.size(), 2u) << list.out;
  const nlohmann::json& order = tags[0];
  EXPECT_EQ(order["name"], "order");
  EXPECT_EQ(order["max_id"], "999") << "IDs travel as strings; start 1000 means max_id 999";
  EXPECT_EQ(order["step"], 500);
  EXPECT_EQ(order["description"], "order numbers");
  EXPECT_EQ(order["serial_template"], "ORD-{seq}");
  EXPECT_EQ(order["store"], "sqlite:" + data_dir() + "/segments.db");
  EXPECT_NEAR(order["updated_at_ms"].get<double>(), static_cast<double>(now_unix_ms()), 60'000.0);
  EXPECT_EQ(tags[1]["name"], "user");
  EXPECT_EQ(tags[1]["max_id"], "0");
  EXPECT_EQ(tags[1]["step"], 1000) << "the default step";

  RunResult table = run({"tag", "list"});
  ASSERT_EQ(table.exit_code, 0) << table.summary();
  ASSERT_EQ(table.lines().size(), 3u) << table.out;
  EXPECT_EQ(table.lines()[0].rfind("TAG", 0), 0u) << table.out;
  EXPECT_NE(table.lines()[1].find("order numbers"), std::string::npos) << table.out;

  RunResult show = run({"tag", "show", "order"});
  ASSERT_EQ(show.exit_code, 0) << show.summary();
  EXPECT_EQ(text_value(show.out, "name"), "order");
  EXPECT_EQ(text_value(show.out, "max_id"), "999");
  EXPECT_EQ(text_value(show.out, "step"), "500");
  EXPECT_EQ(text_value(show.out, "description"), "order numbers");

  RunResult set = run({"tag", "set-step", "order", "2000"});
  ASSERT_EQ(set.exit_code, 0) << set.summary();
  RunResult shown = run({"tag", "show", "order", "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.summary();
  nlohmann::json one = nlohmann::json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(one.is_object()) << shown.out;
  EXPECT_EQ(one["step"], 2000);
  EXPECT_EQ(one["max_id"], "999");
}

TEST(TagHelpTest, EveryTagCommandHasHelpWithAnExample) {
  for (std::string sub : {"", "create", "list", "show", "set-step"}) {
    SCOPED_TRACE(sub);
    std::vector<std::string> args = {"tag"};
    if (!sub.empty()) args.push_back(sub);
    args.push_back("--help");
    RunResult r = run_idforge(args);
    EXPECT_EQ(r.exit_code, 0) << r.summary();
    EXPECT_NE(r.out.find("Usage: idforge tag"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Example"), std::string::npos) << r.out;
  }
  RunResult root = run_idforge({"--help"});
  EXPECT_NE(root.out.find("\n  tag "), std::string::npos) << root.out;
}

TEST_F(TagTest, EmptyStoreListsNothing) {
  RunResult json = run({"tag", "list", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.summary();
  EXPECT_EQ(json.out, "[]\n");
  RunResult text = run({"tag", "list"});
  ASSERT_EQ(text.exit_code, 0) << text.summary();
  EXPECT_NE(text.out.find("idforge tag create"), std::string::npos) << text.out;
}

TEST_F(TagTest, NextTagPrintsDistinctIncreasingIdsFromTheStart) {
  ASSERT_EQ(run({"tag", "create", "order", "--start", "5000", "--step", "100"}).exit_code, 0);
  std::vector<uint64_t> ids = next_ids("order", 1000);
  ASSERT_EQ(ids.size(), 1000u);
  EXPECT_TRUE(strictly_increasing(ids));
  EXPECT_EQ(ids.front(), 5000u) << "the first ID of a new tag is its start";
  // Within one segment the IDs are consecutive; the first run's are all one range.
  std::set<uint64_t> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), ids.size());
}

TEST_F(TagTest, RunsContinueAboveEachOther) {
  ASSERT_EQ(run({"tag", "create", "order", "--step", "10"}).exit_code, 0);
  uint64_t previous_max = 0;
  for (size_t count : {1, 25, 1000, 3, 10'000}) {
    std::vector<uint64_t> ids = next_ids("order", count);
    ASSERT_EQ(ids.size(), count);
    EXPECT_TRUE(strictly_increasing(ids));
    EXPECT_GT(ids.front(), previous_max) << "run of " << count;
    previous_max = ids.back();
  }
  // What the runs printed lies within what the store committed.
  RunResult show = run({"tag", "show", "order", "--json"});
  nlohmann::json tag = nlohmann::json::parse(show.out, nullptr, false);
  ASSERT_TRUE(tag.is_object()) << show.summary();
  EXPECT_GE(std::stoull(tag["max_id"].get<std::string>()), previous_max);
}

TEST_F(TagTest, UnknownTagIsAUsageErrorWithAHint) {
  RunResult next = run({"next", "--tag", "nope"});
  EXPECT_TRUE(is_usage_error(next, "unknown tag 'nope'"));
  EXPECT_NE(next.err.find("idforge tag create nope"), std::string::npos) << next.err;
  EXPECT_TRUE(is_usage_error(run({"tag", "show", "nope"}), "unknown tag 'nope'"));
  EXPECT_TRUE(is_usage_error(run({"tag", "set-step", "nope", "5"}), "unknown tag 'nope'"));
}

TEST_F(TagTest, BadStoreUrlsSayWhatIsWrong) {
  RunResult scheme = run_idforge({"next", "--tag", "t", "--store", "mongodb://db/ids"});
  EXPECT_TRUE(is_usage_error(scheme, "unknown store URL 'mongodb://db/ids'"));
  RunResult no_user = run_idforge({"next", "--tag", "t", "--store", "mysql://db/ids"});
  EXPECT_TRUE(is_usage_error(no_user, "bad mysql store URL 'mysql://db/ids': no user"));
  EXPECT_TRUE(is_usage_error(run_idforge({"tag", "list", "--store", "sqlite:"}), "sqlite:"));

  // A directory that is not there is an outage of the store, not bad usage: exit 1.
  const std::string missing = dir_ + "/no/such/dir/ids.db";
  RunResult down = run_idforge({"next", "--tag", "t", "--store", "sqlite:" + missing});
  EXPECT_EQ(down.exit_code, 1) << down.summary();
  EXPECT_EQ(down.out, "");
  EXPECT_TRUE(down.one_error_line()) << down.summary();
  EXPECT_NE(down.err.find(missing), std::string::npos) << down.err;
  EXPECT_NE(down.err.find("does not exist"), std::string::npos) << down.err;
}

TEST_F(TagTest, BadInputIsAUsageError) {
  EXPECT_TRUE(is_usage_error(run({"tag", "create", "has space"}), "[A-Za-z0-9_.:-]"));
  EXPECT_TRUE(is_usage_error(run({"tag", "create", std::string(65, 'x')}), "64"));
  EXPECT_TRUE(is_usage_error(run({"tag", "create", "t", "--step", "0"}), "step"));
  EXPECT_TRUE(is_usage_error(run({"tag", "create", "t", "--step", "1000000001"}), "1000000000"));
  EXPECT_TRUE(is_usage_error(run({"tag", "create", "t", "--start", "0"}), "start"));
  EXPECT_TRUE(is_usage_error(run({"tag", "create", "t", "--start", "x"}), "--start"));
  // Templates are checked when the tag is created, with the position of the mistake.
  EXPECT_TRUE(
      is_usage_error(run({"tag", "create", "t", "--template", "PAY{yyy}{seq}"}), "position 5"));
  EXPECT_TRUE(is_usage_error(run({"tag", "create", "t", "--template", "PAY{yyyy}"}), "seq"));
  EXPECT_TRUE(is_usage_error(run({"tag", "create"}), "tag create --help"));
  EXPECT_TRUE(is_usage_error(run({"tag", "show"}), "tag show --help"));
  EXPECT_TRUE(is_usage_error(run_idforge({"tag"}), "tag --help"));

  ASSERT_EQ(run({"tag", "create", "t"}).exit_code, 0);
  RunResult again = run({"tag", "create", "t"});
  EXPECT_TRUE(is_usage_error(again, "already exists"));
  EXPECT_TRUE(is_usage_error(run({"tag", "set-step", "t", "0"}), "step"));
  EXPECT_TRUE(is_usage_error(run({"tag", "set-step", "t", "many"}), "many"));
  EXPECT_TRUE(is_usage_error(run({"tag", "set-step", "t"}), "tag set-step --help"));

  EXPECT_TRUE(is_usage_error(run({"next", "--tag", "t", "--count", "0"}), "--count"));
  EXPECT_TRUE(is_usage_error(run({"next", "--tag", "t", "--worker", "3"}), "--worker"));
  EXPECT_TRUE(is_usage_error(run({"next", "--tag", "bad/name"}), "[A-Za-z0-9_.:-]"));
  EXPECT_TRUE(is_usage_error(run({"next"}), "--tag"));  // --data-dir alone
  EXPECT_TRUE(is_usage_error(
      run_idforge({"next", "--tag", "t", "--store", "sqlite:/x", "--store", "sqlite:/x"}),
      "given twice"));
}

TEST_F(TagTest, DataDirIsCreatedPrivate) {
  const std::string nested = dir_ + "/a/b/data";
  RunResult r = run_idforge({"tag", "create", "t", "--data-dir", nested});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  struct stat st {};
  ASSERT_EQ(::stat(nested.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(std::filesystem::exists(nested + "/segments.db"));
}

TEST_F(TagTest, DefaultDataDirIsInTheWorkingDirectory) {
  // The child inherits the working directory; restore ours whatever happens.
  struct Cwd {
    std::filesystem::path saved = std::filesystem::current_path();
    ~Cwd() { std::filesystem::current_path(saved); }
  } cwd;
  std::filesystem::current_path(dir_);
  RunResult r = run_idforge({"tag", "create", "t"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_NE(r.out.find("idforge-data/segments.db"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/idforge-data/segments.db"));
  RunResult next = run_idforge({"next", "--tag", "t", "--count", "3"});
  EXPECT_EQ(next.exit_code, 0) << next.summary();
  EXPECT_EQ(next.lines(), (std::vector<std::string>{"1", "2", "3"}));
}

// With --store, tag commands leave the data directory alone; issuing IDs keeps there only
// the record of what was served (segments-served), never a store.
TEST_F(TagTest, ExplicitStoreLeavesTheDataDirAlone) {
  const std::string db = "sqlite:" + dir_ + "/explicit.db";
  RunResult r = run_idforge({"tag", "create", "t", "--store", db, "--data-dir", dir_ + "/unused"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/unused"));
  EXPECT_EQ(next_ids("t", 5, {"--store", db, "--data-dir", dir_ + "/node"}),
            (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/node/segments-served"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/node/segments.db"));
}

// A store that lost a tag must not get it back below what was served: the fleet floor and
// the data directory remember, `tag served` tells, and `tag create` starts above the
// floor, or, with no floor (static: worker ids), refuses a start at or below what the
// data directory served.
TEST_F(TagTest, ARecreatedTagMustStartAboveWhatThisDataDirServed) {
  const std::string node = dir_ + "/node";
  const std::string lost = "sqlite:" + dir_ + "/lost.db";
  ASSERT_EQ(
      run_idforge({"tag", "create", "order", "--step", "100", "--store", lost, "--data-dir", node})
          .exit_code,
      0);
  EXPECT_EQ(next_ids("order", 5, {"--store", lost, "--data-dir", node}).front(), 1u);

  RunResult served = run_idforge({"tag", "served", "order", "--data-dir", node, "--json"});
  ASSERT_EQ(served.exit_code, 0) << served.summary();
  EXPECT_NE(served.out.find("\"highest\":\"100\""), std::string::npos) << served.out;
  EXPECT_NE(served.out.find("\"start_above\":\"100\""), std::string::npos) << served.out;

  const std::string fresh = "sqlite:" + dir_ + "/fresh.db";
  RunResult refused = run_idforge(
      {"tag", "create", "order", "--store", fresh, "--data-dir", node, "--registry", "static:0/0"});
  EXPECT_TRUE(is_usage_error(refused, "--start 101")) << refused.summary();
  RunResult moved = run_idforge({"tag", "create", "order", "--store", fresh, "--data-dir", node});
  ASSERT_EQ(moved.exit_code, 0) << moved.summary();
  EXPECT_NE(moved.err.find("it starts at 101 instead of 1"), std::string::npos) << moved.err;
  // This node knew its store place under another history, so the new store's tags also
  // move forward by the failover margin (docs/stores.md): above 100 in any case.
  EXPECT_GT(next_ids("order", 1, {"--store", fresh, "--data-dir", node}).front(), 100u);
}

TEST_F(TagTest, StripedOverTwoStoresIdsAreDistinctAndUseBothResidues) {
  const std::vector<std::string> stores = {"--store",    "sqlite:" + dir_ + "/a.db",
                                           "--store",    "sqlite:" + dir_ + "/b.db",
                                           "--data-dir", dir_ + "/node"};
  std::vector<std::string> create = {"tag", "create", "order", "--step", "50"};
  create.insert(create.end(), stores.begin(), stores.end());
  RunResult made = run_idforge(create);
  ASSERT_EQ(made.exit_code, 0) << made.summary();
  EXPECT_EQ(made.lines().size(), 2u) << "one line per store: " << made.out;

  std::set<uint64_t> seen;
  std::set<uint64_t> residues;
  for (int run = 0; run < 3; ++run) {
    for (uint64_t id : next_ids("order", 2000, stores)) {
      EXPECT_TRUE(seen.insert(id).second) << "repeated " << id;
      residues.insert(id % 2);
    }
  }
  EXPECT_EQ(residues.size(), 2u) << "both stores handed out IDs";

  // Creating again reports the failure of each store on one line.
  RunResult again = run_idforge(create);
  EXPECT_TRUE(is_usage_error(again, "a.db"));
  EXPECT_NE(again.err.find("b.db"), std::string::npos) << again.err;
}

TEST_F(TagTest, StripedRunGoesOnWhileOneStoreIsDown) {
  const std::string good = "sqlite:" + dir_ + "/a.db";
  ASSERT_EQ(run_idforge({"tag", "create", "order", "--step", "10", "--store", good, "--data-dir",
                         dir_ + "/node"})
                .exit_code,
            0);
  RunResult r = run_idforge({"next", "--tag", "order", "--count", "100", "--store", good, "--store",
                             "sqlite:" + dir_ + "/missing/b.db", "--data-dir", dir_ + "/node"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  std::vector<uint64_t> ids = parse_ids(r.lines());
  ASSERT_EQ(ids.size(), 100u);
  for (uint64_t id : ids) EXPECT_EQ(id % 2, 0u) << "store 0 keeps its own residue: " << id;
  EXPECT_NE(r.err.find("missing/b.db"), std::string::npos) << "the outage is reported";
}

}  // namespace
}  // namespace idforge::e2e
