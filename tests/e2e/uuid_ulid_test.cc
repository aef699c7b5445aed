// `idforge uuid7`, `uuid4`, `ulid` and `inspect`: formats, counts, order within one
// run, the embedded time, and values that are neither a UUID nor a ULID.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "run_idforge.h"
#include "support/ordering.h"

namespace idforge::e2e {
namespace {

using test::strictly_increasing;

using nlohmann::json;

const std::regex kUuid7("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
const std::regex kUuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
// Crockford base32 without I, L, O, U; the first character carries 3 bits only.
const std::regex kUlid("[0-7][0-9A-HJKMNP-TV-Z]{25}");

// A UUIDv7's first 48 bits are its Unix ms.
int64_t uuid7_ms(const std::string& text) {
  std::string hex = text.substr(0, 8) + text.substr(9, 4);
  return static_cast<int64_t>(std::stoull(hex, nullptr, 16));
}

// A ULID's first 10 characters are its Unix ms in Crockford base32.
int64_t ulid_ms(const std::string& text) {
  static const std::string kAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  int64_t ms = 0;
  for (char c : text.substr(0, 10)) ms = ms * 32 + static_cast<int64_t>(kAlphabet.find(c));
  return ms;
}

// Runs a generator command; checks the line count and that every line matches.
std::vector<std::string> generate(const std::string& command, size_t count,
                                  const std::regex& format) {
  RunResult r = run_idforge({command, "--count", std::to_string(count)});
  EXPECT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.err, "");
  std::vector<std::string> lines = r.lines();
  EXPECT_EQ(lines.size(), count);
  for (const std::string& line : lines) {
    if (!std::regex_match(line, format)) {
      ADD_FAILURE() << command << " printed '" << line << "'";
      break;
    }
  }
  return lines;
}

TEST(UuidTest, Uuid7IsOrderedWithinOneRunAndCarriesTheTime) {
  const int64_t before = now_unix_ms();
  // More than one millisecond's worth, so the counter and the ms both move.
  std::vector<std::string> values = generate("uuid7", 20000, kUuid7);
  const int64_t after = now_unix_ms();
  EXPECT_TRUE(strictly_increasing(values));
  ASSERT_FALSE(values.empty());
  EXPECT_GE(uuid7_ms(values.front()), before - 1);
  // The counter may run the time a little ahead of the clock, never far.
  EXPECT_LE(uuid7_ms(values.back()), after + 1000);
}

TEST(UuidTest, Uuid4IsRandomAndDistinct) {
  std::vector<std::string> values = generate("uuid4", 5000, kUuid4);
  EXPECT_EQ(std::set<std::string>(values.begin(), values.end()).size(), values.size());
  // Random, not counting: sorted order would be a one in 5000! accident.
  EXPECT_FALSE(strictly_increasing(values));
}

TEST(UlidTest, OrderedWithinOneRunAndCarriesTheTime) {
  const int64_t before = now_unix_ms();
  std::vector<std::string> values = generate("ulid", 20000, kUlid);
  const int64_t after = now_unix_ms();
  EXPECT_TRUE(strictly_increasing(values));
  ASSERT_FALSE(values.empty());
  EXPECT_GE(ulid_ms(values.front()), before - 1);
  EXPECT_LE(ulid_ms(values.back()), after + 1000);
}

TEST(UuidTest, DefaultCountIsOne) {
  for (const char* command : {"uuid7", "uuid4", "ulid"}) {
    RunResult r = run_idforge({command});
    EXPECT_EQ(r.exit_code, 0) << r.summary();
    EXPECT_EQ(r.lines().size(), 1u) << command;
  }
}

TEST(UuidTest, BadCountsAreUsageErrors) {
  for (const char* command : {"uuid7", "uuid4", "ulid"}) {
    for (const char* count : {"0", "-3", "many", "10000001"}) {
      SCOPED_TRACE(std::string(command) + " --count " + count);
      EXPECT_TRUE(is_usage_error(run_idforge({command, "--count", count}), "--count"));
    }
  }
}

TEST(InspectTest, FreshUuid7IsCloseToNow) {
  RunResult made = run_idforge({"uuid7"});
  ASSERT_EQ(made.exit_code, 0) << made.summary();
  const std::string value = made.lines().at(0);
  const int64_t now = now_unix_ms();

  RunResult text = run_idforge({"inspect", value});
  ASSERT_EQ(text.exit_code, 0) << text.summary();
  EXPECT_EQ(text_value(text.out, "kind"), "uuid");
  EXPECT_EQ(text_value(text.out, "version"), "7");

  json j = json::parse(run_idforge({"inspect", value, "--json"}).out);
  EXPECT_EQ(j["value"], value);
  EXPECT_EQ(j["kind"], "uuid");
  EXPECT_EQ(j["version"], 7);
  ASSERT_TRUE(j["unix_ms"].is_number_integer()) << j.dump();
  EXPECT_NEAR(static_cast<double>(j["unix_ms"].get<int64_t>()), static_cast<double>(now), 5000);
  EXPECT_EQ(std::to_string(j["unix_ms"].get<int64_t>()), text_value(text.out, "unix_ms"));
  ASSERT_TRUE(j["time"].is_string());
  EXPECT_EQ(j["time"], text_value(text.out, "time"));
}

TEST(InspectTest, KnownUuid7InAnyNotation) {
  // RFC 9562 appendix A.6: 2022-02-22T19:22:22Z.
  for (const char* notation :
       {"017f22e2-79b0-7cc3-98c4-dc0c0c07398f", "017F22E2-79B0-7CC3-98C4-DC0C0C07398F",
        "{017f22e2-79b0-7cc3-98c4-dc0c0c07398f}", "urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
        "017f22e279b07cc398c4dc0c0c07398f"}) {
    SCOPED_TRACE(notation);
    RunResult r = run_idforge({"inspect", notation, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.summary();
    json j = json::parse(r.out);
    EXPECT_EQ(j["value"], "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
    EXPECT_EQ(j["version"], 7);
    EXPECT_EQ(j["unix_ms"], 1645557742000);
    EXPECT_EQ(j["time"], "2022-02-22T19:22:22.000Z");
  }
}

TEST(InspectTest, Uuid4HasNoTime) {
  RunResult made = run_idforge({"uuid4"});
  ASSERT_EQ(made.exit_code, 0) << made.summary();
  RunResult r = run_idforge({"inspect", made.lines().at(0), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  json j = json::parse(r.out);
  EXPECT_EQ(j["kind"], "uuid");
  EXPECT_EQ(j["version"], 4);
  EXPECT_TRUE(j["unix_ms"].is_null()) << j.dump();
  EXPECT_TRUE(j["time"].is_null()) << j.dump();
}

TEST(InspectTest, Ulid) {
  RunResult made = run_idforge({"ulid"});
  ASSERT_EQ(made.exit_code, 0) << made.summary();
  const std::string value = made.lines().at(0);
  json fresh = json::parse(run_idforge({"inspect", value, "--json"}).out);
  EXPECT_EQ(fresh["kind"], "ulid");
  EXPECT_EQ(fresh["value"], value);
  EXPECT_FALSE(fresh.contains("version")) << "a ULID has no version";
  EXPECT_NEAR(static_cast<double>(fresh["unix_ms"].get<int64_t>()),
              static_cast<double>(now_unix_ms()), 5000);

  // Lower case reads the same; the canonical text is upper case.
  RunResult known = run_idforge({"inspect", "01arz3ndektsv4rrffq69g5fav"});
  ASSERT_EQ(known.exit_code, 0) << known.summary();
  EXPECT_EQ(text_value(known.out, "kind"), "ulid");
  EXPECT_EQ(text_value(known.out, "value"), "01ARZ3NDEKTSV4RRFFQ69G5FAV");
  EXPECT_EQ(text_value(known.out, "unix_ms"), "1469922850259");
  EXPECT_EQ(text_value(known.out, "time"), "2016-07-30T23:54:10.259Z");
}

TEST(InspectTest, GarbageIsNeitherUuidNorUlid) {
  for (const char* value : {"garbage", "", "017f22e2-79b0-7cc3-98c4-dc0c0c07398",
                            "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "01ARZ3NDEKTSV4RRFFQ69G5FAU"}) {
    SCOPED_TRACE(value);
    RunResult r = run_idforge({"inspect", value});
    EXPECT_TRUE(is_usage_error(r, "neither a UUID"));
    EXPECT_NE(r.err.find("ULID"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace idforge::e2e
