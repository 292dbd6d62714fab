// `lb simulate` as an operator runs it: the real build/lb binary, its JSON parsed, its plot
// drawn by gnuplot, its exit codes checked. The figures are the ones lb simulate is held to: 4 -> 5
// servers at 95% hits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/analyze_json_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lb {
namespace {

using testjson::Value;

test::CommandResult runSimulate(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {test::builtBinary("lb"), "simulate"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::runCommand(argv, std::chrono::seconds(120));
}

const Value& entry(const Value& doc, const std::string& selector) {
  static const Value kMissing;
  for (const auto& item : doc.items)
    if (item["selector"].text == selector) return item;
  return kMissing;
}

const std::vector<std::string> kFourToFive = {
    "--selector", "mod_n,ring_hash", "--servers", "4", "--keys", "1000000", "--rate", "1000000",
    "--duration", "20s", "--samples", "40000", "--event", "add:1@10s", "--seed", "7"};

// Tolerances as in tests/unit/cli/simulate/simulate_model_test.cc: 3 points on hit ratios, 5% of
// the rate on database reads.
TEST(SimulateCliTest, FourToFiveReproducesTheTextbookFigures) {
  std::vector<std::string> args = kFourToFive;
  args.insert(args.end(), {"--format", "json"});
  const auto r = runSimulate(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = testjson::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  ASSERT_EQ(doc->items.size(), 2u);
  const Value& mod = entry(*doc, "mod_n");
  EXPECT_NEAR(mod["hit_ratio_before"].number, 0.95, 0.01);
  EXPECT_NEAR(mod["hit_ratio_after_event"].number, 0.19, 0.03);
  EXPECT_NEAR(mod["backend_reads_per_s_before"].number, 50000, 10000);
  EXPECT_NEAR(mod["backend_reads_per_s_peak"].number, 810000, 50000);
  EXPECT_NEAR(mod["keys_moved"].number, 0.8, 0.01);
  const Value& ring = entry(*doc, "ring_hash");
  EXPECT_NEAR(1 - ring["hit_ratio_after_event"].number / ring["hit_ratio_before"].number, 0.2,
              0.05);
  EXPECT_EQ(ring["recovery_s"].kind, Value::Kind::kNumber);
  EXPECT_EQ(ring["timeline"].items.size(), 20u);
  EXPECT_EQ(ring["servers_after"].number, 5);
  // Deterministic with a seed: the same command prints the same document.
  EXPECT_EQ(runSimulate(args).out, r.out);
}

// --handover WINDOW: each selector three times, without, with read-through and with the
// ramp. Read-through keeps the hit ratio right after 4 -> 5 at 93% or more and the
// database's peak within 1.2x of its rate before; so does the ramp's peak.
TEST(SimulateCliTest, HandoverRunsEachSelectorWithoutReadThroughAndRamp) {
  const std::vector<std::string> args = {
      "--selector", "ring_hash", "--keys", "1000000", "--duration", "20s", "--handover", "60s",
      "--seed", "7", "--format", "json"};
  const auto r = runSimulate(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = testjson::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  ASSERT_EQ(doc->items.size(), 3u);   // ring_hash without, with read-through, with the ramp
  const Value* by[3] = {};
  for (const auto& item : doc->items) {
    if (item["selector"].text != "ring_hash") continue;
    const std::string& h = item["handover"].text;
    by[h == "off" ? 0 : h == "read-through" ? 1 : 2] = &item;
  }
  ASSERT_TRUE(by[0] && by[1] && by[2]) << r.out;
  const Value &off = *by[0], &through = *by[1], &ramp = *by[2];
  EXPECT_LT(off["hit_ratio_after_event"].number, 0.85);
  EXPECT_GT(off["backend_reads_per_s_peak"].number, 3 * off["backend_reads_per_s_before"].number);
  EXPECT_EQ(through["handover_window_s"].number, 60);
  EXPECT_GE(through["hit_ratio_after_event"].number, 0.93);
  EXPECT_LE(through["backend_reads_per_s_peak"].number,
            1.2 * through["backend_reads_per_s_before"].number);
  EXPECT_GT(through["handover_reads"].number, 0);
  EXPECT_LE(ramp["backend_reads_per_s_peak"].number, 1.2 * ramp["backend_reads_per_s_before"].number);

  std::vector<std::string> text(args.begin(), args.end() - 2);
  const auto t = runSimulate(text);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("ring_hash+read-through"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("ring_hash+ramp"), std::string::npos) << t.out;
}

TEST(SimulateCliTest, TextStatesTheSamplingAndItsError) {
  const auto r = runSimulate(kFourToFive);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("sampled: 4.00% of 1000000 keys"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("+/-"), std::string::npos);
  EXPECT_NE(r.out.find("mod_n"), std::string::npos);
  EXPECT_NE(r.out.find("4->5"), std::string::npos);
}

// --plot through gnuplot: an SVG with one plotted line per selector in each of its two
// panels (gnuplot names each plot's group gnuplot_plot_N, a for the first panel, b for the
// second), and each selector's label.
TEST(SimulateCliTest, PlotDrawsOneLinePerSelectorInEachPanel) {
  if (access("/usr/bin/gnuplot", X_OK) != 0) GTEST_SKIP() << "gnuplot-nox not installed";
  test::TempDir dir("simulate_cli");
  ASSERT_TRUE(dir.ok());
  const std::string svg = dir.path() + "/sim.svg";
  std::vector<std::string> args = kFourToFive;
  args[1] = "mod_n,ring_hash,jump";
  args.insert(args.end(), {"--plot", svg});
  const auto r = runSimulate(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(svg);
  ASSERT_TRUE(in) << svg;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  EXPECT_NE(text.find("<svg"), std::string::npos);
  for (const char* id : {"gnuplot_plot_1a", "gnuplot_plot_2a", "gnuplot_plot_3a",
                         "gnuplot_plot_1b", "gnuplot_plot_2b", "gnuplot_plot_3b"})
    EXPECT_NE(text.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_EQ(text.find("gnuplot_plot_4a"), std::string::npos);
  for (const char* name : {"mod_n  low", "ring_hash  low", "jump  peak"})
    EXPECT_NE(text.find(name), std::string::npos) << name;
}

TEST(SimulateCliTest, UsageErrorsExitTwoNamingTheArgument) {
  auto r = runSimulate({"--selector", "nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown selector 'nope'"), std::string::npos) << r.err;
  r = runSimulate({"--event", "grow:1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("grow:1"), std::string::npos) << r.err;
  r = runSimulate({"--popularity", "trace:/nonexistent/trace.txt"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open the trace"), std::string::npos) << r.err;
}

// A recorded trace, one key a line, replayed in order: popularity as recorded (here uniform
// over 5000 keys, drawn by a seeded generator; a strictly cyclic trace would defeat LRU).
TEST(SimulateCliTest, ReplaysATraceFile) {
  test::TempDir dir("simulate_trace");
  ASSERT_TRUE(dir.ok());
  std::string trace;
  std::mt19937 gen(11);
  for (int i = 0; i < 200000; ++i) trace += "user:" + std::to_string(gen() % 5000) + "\n";
  const std::string path = dir.write("trace.txt", trace);
  const auto r = runSimulate({"--selector", "ring_hash", "--popularity", "trace:" + path,
                              "--rate", "20000", "--duration", "12s", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = testjson::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  // 5000 distinct keys, capacity 95% of them over 4 servers: hits near 95% before the add.
  EXPECT_NEAR(entry(*doc, "ring_hash")["hit_ratio_before"].number, 0.95, 0.03);
}

}  // namespace
}  // namespace lb
