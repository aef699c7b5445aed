// Status codes: their names are part of the API (JSON errors, metrics labels), so each
// code has exactly one stable name and no two codes share one.
#include "idforge/status.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace idforge {
namespace {

TEST(StatusTest, EveryCodeHasItsOwnDocumentedName) {
  // The names docs/api.md lists; a new code must be added there and here.
  const std::pair<StatusCode, std::string_view> expected[] = {
      {StatusCode::kOk, "ok"},
      {StatusCode::kInvalidArgument, "invalid_argument"},
      {StatusCode::kOutOfRange, "out_of_range"},
      {StatusCode::kNotFound, "not_found"},
      {StatusCode::kAlreadyExists, "already_exists"},
      {StatusCode::kUnavailable, "unavailable"},
      {StatusCode::kClockBackwards, "clock_backwards"},
      {StatusCode::kResourceExhausted, "resource_exhausted"},
      {StatusCode::kDeadlineExceeded, "deadline_exceeded"},
      {StatusCode::kLeaseLost, "lease_lost"},
      {StatusCode::kIoError, "io_error"},
      {StatusCode::kInternal, "internal"},
  };
  std::set<std::string_view> seen;
  for (const auto& [code, name] : expected) {
    EXPECT_EQ(status_code_name(code), name);
    EXPECT_TRUE(seen.insert(status_code_name(code)).second) << name;
  }
  // The list above is complete: the enum's last code is in it.
  EXPECT_EQ(static_cast<int>(StatusCode::kInternal) + 1, static_cast<int>(std::size(expected)));
}

TEST(StatusTest, LeaseLostIsAnErrorWithItsMessage) {
  const Status lost = Status::LeaseLost("lease on slot 3 lost: it expired");
  EXPECT_FALSE(lost.ok());
  EXPECT_EQ(lost.code(), StatusCode::kLeaseLost);
  EXPECT_EQ(lost.to_string(), "lease_lost: lease on slot 3 lost: it expired");
  EXPECT_FALSE(lost == Status::Unavailable("lease on slot 3 lost: it expired"));
}

}  // namespace
}  // namespace idforge
