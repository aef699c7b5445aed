// Published Snowflake IDs (tests/data/snowflake_vectors.txt and the published worked
// examples in tests/data/published_snowflake.txt) must decode to exactly their documented fields
// and compose back to the same id. The file format is described at the top of the data file.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "idforge/layout.h"

#ifndef IDFORGE_TEST_DATA_DIR
#error "IDFORGE_TEST_DATA_DIR must name tests/data"
#endif

namespace idforge {
namespace {

const std::string kProjectFile = std::string(IDFORGE_TEST_DATA_DIR) + "/snowflake_vectors.txt";
const std::string kSharedFile = std::string(IDFORGE_TEST_DATA_DIR) + "/published_snowflake.txt";

struct Vector {
  std::string where;  // file:line, for failure messages
  std::string text;   // the line without its comment, whitespace-normalised
  std::string layout;
  int64_t epoch_ms = 0;
  uint64_t id = 0;
  int64_t unix_ms = 0;
  std::vector<uint64_t> fields;  // the non-time fields in layout order
};

template <typename T>
bool parse_number(const std::string& token, T* out) {
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

// Reads every data line; a line that does not parse is a test failure, not a skip.
std::vector<Vector> read_vectors(const std::string& path) {
  std::vector<Vector> out;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::vector<std::string> tokens;
    for (std::string t; words >> t;) tokens.push_back(t);
    if (tokens.empty()) continue;
    Vector v;
    v.where = path + ":" + std::to_string(number);
    for (const auto& t : tokens) v.text += (v.text.empty() ? "" : " ") + t;
    bool ok = tokens.size() >= 5;
    if (ok) {
      v.layout = tokens[0];
      ok = parse_number(tokens[1], &v.epoch_ms) && parse_number(tokens[2], &v.id) &&
           parse_number(tokens[3], &v.unix_ms);
      for (size_t i = 4; ok && i < tokens.size(); ++i) {
        uint64_t value = 0;
        ok = parse_number(tokens[i], &value);
        v.fields.push_back(value);
      }
    }
    if (!ok) {
      ADD_FAILURE() << v.where << ": not `layout epoch_ms id unix_ms field...`: " << v.text;
      continue;
    }
    out.push_back(std::move(v));
  }
  return out;
}

// "twitter" or "time:29,worker:21,sequence:13@1000", with the vector's epoch.
Result<Layout> layout_of(const Vector& v) {
  std::string spec = v.layout;
  int64_t tick = -1;
  const size_t at = spec.find('@');
  if (at != std::string::npos) {
    if (!parse_number(spec.substr(at + 1), &tick)) {
      return Status::InvalidArgument("bad tick in " + spec);
    }
    spec.erase(at);
  }
  return Layout::parse(spec, v.epoch_ms, tick);
}

void check_vector(const Vector& v) {
  SCOPED_TRACE(v.where + ": " + v.text);
  Result<Layout> layout = layout_of(v);
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  ASSERT_EQ(layout->epoch_ms(), v.epoch_ms);
  ASSERT_EQ(v.fields.size() + 1, layout->fields().size())
      << "one value per non-time field of " << layout->spec();

  Result<DecodedId> decoded = layout->decode(v.id);
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  EXPECT_EQ(decoded->unix_ms, v.unix_ms);

  std::vector<uint64_t> all;  // every field, time included, for compose()
  std::vector<std::pair<std::string, uint64_t>> named;
  size_t next = 0;
  for (size_t i = 0; i < layout->fields().size(); ++i) {
    const Field& f = layout->fields()[i];
    const FieldValue& got = decoded->fields[i];
    if (f.role == FieldRole::kTime) {
      // The vectors name the start of a tick.
      const int64_t since_epoch = v.unix_ms - v.epoch_ms;
      EXPECT_EQ(since_epoch % layout->tick_ms(), 0);
      EXPECT_EQ(got.value, static_cast<uint64_t>(since_epoch / layout->tick_ms()));
      all.push_back(got.value);
      continue;
    }
    EXPECT_EQ(got.value, v.fields[next]) << "field " << f.name;
    all.push_back(v.fields[next]);
    named.emplace_back(f.name, v.fields[next]);
    ++next;
  }

  Result<uint64_t> composed = layout->compose(all);
  ASSERT_TRUE(composed.ok()) << composed.status().to_string();
  EXPECT_EQ(*composed, v.id);
  Result<uint64_t> by_name = layout->compose_named(v.unix_ms, named);
  ASSERT_TRUE(by_name.ok()) << by_name.status().to_string();
  EXPECT_EQ(*by_name, v.id);
}

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

TEST(SnowflakeVectors, ProjectFileDecodesAndComposesExactly) {
  const std::vector<Vector> vectors = read_vectors(kProjectFile);
  EXPECT_GE(vectors.size(), 10u);
  std::set<std::string> layouts;
  for (const Vector& v : vectors) {
    check_vector(v);
    layouts.insert(v.layout);
  }
  for (const auto& preset : Layout::preset_names()) {
    EXPECT_TRUE(layouts.count(preset) == 1) << "no vector for preset " << preset;
  }
}

TEST(SnowflakeVectors, SharedFileDecodesAndComposesExactly) {
  if (!file_exists(kSharedFile)) GTEST_SKIP() << kSharedFile << " is not present";
  const std::vector<Vector> vectors = read_vectors(kSharedFile);
  EXPECT_FALSE(vectors.empty());
  for (const Vector& v : vectors) check_vector(v);
}

// The project file is a copy of the shared one plus more; a drift would mean one of
// the two was edited alone.
TEST(SnowflakeVectors, ProjectFileContainsEverySharedVector) {
  if (!file_exists(kSharedFile)) GTEST_SKIP() << kSharedFile << " is not present";
  std::set<std::string> ours;
  for (const Vector& v : read_vectors(kProjectFile)) ours.insert(v.text);
  for (const Vector& v : read_vectors(kSharedFile)) {
    EXPECT_TRUE(ours.count(v.text) == 1) << v.where << " is missing from " << kProjectFile;
  }
}

// The checker itself must notice a wrong vector, or a passing run proves nothing.
int failures_of(const Vector& v) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    check_vector(v);
  }
  return results.size();
}

TEST(SnowflakeVectors, CheckerCatchesWrongVectors) {
  Vector v;
  v.where = "inline";
  v.layout = "twitter";
  v.epoch_ms = 1288834974657;
  v.id = 910499571847892992;
  v.unix_ms = 1505914988849;
  v.fields = {17, 25, 0};
  EXPECT_EQ(failures_of(v), 0);
  v.fields = {17, 24, 0};  // worker is 25
  EXPECT_GT(failures_of(v), 0);
  v.fields = {17, 25, 0};
  v.unix_ms += 1;
  EXPECT_GT(failures_of(v), 0);
  v.unix_ms -= 1;
  v.fields = {17, 25};  // one value short
  EXPECT_GT(failures_of(v), 0);
  v.fields = {17, 25, 0};
  v.epoch_ms = 0;
  EXPECT_GT(failures_of(v), 0);
}

}  // namespace
}  // namespace idforge
