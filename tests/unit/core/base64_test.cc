// lb/core/base64.h: RFC 4648's test vectors, every byte value through and back, and the
// strict decoder refusing what Go's StdEncoding (etcd's gateway) never writes.
#include "lb/core/base64.h"

#include <gtest/gtest.h>

#include <string>

namespace lb {
namespace {

TEST(Base64Test, EncodesRfc4648Vectors) {
  EXPECT_EQ(base64Encode(""), "");
  EXPECT_EQ(base64Encode("f"), "Zg==");
  EXPECT_EQ(base64Encode("fo"), "Zm8=");
  EXPECT_EQ(base64Encode("foo"), "Zm9v");
  EXPECT_EQ(base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64Encode("foobar"), "Zm9vYmFy");
}

TEST(Base64Test, DecodesRfc4648Vectors) {
  std::string out = "x";
  ASSERT_TRUE(base64Decode("", &out));
  EXPECT_EQ(out, "");
  ASSERT_TRUE(base64Decode("Zg==", &out));
  EXPECT_EQ(out, "f");
  ASSERT_TRUE(base64Decode("Zm8=", &out));
  EXPECT_EQ(out, "fo");
  ASSERT_TRUE(base64Decode("Zm9vYmFy", &out));
  EXPECT_EQ(out, "foobar");
}

TEST(Base64Test, EveryByteValueRoundTrips) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t len = 0; len <= all.size(); len += 85) {   // lengths of every remainder mod 3
    for (size_t cut = 0; cut < 3; ++cut) {
      std::string in = all.substr(0, len > cut ? len - cut : 0);
      std::string out;
      ASSERT_TRUE(base64Decode(base64Encode(in), &out)) << in.size();
      EXPECT_EQ(out, in);
    }
  }
  EXPECT_EQ(base64Encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(Base64Test, RefusesWhatHasNoSingleReading) {
  std::string out = "kept";
  for (const char* bad : {"Zg", "Zg=", "Zm9", "Z===", "Zg==Zg==", "Zm=v", "Zm9v\n", " Zm9v",
                          "Zm9-", "Zm9_", "QR==", "Zm9=" /* low bits set */, "====", "Zg=A"})
    EXPECT_FALSE(base64Decode(bad, &out)) << bad;
  EXPECT_EQ(out, "kept");
}

}  // namespace
}  // namespace lb
