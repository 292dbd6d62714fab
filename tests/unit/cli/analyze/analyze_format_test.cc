// The printed forms of `lb analyze`: the JSON shape of docs/analyze.md, valid JSON whatever the input,
// and the per-key preference lines.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lb/cli/analyze/analyze_format.h"
#include "tests/support/analyze_json_test_util.h"

namespace lb {
namespace {

SelectorFigures sampleFigures() {
  SelectorFigures f;
  f.selector = "ring_hash";
  f.backends = {"b0", "b1"};
  f.keys = 1000;
  f.balance.keys = {510, 490};
  f.balance.shares = {0.51, 0.49};
  f.balance.max_over_mean = 1.02;
  f.balance.stddev_pct = 2.0;
  f.remove = {"b1", 490, 0, 0.49, 0.5, 0.0};
  f.add = {"b2", 331, 0, 0.331, 1.0 / 3, 0.0};
  return f;
}

TEST(AnalyzeFormatTest, JsonMatchesDesignShapeWithFourDecimals) {
  const std::vector<SelectorFigures> figures = {sampleFigures()};
  EXPECT_EQ(analyzeJson(figures),
            "[{\"selector\": \"ring_hash\", \"backends\": 2, \"keys\": 1000,\n"
            "  \"balance\": {\"max_over_mean\": 1.0200, \"stddev_pct\": 2.0000, "
            "\"shares\": {\"b0\": 0.5100, \"b1\": 0.4900}},\n"
            "  \"remove\": {\"backend\": \"b1\", \"moved\": 0.4900, \"ideal\": 0.5000, "
            "\"collateral\": 0.0000},\n"
            "  \"add\":    {\"backend\": \"b2\", \"moved\": 0.3310, \"ideal\": 0.3333, "
            "\"collateral\": 0.0000}}]\n");
}

TEST(AnalyzeFormatTest, JsonOfSeveralSelectorsParsesAsAnArrayOfObjects) {
  auto second = sampleFigures();
  second.selector = "mod_n";
  const std::vector<SelectorFigures> figures = {sampleFigures(), second};
  const auto doc = testjson::parse(analyzeJson(figures));
  ASSERT_TRUE(doc);
  ASSERT_EQ(doc->items.size(), 2u);
  EXPECT_EQ((*doc).items[1]["selector"].text, "mod_n");
  EXPECT_DOUBLE_EQ((*doc).items[0]["add"]["moved"].number, 0.331);
  EXPECT_DOUBLE_EQ((*doc).items[0]["balance"]["shares"]["b1"].number, 0.49);
}

TEST(AnalyzeFormatTest, EmptyFigureListIsAnEmptyJsonArray) {
  EXPECT_EQ(analyzeJson({}), "[]\n");
}

TEST(AnalyzeFormatTest, NonFiniteNumbersNeverReachJson) {
  EXPECT_EQ(fixedDecimal(std::numeric_limits<double>::quiet_NaN()), "0.0000");
  EXPECT_EQ(fixedDecimal(std::numeric_limits<double>::infinity()), "0.0000");
  EXPECT_EQ(fixedDecimal(-0.0), "0.0000");
  EXPECT_EQ(fixedDecimal(-0.00001), "0.0000");
  EXPECT_EQ(fixedDecimal(0.25), "0.2500");
  EXPECT_EQ(fixedDecimal(3.14159, 2), "3.14");
}

TEST(AnalyzeFormatTest, JsonStringEscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(jsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(jsonString("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
  EXPECT_EQ(jsonString(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(jsonString(std::string("a\0b", 3)), "\"a\\u0000b\"");
}

TEST(AnalyzeFormatTest, JsonStringKeepsValidUtf8) {
  EXPECT_EQ(jsonString("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(AnalyzeFormatTest, JsonStringReplacesInvalidUtf8) {
  EXPECT_EQ(jsonString("\xff"), "\"\\ufffd\"");
  EXPECT_EQ(jsonString("a\xc3"), "\"a\\ufffd\"");              // truncated sequence
  EXPECT_EQ(jsonString("\xc0\xaf"), "\"\\ufffd\\ufffd\"");      // overlong '/'
  EXPECT_EQ(jsonString("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");   // surrogate
}

TEST(AnalyzeFormatTest, EveryByteStringYieldsParseableJson) {
  // Deterministic pseudo-random byte strings, including every control and high byte.
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int round = 0; round < 500; ++round) {
    std::string s;
    for (int i = 0; i < 12; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      s += static_cast<char>(x & 0xFF);
    }
    const auto v = testjson::parse(jsonString(s));
    ASSERT_TRUE(v) << "round " << round;
    EXPECT_EQ(v->kind, testjson::Value::Kind::kString);
  }
}

TEST(AnalyzeFormatTest, PreferenceLineIsOneJsonObjectPerLine) {
  const std::vector<std::string> order = {"cache-b", "cache-a"};
  EXPECT_EQ(preferenceLine("user:\"42\"", 18446744073709551615ull, order),
            "{\"key\": \"user:\\\"42\\\"\", \"hash\": 18446744073709551615, "
            "\"hash_hex\": \"ffffffffffffffff\", \"order\": [\"cache-b\", \"cache-a\"]}\n");
}

TEST(AnalyzeFormatTest, PreferenceLineGivesTheHashAsAStringWithLeadingZeros) {
  const std::vector<std::string> order = {"a"};
  EXPECT_NE(preferenceLine("k", 0x7b, order).find("\"hash_hex\": \"000000000000007b\""),
            std::string::npos);
}

TEST(AnalyzeFormatTest, TextTableHasOneRowPerSelectorWithItsFigures) {
  auto second = sampleFigures();
  second.selector = "mod_n";
  second.add.moved = 0.8;
  const std::vector<SelectorFigures> figures = {sampleFigures(), second};
  const std::string text = analyzeText(figures);
  EXPECT_NE(text.find("2 backends (b0..b1), 1000 keys; remove b1"), std::string::npos) << text;
  EXPECT_NE(text.find("\nring_hash    1.0200     2.00"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmod_n "), std::string::npos) << text;
  EXPECT_NE(text.find("0.8000    2.40x"), std::string::npos) << text;   // 0.8 over 1/3
}

}  // namespace
}  // namespace lb
