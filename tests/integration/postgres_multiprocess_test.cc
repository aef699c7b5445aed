// Four `idforge next` processes sharing one PostgreSQL issue IDs for one tag at once:
// no collisions.
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/segment_store.h"
#include "integration/services.h"
#include "store/store_factory.h"
#include "support/process.h"

namespace idforge::integration {
namespace {

using test_support::Child;
using test_support::read_file;

// Each line as a decimal ID; false (and a test failure) on anything else.
bool parse_lines(const std::string& text, std::vector<uint64_t>* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec != std::errc() || p != line.data() + line.size()) {
      ADD_FAILURE() << "not an ID: '" << line << "'";
      return false;
    }
    out->push_back(v);
    pos = end + 1;
  }
  return true;
}

TEST(PostgresMultiProcessTest, FourProcessesSharingOneDatabaseNeverCollide) {
  const std::string dir = Services::get().make_dir("multiprocess");
  Result<std::string> url = Services::get().postgres_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  auto s = store::open_store(*url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::string tag = unique_tag("procs");
  TagSpec spec;
  spec.name = tag;
  // A small step: each process doubles it many times on its way to 200,000 IDs, so the
  // four race on the row a dozen times each rather than two or three.
  spec.step = 100;
  ASSERT_TRUE((*s)->create_tag(spec).ok());

  constexpr int kProcesses = 4;
  constexpr int kPerProcess = 200'000;
  std::vector<Child> children;
  for (int i = 0; i < kProcesses; ++i) {
    const std::string base = dir + "/next" + std::to_string(i);
    children.push_back(test_support::spawn({idforge_bin(), "next", "--tag", tag, "--count",
                                            std::to_string(kPerProcess), "--store", *url},
                                           {.out_path = base + ".out", .err_path = base + ".err"}));
    ASSERT_GT(children.back().pid, 0);
  }
  std::vector<uint64_t> all;
  all.reserve(kProcesses * kPerProcess);
  for (const Child& c : children) {
    const int code = test_support::reap(c.pid).code;
    EXPECT_EQ(code, 0) << read_file(c.err_path);
    std::vector<uint64_t> ids;
    ASSERT_TRUE(parse_lines(read_file(c.out_path), &ids));
    EXPECT_EQ(ids.size(), static_cast<size_t>(kPerProcess));
    // One process, one store: its IDs strictly increase.
    EXPECT_TRUE(std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) == ids.end());
    all.insert(all.end(), ids.begin(), ids.end());
  }
  ASSERT_EQ(all.size(), static_cast<size_t>(kProcesses * kPerProcess));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a duplicate ID";
  EXPECT_GE(all.front(), 1u);
  EXPECT_LE(all.back(), (*s)->get_tag(tag)->max_id);
}

}  // namespace
}  // namespace idforge::integration
