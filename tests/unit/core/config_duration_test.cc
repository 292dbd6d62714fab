// Durations as the config writes them (lb/core/duration.h).
#include <gtest/gtest.h>

#include <string>

#include "lb/core/duration.h"

namespace lb {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

Duration parsed(const char* text) {
  Duration d{-1};
  std::string error;
  EXPECT_TRUE(parseDuration(text, &d, &error)) << text << ": " << error;
  return d;
}

std::string rejection(const char* text) {
  Duration d{-1};
  std::string error;
  EXPECT_FALSE(parseDuration(text, &d, &error)) << text;
  EXPECT_EQ(d, Duration{-1}) << "a rejected text must leave *out alone";
  return error;
}

TEST(DurationTest, ReadsEachUnit) {
  EXPECT_EQ(parsed("250ms"), milliseconds(250));
  EXPECT_EQ(parsed("2s"), seconds(2));
  EXPECT_EQ(parsed("1m"), minutes(1));
  EXPECT_EQ(parsed("1h"), hours(1));
}

TEST(DurationTest, ReadsSumsAndZero) {
  EXPECT_EQ(parsed("1m30s"), seconds(90));
  EXPECT_EQ(parsed("1h2m3s4ms"), milliseconds(3723004));
  EXPECT_EQ(parsed("0"), milliseconds(0));
  EXPECT_EQ(parsed("0s"), milliseconds(0));
}

TEST(DurationTest, RejectsGarbageWithAHint) {
  const std::string hint = " is not a duration (use e.g. 250ms, 2s, 1m)";
  EXPECT_EQ(rejection("2x"), "'2x'" + hint);
  EXPECT_EQ(rejection(""), "''" + hint);
  EXPECT_EQ(rejection("5"), "'5'" + hint);          // a unit is required
  EXPECT_EQ(rejection("s"), "'s'" + hint);
  EXPECT_EQ(rejection("1.5s"), "'1.5s'" + hint);    // integers only
  EXPECT_EQ(rejection("1 s"), "'1 s'" + hint);
  EXPECT_EQ(rejection("+1s"), "'+1s'" + hint);
  EXPECT_EQ(rejection("1sec"), "'1sec'" + hint);
}

TEST(DurationTest, RejectsNegatives) {
  EXPECT_EQ(rejection("-1s"), "'-1s': a duration cannot be negative");
  EXPECT_EQ(rejection("-0"), "'-0': a duration cannot be negative");
}

TEST(DurationTest, RejectsMoreThanAYearWithoutOverflow) {
  EXPECT_EQ(parsed("8760h"), hours(8760));
  EXPECT_EQ(rejection("8761h"), "'8761h' is too long (at most 8760h)");
  EXPECT_EQ(rejection("8760h1ms"), "'8760h1ms' is too long (at most 8760h)");
  EXPECT_EQ(rejection("99999999999999999999999h"),
            "'99999999999999999999999h' is too long (at most 8760h)");
}

TEST(DurationTest, FormatReadsBack) {
  EXPECT_EQ(formatDuration(milliseconds(0)), "0");
  EXPECT_EQ(formatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(formatDuration(seconds(90)), "1m30s");
  EXPECT_EQ(formatDuration(hours(2)), "2h");
  for (long ms : {1L, 999L, 1000L, 61001L, 3600000L, 3723004L})
    EXPECT_EQ(parsed(formatDuration(milliseconds(ms)).c_str()), milliseconds(ms));
}

}  // namespace
}  // namespace lb
