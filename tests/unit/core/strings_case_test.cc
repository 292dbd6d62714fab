// lb/core/strings.h, equalsNoCase: it folds eight bytes at a time, so it is checked against a
// byte-at-a-time fold for every pair of byte values, in each word and in the last one, which
// overlaps the word before it.
#include "lb/core/strings.h"

#include <gtest/gtest.h>

#include <string>

namespace lb {
namespace {

char lowerOne(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

TEST(StringsCaseTest, EqualsNoCaseMatchesAByteAtATimeFoldForEveryPair) {
  // Each pair of byte values at one position of a 17-byte name (two words and a tail byte),
  // the rest alike: equal exactly when the two bytes fold to the same one.
  for (size_t pos : {0u, 5u, 8u, 15u, 16u}) {
    for (int a = 0; a < 256; ++a) {
      for (int b = 0; b < 256; ++b) {
        std::string x = "Transfer-Encoding", y = "tRANSFER-eNCODING";
        x[pos] = static_cast<char>(a);
        y[pos] = static_cast<char>(b);
        const bool want = lowerOne(static_cast<char>(a)) == lowerOne(static_cast<char>(b));
        ASSERT_EQ(equalsNoCase(x, y), want) << a << " vs " << b << " at " << pos;
      }
    }
  }
}

TEST(StringsCaseTest, EqualsNoCaseNeedsEqualLengths) {
  EXPECT_TRUE(equalsNoCase("", ""));
  EXPECT_FALSE(equalsNoCase("host", "hosts"));
  EXPECT_FALSE(equalsNoCase("content-length", "content-lengt"));
  EXPECT_TRUE(equalsNoCase("CONTENT-LENGTH", "content-length"));
  // '@' and '`', '[' and '{' sit 0x20 apart without being letters: never folded together.
  EXPECT_FALSE(equalsNoCase("@", "`"));
  EXPECT_FALSE(equalsNoCase("[AAAAAAAA", "{aaaaaaaa"));
}

}  // namespace
}  // namespace lb
