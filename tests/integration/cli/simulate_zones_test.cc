// `lb simulate --zones 3 --servers 6 --replicas 2 --event fail-zone:1`: each selector once
// with one copy of each key and once with two, on the zone-aware order; losing a zone keeps
// the hit ratio at 90% or more with two copies and costs about a third of it with one.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/analyze_json_test_util.h"
#include "tests/support/process.h"

namespace lb {
namespace {

using testjson::Value;

test::CommandResult runSimulate(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {test::builtBinary("lb"), "simulate"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::runCommand(argv, std::chrono::seconds(120));
}

TEST(SimulateZonesTest, TwoCopiesInTwoZonesKeepTheHitRatioThroughAZoneLoss) {
  const std::vector<std::string> args = {
      "--selector", "ring_hash,maglev,rendezvous", "--zones", "3", "--servers", "6",
      "--replicas", "2", "--event", "fail-zone:1", "--duration", "20s", "--samples", "40000",
      "--seed", "7", "--format", "json"};
  const auto r = runSimulate(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = testjson::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  ASSERT_EQ(doc->items.size(), 6u);   // each selector with one copy, then with two
  for (const auto& run : doc->items) {
    const std::string who = run["selector"].text + " replicas " + run["replicas"].text;
    EXPECT_EQ(run["servers_after"].number, 4) << who;
    EXPECT_GE(run["hit_ratio_before"].number, 0.9) << who;
    if (run["replicas"].number == 2) {
      EXPECT_GE(run["hit_ratio_after_event"].number, 0.9) << who;
      EXPECT_GT(run["replica_reads"].number, 0) << who;
    } else {
      EXPECT_NEAR(run["hit_ratio_after_event"].number, 0.63, 0.05) << who;
    }
  }
  const auto text = runSimulate(std::vector<std::string>(args.begin(), args.end() - 2));
  EXPECT_NE(text.out.find("maglev+replicas:2"), std::string::npos) << text.out;
}

TEST(SimulateZonesTest, AZoneLossNeedsZonesToLose) {
  const auto r = runSimulate({"--servers", "6", "--event", "fail-zone:1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fail-zone:1: needs --zones above 1"), std::string::npos) << r.err;
  EXPECT_EQ(runSimulate({"--servers", "2", "--zones", "3"}).exit_code, 2);
  EXPECT_EQ(runSimulate({"--servers", "2", "--replicas", "3"}).exit_code, 2);
}

}  // namespace
}  // namespace lb
