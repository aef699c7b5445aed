// `idforge serve` configuration as a user meets it, through --print-config (which loads
// everything the server would and exits without starting it): the defaults
// docs/operations.md lists, flags > IDFORGE_* > config file > defaults, and every kind
// of mistake giving one line that names the key, with exit status 2. The server itself
// starting and stopping is in serve_lifecycle_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "run_idforge.h"

namespace idforge::e2e {
namespace {

namespace fs = std::filesystem;

// The settings docs/operations.md documents, written out here so the test checks the
// binary against the documentation rather than against its own table.
const std::vector<std::string> kFlags = {"--config",
                                         "--print-config",
                                         "--http",
                                         "--resp",
                                         "--data-dir",
                                         "--store",
                                         "--registry",
                                         "--identity",
                                         "--layout",
                                         "--epoch",
                                         "--tick-ms",
                                         "--policy",
                                         "--max-drift-ms",
                                         "--max-wait-ms",
                                         "--admin-token",
                                         "--admin-token-file",
                                         "--max-count",
                                         "--io-threads",
                                         "--worker-threads",
                                         "--idle-timeout-ms",
                                         "--request-timeout-ms",
                                         "--max-connections",
                                         "--max-pending-bytes",
                                         "--segment-wait-ms",
                                         "--max-step",
                                         "--serial-zone",
                                         "--shutdown-grace-ms"};
const std::vector<std::string> kEnv = {"IDFORGE_CONFIG",
                                       "IDFORGE_HTTP",
                                       "IDFORGE_RESP",
                                       "IDFORGE_DATA_DIR",
                                       "IDFORGE_STORE",
                                       "IDFORGE_REGISTRY",
                                       "IDFORGE_IDENTITY",
                                       "IDFORGE_LAYOUT",
                                       "IDFORGE_EPOCH",
                                       "IDFORGE_TICK_MS",
                                       "IDFORGE_POLICY",
                                       "IDFORGE_MAX_DRIFT_MS",
                                       "IDFORGE_MAX_WAIT_MS",
                                       "IDFORGE_ADMIN_TOKEN",
                                       "IDFORGE_ADMIN_TOKEN_FILE",
                                       "IDFORGE_MAX_COUNT",
                                       "IDFORGE_IO_THREADS",
                                       "IDFORGE_WORKER_THREADS",
                                       "IDFORGE_IDLE_TIMEOUT_MS",
                                       "IDFORGE_REQUEST_TIMEOUT_MS",
                                       "IDFORGE_MAX_CONNECTIONS",
                                       "IDFORGE_MAX_PENDING_BYTES",
                                       "IDFORGE_SEGMENT_WAIT_MS",
                                       "IDFORGE_MAX_STEP",
                                       "IDFORGE_SERIAL_ZONE",
                                       "IDFORGE_SHUTDOWN_GRACE_MS",
                                       "IDFORGE_LOG_LEVEL",
                                       "IDFORGE_LOG_FORMAT",
                                       "IDFORGE_ACCESS_LOG_SAMPLE",
                                       "IDFORGE_SLOW_STORE_MS"};

// The TOML lines of --print-config as key -> value, "[section]" prefixes included and
// trailing comments dropped: {"limits.max_count", "10000"}.
std::map<std::string, std::string> values_of(const RunResult& result) {
  std::map<std::string, std::string> values;
  std::string section;
  for (const std::string& line : result.lines()) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1) + ".";
      continue;
    }
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 3);
    const size_t comment = value.find("  #");
    if (comment != std::string::npos) value.resize(comment);
    values[section + line.substr(0, eq)] = value;
  }
  return values;
}

class ServeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-serve-config-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // The binary inherits this process's environment; start from none of its settings.
    for (const std::string& name : kEnv) {
      if (const char* old = std::getenv(name.c_str())) saved_[name] = old;
      unsetenv(name.c_str());
    }
  }
  void TearDown() override {
    for (const std::string& name : kEnv) unsetenv(name.c_str());
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    fs::remove_all(dir_);
  }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  RunResult print_config(std::vector<std::string> args) {
    args.insert(args.begin(), "serve");
    args.push_back("--print-config");
    return run_idforge(args);
  }

  std::string dir_;
  std::map<std::string, std::string> saved_;
};

TEST_F(ServeConfigTest, DefaultsAreTheDocumentedOnes) {
  RunResult r = print_config({});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_TRUE(r.err.empty()) << r.summary();
  auto v = values_of(r);
  EXPECT_EQ(v["http"], "\"127.0.0.1:8080\"");
  EXPECT_EQ(v["resp"], "\"127.0.0.1:6380\"");
  EXPECT_EQ(v["data_dir"], "\"./idforge-data\"");
  EXPECT_EQ(v["shutdown_grace_ms"], "5000");
  EXPECT_EQ(v["snowflake.layout"], "\"twitter\"");
  EXPECT_EQ(v["snowflake.epoch"], "1288834974657");
  EXPECT_EQ(v["snowflake.tick_ms"], "1");
  EXPECT_EQ(v["snowflake.policy"], "\"logical\"");
  EXPECT_EQ(v["segment.stores"], "[]");     // SQLite in the data dir
  EXPECT_EQ(v["worker.registry"], "\"\"");  // local: in the data dir
  EXPECT_EQ(v["limits.max_count"], "10000");
  EXPECT_EQ(v["threads.io"], "0");  // one loop per core
  EXPECT_NE(r.out.find("# admin_token: not set"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sqlite:DATA_DIR/segments.db"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("local:DATA_DIR/workers"), std::string::npos) << r.out;
}

TEST_F(ServeConfigTest, FlagsBeatEnvBeatFileBeatDefaults) {
  const std::string file = write("idforge.toml",
                                 "http = \"127.0.0.1:9001\"\n"
                                 "resp = \"127.0.0.1:9101\"\n"
                                 "[snowflake]\npolicy = \"wait\"\n"
                                 "[limits]\nmax_count = 50\n");
  setenv("IDFORGE_HTTP", "127.0.0.1:9002", 1);
  setenv("IDFORGE_MAX_COUNT", "60", 1);
  RunResult r = print_config({"--config", file, "--max-count", "70"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  auto v = values_of(r);
  EXPECT_EQ(v["limits.max_count"], "70");          // flag over env and file
  EXPECT_EQ(v["http"], "\"127.0.0.1:9002\"");      // env over file
  EXPECT_EQ(v["resp"], "\"127.0.0.1:9101\"");      // file over default
  EXPECT_EQ(v["snowflake.policy"], "\"wait\"");    // file over default
  EXPECT_EQ(v["data_dir"], "\"./idforge-data\"");  // default
  // Each value says where it came from.
  EXPECT_NE(r.out.find("max_count = 70  # flag --max-count"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("http = \"127.0.0.1:9002\"  # env IDFORGE_HTTP"), std::string::npos);
  EXPECT_NE(r.out.find("policy = \"wait\"  # file " + file + ":4"), std::string::npos) << r.out;

  unsetenv("IDFORGE_MAX_COUNT");
  v = values_of(print_config({"--config", file}));
  EXPECT_EQ(v["limits.max_count"], "50");

  // IDFORGE_CONFIG names the file when --config does not.
  unsetenv("IDFORGE_HTTP");
  setenv("IDFORGE_CONFIG", file.c_str(), 1);
  v = values_of(print_config({}));
  EXPECT_EQ(v["http"], "\"127.0.0.1:9001\"");
  const std::string other = write("other.toml", "http = \"127.0.0.1:9003\"\n");
  v = values_of(print_config({"--config", other}));
  EXPECT_EQ(v["http"], "\"127.0.0.1:9003\"");
}

TEST_F(ServeConfigTest, StoreListsFromEachLayer) {
  const std::string file =
      write("s.toml", "[segment]\nstores = [\"sqlite:/a.db\", \"redis://127.0.0.1:6379\"]\n");
  auto v = values_of(print_config({"--config", file}));
  EXPECT_EQ(v["segment.stores"], "[\"sqlite:/a.db\", \"redis://127.0.0.1:6379\"]");
  // The variable holds several URLs separated by commas, and replaces the file's list.
  setenv("IDFORGE_STORE", "postgres://u@h1:5432/db, postgres://u@h2:5432/db", 1);
  v = values_of(print_config({"--config", file}));
  EXPECT_EQ(v["segment.stores"], "[\"postgres://u@h1:5432/db\", \"postgres://u@h2:5432/db\"]");
  // Repeated flags replace both.
  v = values_of(
      print_config({"--config", file, "--store", "sqlite:/x.db", "--store", "sqlite:/y.db"}));
  EXPECT_EQ(v["segment.stores"], "[\"sqlite:/x.db\", \"sqlite:/y.db\"]");
}

TEST_F(ServeConfigTest, PrintedConfigReadsBackTheSame) {
  RunResult first =
      print_config({"--http", "0.0.0.0:0", "--layout", "sonyflake", "--epoch", "2020-01-01",
                    "--store", "sqlite:" + dir_ + "/s.db", "--registry", "static:3", "--max-count",
                    "7", "--io-threads", "2", "--serial-zone", "+08:00"});
  ASSERT_EQ(first.exit_code, 0) << first.summary();
  const std::string file = write("printed.toml", first.out);
  RunResult second = print_config({"--config", file});
  ASSERT_EQ(second.exit_code, 0) << second.summary();
  EXPECT_EQ(values_of(second), values_of(first));
  EXPECT_EQ(values_of(second)["snowflake.epoch"], "1577836800000");
  EXPECT_EQ(values_of(second)["snowflake.tick_ms"], "10");  // sonyflake's own
}

TEST_F(ServeConfigTest, EpochInTomlMayBeADateTime) {
  const std::string file = write("e.toml", "[snowflake]\nepoch = 2020-01-01T08:00:00+08:00\n");
  auto v = values_of(print_config({"--config", file}));
  EXPECT_EQ(v["snowflake.epoch"], "1577836800000");
}

TEST_F(ServeConfigTest, AdminTokenIsNeverPrinted) {
  setenv("IDFORGE_ADMIN_TOKEN", "s3cret-from-env", 1);
  RunResult r = print_config({});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# admin_token: set, env IDFORGE_ADMIN_TOKEN"), std::string::npos) << r.out;

  // A token file given by a higher layer wins over the variable's token.
  const std::string token = write("token", "  file-s3cret\n");
  r = print_config({"--admin-token-file", token});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("admin_token_file = \"" + token + "\"  # flag --admin-token-file"),
            std::string::npos)
      << r.out;
}

TEST_F(ServeConfigTest, TheClusterExampleIsValid) {
  // tests/e2e/ -> docs/examples/
  const fs::path example =
      fs::path(__FILE__).parent_path().parent_path().parent_path() / "docs/examples/cluster.toml";
  ASSERT_TRUE(fs::exists(example)) << example;
  // Its token file is on the cluster's machines; the variable points at one here.
  setenv("IDFORGE_ADMIN_TOKEN_FILE", write("token", "t0ken\n").c_str(), 1);
  RunResult r = print_config({"--config", example.string()});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  auto v = values_of(r);
  EXPECT_EQ(v["segment.stores"].rfind("[\"postgres://", 0), 0u) << r.out;
  EXPECT_EQ(v["worker.registry"].rfind("\"etcd://", 0), 0u) << r.out;
}

TEST_F(ServeConfigTest, HelpMentionsEveryFlagAndVariable) {
  RunResult r = run_idforge({"serve", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  for (const std::string& flag : kFlags) {
    EXPECT_NE(r.out.find(flag + " "), std::string::npos) << flag;
  }
  for (const std::string& name : kEnv) EXPECT_NE(r.out.find(name), std::string::npos) << name;
}

// --- mistakes: exit 2, nothing on stdout, one line naming the key ---------------------

TEST_F(ServeConfigTest, UnknownKeysAreErrorsListingTheKnownOnes) {
  std::string file = write("typo.toml", "[snowflake]\npolcy = \"wait\"\n");
  RunResult r = print_config({"--config", file});
  EXPECT_TRUE(is_usage_error(r, "unknown key 'snowflake.polcy' in " + file + ":2"));
  EXPECT_NE(r.err.find("policy"), std::string::npos) << r.err;

  file = write("top.toml", "max_count = 5\n");  // belongs under [limits]
  r = print_config({"--config", file});
  EXPECT_TRUE(is_usage_error(r, "unknown key 'max_count'"));
  EXPECT_NE(r.err.find("[limits]"), std::string::npos) << r.err;

  file = write("deep.toml", "[limits.x]\ny = 1\n");
  EXPECT_TRUE(is_usage_error(print_config({"--config", file}), "unknown key 'limits.x'"));
}

TEST_F(ServeConfigTest, WrongTypesNameTheKeyAndTheType) {
  std::string file = write("t1.toml", "[limits]\nmax_count = \"5\"\n");
  RunResult r = print_config({"--config", file});
  EXPECT_TRUE(is_usage_error(r, file + ":2: limits.max_count must be an integer, got a string"));

  file = write("t2.toml", "http = 8080\n");
  EXPECT_TRUE(is_usage_error(print_config({"--config", file}), "http must be a string"));

  file = write("t3.toml", "[segment]\nstores = \"sqlite:/a.db\"\n");
  EXPECT_TRUE(is_usage_error(print_config({"--config", file}),
                             "segment.stores must be an array of strings"));

  file = write("t4.toml", "snowflake = \"twitter\"\n");
  EXPECT_TRUE(is_usage_error(print_config({"--config", file}), "snowflake must be a table"));
}

TEST_F(ServeConfigTest, OutOfRangeValuesNameTheKey) {
  std::string file = write("r1.toml", "[limits]\nmax_count = 0\n");
  EXPECT_TRUE(is_usage_error(print_config({"--config", file}),
                             "limits.max_count must be a whole number from 1 to"));
  file = write("r2.toml", "[threads]\nio = -1\n");
  EXPECT_TRUE(is_usage_error(print_config({"--config", file}), "threads.io"));

  EXPECT_TRUE(is_usage_error(print_config({"--max-count", "0"}), "--max-count"));
  setenv("IDFORGE_MAX_COUNT", "lots", 1);
  EXPECT_TRUE(is_usage_error(print_config({}), "IDFORGE_MAX_COUNT"));
  // A bad value is an error even when a higher layer overrides it.
  EXPECT_TRUE(is_usage_error(print_config({"--max-count", "5"}), "IDFORGE_MAX_COUNT"));
}

TEST_F(ServeConfigTest, BadEndpointsNameTheSetting) {
  EXPECT_TRUE(is_usage_error(print_config({"--http", "127.0.0.1:70000"}), "--http"));
  EXPECT_TRUE(is_usage_error(print_config({"--resp", "nowhere"}), "--resp"));
  const std::string file = write("ep.toml", "\nresp = \"127.0.0.1\"\n");
  EXPECT_TRUE(is_usage_error(print_config({"--config", file}), file + ":2: resp"));
}

TEST_F(ServeConfigTest, BadValuesOfOtherKinds) {
  EXPECT_TRUE(is_usage_error(print_config({"--policy", "yolo"}), "--policy must be logical"));
  EXPECT_TRUE(is_usage_error(print_config({"--layout", "twiter"}), "unknown layout 'twiter'"));
  EXPECT_TRUE(is_usage_error(print_config({"--store", "mongodb://db/ids"}), "--store"));
  EXPECT_TRUE(is_usage_error(print_config({"--store", "sqlite:/a.db", "--store", "sqlite:/a.db"}),
                             "given twice"));
  EXPECT_TRUE(is_usage_error(print_config({"--registry", "consul://x"}), "--registry"));
  EXPECT_TRUE(is_usage_error(print_config({"--serial-zone", "Nowhere/City"}), "--serial-zone"));
  setenv("IDFORGE_EPOCH", "yesterday", 1);
  EXPECT_TRUE(is_usage_error(print_config({}), "IDFORGE_EPOCH"));
  unsetenv("IDFORGE_EPOCH");
  // 86400000 ms ticks overflow twitter's 41-bit time field: the tick is to blame.
  EXPECT_TRUE(is_usage_error(print_config({"--tick-ms", "86400000"}), "--tick-ms"));
}

TEST_F(ServeConfigTest, MissingOrMalformedFiles) {
  const std::string missing = dir_ + "/missing.toml";
  RunResult r = print_config({"--config", missing});
  EXPECT_TRUE(is_usage_error(r, "--config: cannot read config file"));
  EXPECT_NE(r.err.find("missing.toml"), std::string::npos) << r.err;

  setenv("IDFORGE_CONFIG", missing.c_str(), 1);
  EXPECT_TRUE(is_usage_error(print_config({}), "IDFORGE_CONFIG"));
  unsetenv("IDFORGE_CONFIG");

  const std::string bad = write("bad.toml", "http = \"127.0.0.1:1\"\n[limits\nmax_count = 5\n");
  r = print_config({"--config", bad});
  EXPECT_TRUE(is_usage_error(r, bad + ":2:"));  // file:line:col
  EXPECT_NE(r.err.find("invalid TOML"), std::string::npos) << r.err;

  EXPECT_TRUE(
      is_usage_error(print_config({"--admin-token-file", dir_ + "/none"}), "--admin-token-file"));
  EXPECT_TRUE(
      is_usage_error(print_config({"--admin-token-file", write("empty", "\n")}), "is empty"));
}

// Non-ASCII bytes outside strings and comments are undefined behaviour in the packaged
// toml++ (fuzz/regressions/fuzz_config/ holds such an input); they are refused with
// their position first, while the same bytes inside strings and comments stay fine.
TEST_F(ServeConfigTest, NonAsciiOutsideStringsIsRefusedWithItsPosition) {
  const std::string bad = write("bad.toml", "# caf\xc3\xa9 ok\n\xc3\xb4 = 1\n");
  RunResult r = print_config({"--config", bad});
  EXPECT_TRUE(is_usage_error(r, bad + ":2:1: invalid TOML: a non-ASCII character"));
  const std::string good =
      write("good.toml",
            "# r\xc3\xa9sum\xc3\xa9\ndata_dir = \"/tmp/caf\xc3\xa9\" # \xc3\xb4\n"
            "[worker]\nidentity = '''n\xc3\xb6"
            "de'''\n");
  r = print_config({"--config", good});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(ServeConfigTest, TokenAndTokenFileInOneLayerContradict) {
  const std::string token = write("token", "abc\n");
  const std::string file =
      write("both.toml", "admin_token = \"x\"\nadmin_token_file = \"" + token + "\"\n");
  EXPECT_TRUE(is_usage_error(print_config({"--config", file}), "both give the admin token"));
  EXPECT_TRUE(is_usage_error(print_config({"--admin-token", "x", "--admin-token-file", token}),
                             "--admin-token and --admin-token-file"));
}

// docs/operations.md's settings table is the settings table in the code, row for row
// (scripts/update-settings-doc rewrites it).
TEST_F(ServeConfigTest, DocsTableIsTheSettingsTable) {
  const fs::path doc =
      fs::path(__FILE__).parent_path().parent_path().parent_path() / "docs/operations.md";
  std::ifstream in(doc);
  ASSERT_TRUE(in) << doc;
  const std::string begin =
      "<!-- settings table: generated by `idforge serve --describe-settings markdown` -->";
  std::string line;
  std::string table;
  bool inside = false;
  bool ended = false;
  while (std::getline(in, line)) {
    if (line == begin) {
      inside = true;
    } else if (line == "<!-- end of settings table -->") {
      ended = inside;
      inside = false;
    } else if (inside) {
      table += line + "\n";
    }
  }
  ASSERT_TRUE(ended) << doc << " lacks the settings table's marker lines";
  RunResult r = run_idforge({"serve", "--describe-settings", "markdown"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_GT(r.lines().size(), 30U);
  EXPECT_EQ(table, r.out) << "docs/operations.md differs from the settings table: run "
                             "scripts/update-settings-doc";
}

// The commented file of every setting (the Debian package's /etc/idforge/idforge.toml)
// gives the defaults when every line is uncommented, and names every setting.
TEST_F(ServeConfigTest, CommentedDefaultFileReadsBackAsTheDefaults) {
  RunResult described = run_idforge({"serve", "--describe-settings", "toml"});
  ASSERT_EQ(described.exit_code, 0) << described.summary();
  std::string uncommented;
  size_t settings = 0;
  for (const std::string& line : described.lines()) {
    const bool is_setting = line.size() > 2 && line[0] == '#' && line[1] == ' ' &&
                            line.find(" = ") != std::string::npos &&
                            line.find_first_of(" ", 2) == line.find(" = ");
    if (is_setting) ++settings;
    uncommented += (is_setting ? line.substr(2) : line) + "\n";
  }
  EXPECT_EQ(settings, values_of(print_config({})).size() + 1);  // + the admin token
  const std::string file = write("all.toml", uncommented);
  RunResult loaded = print_config({"--config", file});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.summary() << uncommented;
  EXPECT_EQ(values_of(loaded), values_of(print_config({})));
  EXPECT_NE(loaded.out.find("max_count = 10000  # file " + file), std::string::npos) << loaded.out;

  EXPECT_TRUE(is_usage_error(run_idforge({"serve", "--describe-settings", "yaml"}),
                             "unknown format 'yaml'"));
}

// --print-config names the source of every value, defaults included.
TEST_F(ServeConfigTest, EverySettingShowsItsSource) {
  RunResult r = print_config({"--log-level", "debug"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_NE(r.out.find("level = \"debug\"  # flag --log-level"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("format = \"text\"  # default"), std::string::npos) << r.out;
  for (const std::string& line : r.lines()) {
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    EXPECT_NE(line.find("  # "), std::string::npos) << "no source: " << line;
  }
  EXPECT_TRUE(is_usage_error(print_config({"--log-level", "loud"}),
                             "--log-level must be trace, debug, info, warn, error or off"));
  EXPECT_TRUE(
      is_usage_error(print_config({"--log-format", "xml"}), "--log-format must be text or json"));
}

// With --log-format json every line on stderr is one JSON object, the error that ends
// the process too (it used to be a plain "idforge: ..." line).
TEST_F(ServeConfigTest, WithJsonLogsEveryStderrLineIsJsonTheFatalErrorToo) {
  RunResult r = run_idforge({"serve", "--log-format", "json", "--http", "127.0.0.1:0", "--resp",
                             "127.0.0.1:0", "--data-dir", dir_ + "/data", "--tokens",
                             dir_ + "/no-such-tokens-file"});
  EXPECT_NE(r.exit_code, 0);
  std::istringstream lines(r.err);
  std::string line;
  int count = 0;
  bool error_seen = false;
  while (std::getline(lines, line)) {
    ++count;
    const auto object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(object.is_discarded()) << "not JSON: " << line;
    if (object.value("event", "") == "idforge.error") {
      error_seen = true;
      EXPECT_EQ(object.value("level", ""), "error");
      EXPECT_NE(object.value("message", "").find("no-such-tokens-file"), std::string::npos) << line;
    }
  }
  EXPECT_GT(count, 0);
  EXPECT_TRUE(error_seen) << r.err;
}

}  // namespace
}  // namespace idforge::e2e
