// The pass that keeps toml++ 3.3 away from inputs where it has undefined behaviour
// (lb/config/prescan.h): it rejects exactly those, with a position, and nothing valid besides.
#include <gtest/gtest.h>

#include <string>

#include "lb/config/config.h"
#include "lb/config/prescan.h"

namespace lb {
namespace {

std::string rejected(std::string_view text) {
  auto e = prescanToml(text);
  if (!e) return "accepted";
  return std::to_string(e->pos.line) + ":" + std::to_string(e->pos.column) + ": " + e->message;
}

TEST(PrescanTest, AcceptsNonAsciiInStringsAndComments) {
  EXPECT_EQ(rejected("# café\na = \"crème\" # naïve\nb = 'ŏ'\n"), "accepted");
  EXPECT_EQ(rejected("c = \"\"\"\nŏ\n\"\"\"\nd = '''\nŏ'''\n"), "accepted");
  EXPECT_EQ(rejected("\"ключ\" = 1\n"), "accepted");   // a quoted key may hold anything
}

TEST(PrescanTest, RejectsNonAsciiOutsideStringsWithItsColumnInCodePoints) {
  // Found by config_fuzz: "ŏ" (U+014F) after a key reaches __builtin_unreachable in toml++.
  EXPECT_EQ(rejected("a = \"é\" ŏ\n"),
            "1:9: non-ASCII character outside a string or comment (TOML keys are ASCII; quote "
            "the key or the value)");
  EXPECT_EQ(rejected("x = 1\nhashŏ = 2\n").substr(0, 5), "2:5: ");
}

TEST(PrescanTest, AQuoteInsideABareValueDoesNotOpenAString) {
  // Found by config_fuzz: toml++ scans a bare value ahead, quotes included, testing each
  // character for whitespace.
  EXPECT_EQ(rejected("[lb]\nworkers = 2$\"ŏ\"\n").substr(0, 5), "2:14:");
  EXPECT_EQ(rejected("a = [1\"ŏ\"]\n").substr(0, 4), "1:8:");
  EXPECT_EQ(rejected("t = { a = 1\"ŏ\" }\n").substr(0, 5), "1:13:");
}

TEST(PrescanTest, QuotedValuesAndKeysAfterBareOnesStillOpenStrings) {
  EXPECT_EQ(rejected("a = [1, \"é\", 2.5, 'ŏ']\n"), "accepted");
  EXPECT_EQ(rejected("t = { a = 1, \"é\" = \"ŏ\" }\nb = true # é\n"), "accepted");
  EXPECT_EQ(rejected("a.\"é\".b = 1\nd = 1979-05-27 07:32:00 # é\n"), "accepted");
  EXPECT_EQ(rejected("a = [\n  1,\n  \"é\",\n]\n"), "accepted");
}

TEST(PrescanTest, RejectsATableHeaderWithoutAName) {
  // Found by config_fuzz ("[\0"), and upstream #294 ("[&").
  EXPECT_EQ(rejected("[&\n"), "1:2: expected a table name after '['");
  EXPECT_EQ(rejected(std::string("a = 1\n[\0]\n", 10)), "2:2: expected a table name after '['");
  EXPECT_EQ(rejected("[[ &]]\n"), "1:4: expected a table name after '['");
  EXPECT_EQ(rejected("  [\n"), "1:4: expected a table name after '['");
}

TEST(PrescanTest, TellsArraysFromTableHeaders) {
  EXPECT_EQ(rejected("a = [\n[1, 2],\n[&],\n]\n"), "accepted");   // toml++ reports '&' itself
  EXPECT_EQ(rejected("[ \"quoted\" ]\n[[arr]]\n[ t ]\n[]\n"), "accepted");
  EXPECT_EQ(rejected("b = { c = [1] }\n[d]\n"), "accepted");
  EXPECT_EQ(rejected("s = \"[&\"\n# [&\n"), "accepted");
}

TEST(PrescanTest, RejectsNonAsciiAfterALineEndingBackslash) {
  // Upstream #190: valid TOML, but toml++ 3.3 is undefined on it.
  EXPECT_EQ(rejected("s = \"\"\"\\\n  §\"\"\"\n"),
            "2:3: a non-ASCII character right after a line-ending backslash is not supported; "
            "escape it (\\uXXXX)");
  EXPECT_EQ(rejected("s = \"\"\"\\\n  x§\"\"\"\n"), "accepted");
  EXPECT_EQ(rejected("s = '''\\\n§'''\n"), "accepted");   // literal strings have no escapes
}

TEST(PrescanTest, ClosingQuotesOfMultilineStringsAreFollowed) {
  EXPECT_EQ(rejected("s = \"\"\"a\"\"\"\"\" ŏ\n").substr(0, 4), "1:15");
  EXPECT_EQ(rejected("s = \"a\\\"ŏ\"\n"), "accepted");   // an escaped quote does not close
}

TEST(PrescanTest, TheLoaderReportsItLikeAnyOtherError) {
  auto r = loadConfigString("[lb]\nworkers = 1 ŏ\n", "lb.toml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 1u);
  EXPECT_EQ(r.errors()[0].format(),
            "lb.toml:2:13: non-ASCII character outside a string or comment (TOML keys are ASCII; "
            "quote the key or the value)");
}

}  // namespace
}  // namespace lb
