// SpinPolicy's rules on made-up time points: when an idle loop polls, when it stops,
// and how it backs off on a crowded machine.
#include "server/net/net_spin.h"

#include <gtest/gtest.h>

#include <chrono>

namespace idforge::server::net {
namespace {

using namespace std::chrono_literals;
using TimePoint = SpinPolicy::Clock::time_point;

const TimePoint kT0 = TimePoint{} + 1000s;

TEST(SpinPolicyTest, ZeroSpinNeverPolls) {
  SpinPolicy policy(0us);
  EXPECT_FALSE(policy.may_spin(kT0));
  policy.woke(kT0, kT0 + 1us);
  EXPECT_FALSE(policy.may_spin(kT0 + 1us));
  EXPECT_EQ(SpinPolicy(-5us).spin(), 0us);
}

TEST(SpinPolicyTest, PollsWhileGapsStayInsideTheSpin) {
  SpinPolicy policy(50us);
  EXPECT_TRUE(policy.may_spin(kT0));  // a new loop tries
  policy.woke(kT0, kT0 + 49us);
  EXPECT_TRUE(policy.may_spin(kT0 + 49us));
  // A gap the spin could not bridge (or a timer waking an idle loop): sleep at once...
  policy.woke(kT0, kT0 + 50us);
  EXPECT_FALSE(policy.may_spin(kT0 + 50us));
  policy.woke(kT0 + 50us, kT0 + 250ms);
  EXPECT_FALSE(policy.may_spin(kT0 + 250ms));
  // ...until a short gap shows traffic is steady again.
  policy.woke(kT0 + 250ms, kT0 + 250ms + 10us);
  EXPECT_TRUE(policy.may_spin(kT0 + 250ms + 10us));
}

TEST(SpinPolicyTest, AShortYieldIsNotAPreemption) {
  SpinPolicy policy(50us);
  EXPECT_FALSE(policy.preempted(kT0, kT0 + 2us));
  EXPECT_FALSE(policy.preempted(kT0, kT0 + 700us));  // a vCPU hiccup, no thread switch
  EXPECT_FALSE(policy.preempted(kT0, kT0 + SpinPolicy::kPreempted));
  EXPECT_TRUE(policy.may_spin(kT0 + 1us));
}

TEST(SpinPolicyTest, PreemptionBacksOffTwiceAsLongEachTimeItRecurs) {
  SpinPolicy policy(50us);
  TimePoint t = kT0;
  auto expected = SpinPolicy::kBackOff;
  for (int i = 0; i <= SpinPolicy::kMaxDoublings + 2; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(policy.may_spin(t));
    const TimePoint after = t + 3ms;  // a time slice went to another thread
    EXPECT_TRUE(policy.preempted(t, after));
    EXPECT_FALSE(policy.may_spin(after + expected - 1us));
    EXPECT_TRUE(policy.may_spin(after + expected));
    t = after + expected;
    if (i < SpinPolicy::kMaxDoublings) expected *= 2;
  }
  EXPECT_EQ(expected, SpinPolicy::kBackOff * 64);  // the cap: 6.4 s

  // A preemption long after the last one starts over from the first back-off.
  const TimePoint later = t + SpinPolicy::kForget + 1s;
  EXPECT_TRUE(policy.preempted(later, later + 3ms));
  EXPECT_TRUE(policy.may_spin(later + 3ms + SpinPolicy::kBackOff));
}

TEST(SpinPolicyTest, BackOffAndShortGapsAreSeparateConditions) {
  SpinPolicy policy(50us);
  EXPECT_TRUE(policy.preempted(kT0, kT0 + 3ms));
  policy.woke(kT0 + 3ms, kT0 + 3ms + 5us);  // short gap, but still backing off
  EXPECT_FALSE(policy.may_spin(kT0 + 4ms));
  EXPECT_TRUE(policy.may_spin(kT0 + 3ms + SpinPolicy::kBackOff));
}

}  // namespace
}  // namespace idforge::server::net
