// The command line of `lb analyze`: defaults, both modes, and a clear error for every bad
// argument.
#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "lb/cli/analyze/analyze_options.h"

namespace lb {
namespace {

struct Parsed {
  std::optional<AnalyzeOptions> options;
  std::string error;
};

Parsed parse(std::initializer_list<const char*> args) {
  std::vector<std::string> storage(args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  Parsed p;
  p.options = parseAnalyzeArgs(argv, p.error);
  return p;
}

// The parse fails and the error mentions `needle`.
void expectError(std::initializer_list<const char*> args, const std::string& needle) {
  const auto p = parse(args);
  EXPECT_FALSE(p.options);
  EXPECT_NE(p.error.find(needle), std::string::npos) << "error: " << p.error;
}

TEST(AnalyzeOptionsTest, NoArgumentsSimulateAllSelectorsOnFourBackends) {
  const auto p = parse({});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_EQ(p.options->mode, AnalyzeOptions::Mode::kSimulate);
  EXPECT_EQ(p.options->selector, "all");
  EXPECT_EQ(p.options->backends, 4u);
  EXPECT_EQ(p.options->keys, 100000u);
  EXPECT_TRUE(p.options->weights.empty());
  EXPECT_EQ(p.options->format, AnalyzeOptions::Format::kText);
}

TEST(AnalyzeOptionsTest, SimulationOptionsTakeSeparateOrEqualsValues) {
  const auto p = parse({"--selector", "maglev", "--backends=3", "--keys", "500",
                        "--weights=1,2,3", "--vnodes", "100", "--table-size=101",
                        "--format", "json"});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_EQ(p.options->selector, "maglev");
  EXPECT_EQ(p.options->backends, 3u);
  EXPECT_EQ(p.options->keys, 500u);
  EXPECT_EQ(p.options->weights, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(p.options->selector_options.vnodes, 100u);
  EXPECT_EQ(p.options->selector_options.table_size, 101u);
  EXPECT_EQ(p.options->format, AnalyzeOptions::Format::kJson);
}

TEST(AnalyzeOptionsTest, ConfigModeCollectsEveryKeyInOrder) {
  const auto p = parse({"--config", "lb.toml", "--cluster", "cache", "--key", "a", "--key=b=c",
                        "--key", ""});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_EQ(p.options->mode, AnalyzeOptions::Mode::kConfig);
  EXPECT_EQ(p.options->config_file, "lb.toml");
  EXPECT_EQ(p.options->cluster, "cache");
  EXPECT_EQ(p.options->show_keys, (std::vector<std::string>{"a", "b=c", ""}));
}

TEST(AnalyzeOptionsTest, HelpStopsParsingTheRest) {
  const auto p = parse({"--help", "--bogus"});
  ASSERT_TRUE(p.options) << p.error;
  EXPECT_TRUE(p.options->help);
}

TEST(AnalyzeOptionsTest, RejectsUnknownArgumentsAndMissingValues) {
  expectError({"--bogus"}, "unknown argument '--bogus'");
  expectError({"extra"}, "unknown argument 'extra'");
  expectError({"--keys"}, "--keys: missing value");
}

TEST(AnalyzeOptionsTest, RejectsMalformedAndOutOfRangeNumbers) {
  expectError({"--backends", "1"}, "[2, 10000], got '1'");
  expectError({"--backends", "10001"}, "got '10001'");
  expectError({"--backends", "4x"}, "got '4x'");
  expectError({"--backends", "-4"}, "got '-4'");
  expectError({"--backends", " 4"}, "got ' 4'");
  expectError({"--keys", "0"}, "--keys");
  expectError({"--keys", "99999999999999999999999"}, "--keys");
  expectError({"--vnodes", "0"}, "--vnodes");
}

TEST(AnalyzeOptionsTest, WeightsNeedOnePositiveIntegerPerBackend) {
  expectError({"--backends", "3", "--weights", "1,1"}, "2 weights for 3 backends");
  expectError({"--weights", "1,0,1,1"}, "got '0'");
  expectError({"--weights", "1,,1,1"}, "got ''");
  expectError({"--weights", "1,1,1,1,"}, "got ''");
}

TEST(AnalyzeOptionsTest, TableSizeMustBeAPrimeLargerThanTheHosts) {
  expectError({"--table-size", "65536"}, "must be a prime");
  expectError({"--table-size", "1"}, "must be a prime");
  expectError({"--backends", "10", "--table-size", "11"}, "exceed the 11 hosts");
  EXPECT_TRUE(parse({"--backends", "10", "--table-size", "13"}).options);
}

TEST(AnalyzeOptionsTest, RingsAreCappedAtTenMillionPoints) {
  // 10001 hosts of weight 1 at 1000 vnodes: 10,001,000 points.
  expectError({"--backends", "10000", "--vnodes", "1000"}, "10001000 points");
  EXPECT_TRUE(parse({"--backends", "10000", "--vnodes", "999"}).options);
  // Weights count: (1000 + 1 + 1) * 10000 vnodes.
  expectError({"--backends", "2", "--weights", "1000,1", "--vnodes", "10000"}, "10020000");
}

TEST(AnalyzeOptionsTest, RejectsUnknownFormat) {
  expectError({"--format", "yaml"}, "text or json, got 'yaml'");
}

TEST(AnalyzeOptionsTest, ModesDoNotMix) {
  expectError({"--config", "f", "--cluster", "c", "--key", "k", "--backends", "4"},
              "--backends does not apply with --config");
  expectError({"--key", "k"}, "--key needs --config");
  expectError({"--cluster", "c"}, "--cluster needs --config");
  expectError({"--config", "f", "--key", "k"}, "--cluster NAME");
  // --config and --cluster alone ask for the cluster's zone report.
  const auto report = parse({"--config", "f", "--cluster", "c"});
  ASSERT_TRUE(report.options);
  EXPECT_TRUE(report.options->show_keys.empty());
}

}  // namespace
}  // namespace lb
