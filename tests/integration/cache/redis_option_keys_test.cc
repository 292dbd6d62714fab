// SORT's BY and GET patterns and STORE, and GEORADIUS' STORE and STOREDIST, name keys of
// their own: lb sends such a command only when every key it names lives with the first one,
// and answers -CROSSSLOT otherwise, rather than store a result where reads of it never go or
// read a pattern's keys on a server that does not hold them (redis-py's test_sort_get and
// test_georadius_store got wrong answers and no error).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"

namespace lb::test {
namespace {

class RedisOptionKeysTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fleet_.start("hash_tag = \"{}\"")) << fleet_.output(); }

  // Two keys with different owners.
  std::pair<std::string, std::string> apart() {
    std::vector<std::string> keys;
    for (int i = 0; i < 40; ++i) keys.push_back("apart:" + std::to_string(i * 7919));
    const auto owners = fleet_.ringOwners(keys);
    for (size_t i = 1; i < keys.size(); ++i)
      if (owners[i] != owners[0]) return {keys[0], keys[i]};
    return {};
  }

  RespValue call(TcpClient& c, const std::vector<std::string>& args) {
    std::string cmd = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) cmd += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    EXPECT_TRUE(c.send(cmd));
    auto v = readResp(c);
    return v ? *v : RespValue{};
  }

  CacheFleet fleet_{CacheServer::kRedis, 3};
};

TEST_F(RedisOptionKeysTest, SortStoreAndPatternsOnAnotherServerAreCrossSlot) {
  const auto [list, other] = apart();
  ASSERT_FALSE(list.empty());
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(call(c, {"RPUSH", list, "3", "1", "2"}).text, "3");
  EXPECT_EQ(call(c, {"SORT", list, "STORE", other}).text.rfind("-CROSSSLOT", 0), 0u);
  EXPECT_EQ(call(c, {"SORT", list, "BY", "weight_*"}).text.rfind("-CROSSSLOT", 0), 0u);
  EXPECT_EQ(call(c, {"SORT_RO", list, "GET", "user:*"}).text.rfind("-CROSSSLOT", 0), 0u);
  // What reads no other key goes on: plain, LIMIT, BY nosort, GET #.
  auto v = call(c, {"SORT", list, "LIMIT", "0", "2", "BY", "nosort", "GET", "#"});
  ASSERT_EQ(v.type, '*') << v.text;
  EXPECT_EQ(v.items.size(), 2u);
  v = call(c, {"SORT", list});
  ASSERT_EQ(v.items.size(), 3u);
  EXPECT_EQ(v.items[0].text, "1");
}

// With a hash tag the pattern's keys and the destination live with the list, and the answer
// is the one a single server gives.
TEST_F(RedisOptionKeysTest, SortWithOneHashTagWorksAsOnOneServer) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(call(c, {"RPUSH", "{u}list", "1", "2", "3"}).text, "3");
  for (const char* n : {"1", "2", "3"}) {
    ASSERT_EQ(call(c, {"SET", std::string("{u}weight_") + n, std::to_string(10 - (*n - '0'))}).text, "OK");
    ASSERT_EQ(call(c, {"SET", std::string("{u}name_") + n, std::string("u") + n}).text, "OK");
  }
  auto v = call(c, {"SORT", "{u}list", "BY", "{u}weight_*", "GET", "{u}name_*"});
  ASSERT_EQ(v.type, '*') << v.text;
  ASSERT_EQ(v.items.size(), 3u);
  EXPECT_EQ(v.items[0].text, "u3");
  EXPECT_EQ(v.items[2].text, "u1");
  EXPECT_EQ(call(c, {"SORT", "{u}list", "STORE", "{u}sorted"}).text, "3");
  EXPECT_EQ(call(c, {"LLEN", "{u}sorted"}).text, "3");   // read where it was stored
}

TEST_F(RedisOptionKeysTest, GeoradiusStoreOnAnotherServerIsCrossSlot) {
  const auto [places, other] = apart();
  ASSERT_FALSE(places.empty());
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(call(c, {"GEOADD", places, "13.361389", "38.115556", "palermo"}).text, "1");
  for (const char* store : {"STORE", "STOREDIST"})
    EXPECT_EQ(call(c, {"GEORADIUS", places, "15", "37", "200", "km", store, other})
                  .text.rfind("-CROSSSLOT", 0),
              0u)
        << store;
  EXPECT_EQ(call(c, {"GEORADIUSBYMEMBER", places, "palermo", "10", "km", "STORE", other})
                .text.rfind("-CROSSSLOT", 0),
            0u);
  EXPECT_EQ(call(c, {"GEORADIUS", "{g}p", "15", "37", "200", "km", "STORE", "{g}out"}).text, "0");
  EXPECT_EQ(call(c, {"GEORADIUS", places, "15", "37", "200", "km"}).items.size(), 1u);
}

}  // namespace
}  // namespace lb::test
