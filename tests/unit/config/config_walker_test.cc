// The did-you-mean behind every "unknown key" and "not defined" message (lb/config/walker.h).
#include <gtest/gtest.h>

#include "lb/config/walker.h"

namespace lb {
namespace {

TEST(EditDistanceTest, CountsAnAdjacentSwapAsOneEdit) {
  EXPECT_EQ(editDistance("wieght", "weight"), 1u);
  EXPECT_EQ(editDistance("cahce", "cache"), 1u);
}

TEST(EditDistanceTest, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(editDistance("", "abc"), 3u);
  EXPECT_EQ(editDistance("abc", ""), 3u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(editDistance("listn", "listen"), 1u);
  EXPECT_EQ(editDistance("same", "same"), 0u);
}

TEST(DidYouMeanTest, NamesTheClosestCandidate) {
  std::vector<std::string> keys = {"name", "address", "weight", "hash_key"};
  EXPECT_EQ(didYouMean("wieght", keys), " (did you mean 'weight'?)");
  EXPECT_EQ(didYouMean("adress", keys), " (did you mean 'address'?)");
  EXPECT_EQ(didYouMean("hashkey", keys), " (did you mean 'hash_key'?)");
}

TEST(DidYouMeanTest, StaysQuietWhenNothingIsClose) {
  std::vector<std::string> keys = {"name", "address", "weight"};
  EXPECT_EQ(didYouMean("colour", keys), "");
  EXPECT_EQ(didYouMean("x", {"y"}), "");     // one edit, but the whole word
  EXPECT_EQ(didYouMean("abcd", {"abxy"}), "");   // short words allow one edit only
  EXPECT_EQ(didYouMean("anything", {}), "");
}

}  // namespace
}  // namespace lb
