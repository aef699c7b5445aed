// Status codes: their names are part of the API (JSON errors, metrics labels), so each
// code has exactly one stable name and no two codes share one.
#include "idforge/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <utility>

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

// A value that can be moved but not copied, counting its moves.
struct MoveOnly {
  explicit MoveOnly(int v) : value(v) {}
  MoveOnly(const MoveOnly&) = delete;
  MoveOnly& operator=(const MoveOnly&) = delete;
  MoveOnly(MoveOnly&& other) noexcept : value(other.value), moves(other.moves + 1) {}
  MoveOnly& operator=(MoveOnly&& other) noexcept {
    value = other.value;
    moves = other.moves + 1;
    return *this;
  }
  int value = 0;
  int moves = 0;
};

Result<int> number_or(bool ok, int value) {
  if (!ok) return Status::NotFound("no number");
  return value;
}

Result<MoveOnly> move_only_or(bool ok, int value) {
  if (!ok) return Status::Unavailable("no value");
  return MoveOnly(value);
}

Result<std::unique_ptr<int>> pointer_or(bool ok, int value) {
  if (!ok) return Status::IoError("no pointer");
  return std::make_unique<int>(value);
}

// Declares with `auto`, returns into a Status.
Status add_twice(bool first_ok, bool second_ok, int* out) {
  IDFORGE_ASSIGN_OR_RETURN(auto a, number_or(first_ok, 20));
  IDFORGE_ASSIGN_OR_RETURN(const int b, number_or(second_ok, 22));
  *out = a + b;
  return Status::Ok();
}

// Declares with a named type, returns into a Result<U> of another type. (`result` is
// also the name of the macro's own parameter: the two do not mix.)
Result<std::string> pointed_text(bool ok) {
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<int> result, pointer_or(ok, 7));
  return std::to_string(*result);
}

// Assigns to an existing variable and through a pointer.
Result<int> assign_existing(bool ok, int* through) {
  int existing = -1;
  IDFORGE_ASSIGN_OR_RETURN(existing, number_or(ok, 5));
  IDFORGE_ASSIGN_OR_RETURN(*through, number_or(true, existing * 2));
  return existing;
}

TEST(StatusMacrosTest, AssignOrReturnDeclaresTheValue) {
  int out = 0;
  EXPECT_TRUE(add_twice(true, true, &out).ok());
  EXPECT_EQ(out, 42);
}

TEST(StatusMacrosTest, AssignOrReturnReturnsTheFirstErrorIntoAStatus) {
  int out = 0;
  EXPECT_EQ(add_twice(false, true, &out), Status::NotFound("no number"));
  EXPECT_EQ(add_twice(true, false, &out), Status::NotFound("no number"));
  EXPECT_EQ(out, 0);
}

TEST(StatusMacrosTest, AssignOrReturnReturnsIntoAResultOfAnotherType) {
  Result<std::string> ok = pointed_text(true);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "7");
  Result<std::string> bad = pointed_text(false);
  EXPECT_EQ(bad.status(), Status::IoError("no pointer"));
}

TEST(StatusMacrosTest, AssignOrReturnAssignsToAnExistingVariable) {
  int through = 0;
  Result<int> r = assign_existing(true, &through);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 5);
  EXPECT_EQ(through, 10);
  through = 0;
  EXPECT_EQ(assign_existing(false, &through).status(), Status::NotFound("no number"));
  EXPECT_EQ(through, 0);
}

TEST(StatusMacrosTest, AssignOrReturnMovesTheValue) {
  // MoveOnly does not compile if the macro copies; each move adds one.
  auto take = [](bool ok, int* moves) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(MoveOnly m, move_only_or(ok, 3));
    EXPECT_EQ(m.value, 3);
    *moves = m.moves;
    return Status::Ok();
  };
  int moves = 0;
  EXPECT_TRUE(take(true, &moves).ok());
  // Into the Result, out of the temporary: no more than a few, and never a copy.
  EXPECT_GE(moves, 1);
  EXPECT_LE(moves, 3);
  EXPECT_EQ(take(false, &moves), Status::Unavailable("no value"));

  auto assign = [](MoveOnly* existing) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(*existing, move_only_or(true, 9));
    return Status::Ok();
  };
  MoveOnly existing(0);
  EXPECT_TRUE(assign(&existing).ok());
  EXPECT_EQ(existing.value, 9);
}

TEST(StatusMacrosTest, ReturnIfErrorTakesAStatusOrAResult) {
  auto from_status = [](Status s) -> Status {
    IDFORGE_RETURN_IF_ERROR(s);
    return Status::Internal("reached the end");
  };
  EXPECT_EQ(from_status(Status::Ok()), Status::Internal("reached the end"));
  EXPECT_EQ(from_status(Status::NotFound("x")), Status::NotFound("x"));

  auto from_result = [](bool ok) -> Result<std::string> {
    IDFORGE_RETURN_IF_ERROR(number_or(ok, 1));
    IDFORGE_RETURN_IF_ERROR(move_only_or(ok, 1));  // a move-only value is discarded
    return std::string("reached the end");
  };
  EXPECT_EQ(*from_result(true), "reached the end");
  EXPECT_EQ(from_result(false).status(), Status::NotFound("no number"));

  // One statement: fine as the body of an unbraced if.
  auto unbraced = [](bool check) -> Status {
    if (check) IDFORGE_RETURN_IF_ERROR(number_or(false, 0));
    return Status::Ok();
  };
  EXPECT_TRUE(unbraced(false).ok());
  EXPECT_EQ(unbraced(true), Status::NotFound("no number"));
}

}  // namespace
}  // namespace idforge
