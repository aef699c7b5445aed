// The command line as a whole: help and version, unknown commands and options, and
// the error contract (exit 2, one "idforge: " line, nothing on stdout).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_idforge.h"

namespace idforge::e2e {
namespace {

const std::vector<std::string> kCommands = {"next", "parse",   "compose", "uuid7",   "uuid4",
                                            "ulid", "inspect", "layout",  "layouts", "bench"};

TEST(CliTest, HelpOnEveryCommandExitsZeroWithAnExample) {
  for (const std::string& command : kCommands) {
    SCOPED_TRACE(command);
    RunResult r = run_idforge({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << r.summary();
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("Usage: idforge " + command), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Example"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("idforge " + command), std::string::npos) << r.out;
  }
}

TEST(CliTest, RootHelpListsEveryCommand) {
  for (const char* flag : {"--help", "-h"}) {
    RunResult r = run_idforge({flag});
    ASSERT_EQ(r.exit_code, 0) << r.summary();
    for (const std::string& command : kCommands) {
      EXPECT_NE(r.out.find("\n  " + command + " "), std::string::npos) << command;
    }
  }
}

TEST(CliTest, Version) {
  RunResult r = run_idforge({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.summary();
  ASSERT_EQ(r.lines().size(), 1u) << r.out;
  EXPECT_EQ(r.lines()[0].rfind("idforge ", 0), 0u) << r.out;
  EXPECT_GT(r.lines()[0].size(), std::string("idforge ").size());
}

TEST(CliTest, UnknownCommandNamesItAndTheCommands) {
  RunResult r = run_idforge({"frobnicate", "--count", "3"});
  EXPECT_TRUE(is_usage_error(r, "unknown command 'frobnicate'"));
  EXPECT_NE(r.err.find("next"), std::string::npos) << r.err;
}

TEST(CliTest, MissingCommand) { EXPECT_TRUE(is_usage_error(run_idforge({}), "command")); }

TEST(CliTest, UnknownOptions) {
  EXPECT_TRUE(is_usage_error(run_idforge({"--frobnicate"}), "--frobnicate"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--frobnicate"}), "--frobnicate"));
  EXPECT_TRUE(is_usage_error(run_idforge({"uuid7", "extra"}), "extra"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--count"}), "--count"));
  EXPECT_TRUE(is_usage_error(run_idforge({"parse", "1", "2"}), "2"));
}

TEST(CliTest, BenchFlagsAreChecked) {
  EXPECT_TRUE(is_usage_error(run_idforge({"bench", "--seconds", "0"}), "--seconds"));
  EXPECT_TRUE(is_usage_error(run_idforge({"bench", "--seconds", "soon"}), "--seconds"));
  EXPECT_TRUE(is_usage_error(run_idforge({"bench", "--threads", "0"}), "--threads"));
}

TEST(CliTest, BenchRunsWhatItIsAskedFor) {
  RunResult r =
      run_idforge({"bench", "--seconds", "0.02", "--threads", "1", "--only", "uuid4", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.out;
  ASSERT_TRUE(j["results"].is_array()) << r.out;
  ASSERT_FALSE(j["results"].empty()) << r.out;
  for (const auto& result : j["results"]) {
    EXPECT_EQ(result["name"].get<std::string>().rfind("uuid4", 0), 0u) << result.dump();
    EXPECT_EQ(result["threads"], 1) << result.dump();
    EXPECT_GT(result["ids_per_sec"].get<double>(), 0) << result.dump();
  }
}

}  // namespace
}  // namespace idforge::e2e
