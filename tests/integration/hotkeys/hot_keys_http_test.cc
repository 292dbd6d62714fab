// Hot keys over HTTP: lb with an HTTP listener hashing the X-Key header (2
// workers) in front of 8 lb-origin processes, and the pipelined Zipf(1.2) load of
// hot_keys_load.h on keep-alive connections. GET /hotkeys must list the true top 10 in order
// of rate within 3 s, each with a lower bound under its true rate and the owner /ring names;
// a key that stops being requested leaves the hot set once the hold (2 s) has passed.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/support/hot_keys_load.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin.h"

namespace lb::test {
namespace {

class HotKeysHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string backends;
    for (int i = 0; i < 8; ++i) {
      origins_.push_back(std::make_unique<OriginProcess>("o" + std::to_string(i)));
      ASSERT_TRUE(origins_.back()->ok()) << origins_.back()->output();
      backends += "  { name = \"o" + std::to_string(i) + "\", address = \"" +
                  origins_.back()->address() + "\" },\n";
    }
    port_ = freePort();
    admin_ = freePort();
    ASSERT_TRUE(lb_.start("[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
                              std::to_string(admin_) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
                              std::to_string(port_) +
                              "\"\ncluster = \"origins\"\nhash = [ { header = \"x-key\" } ]\n"
                              "[clusters.origins]\n"
                              "hot_keys = { threshold = 0.005, hold = \"2s\" }\nbackends = [\n" +
                              backends + "]\n",
                          {port_, admin_}))
        << lb_.output();
  }
  void TearDown() override { EXPECT_EQ(lb_.process().stop(), 0) << lb_.output(); }

  std::vector<std::unique_ptr<OriginProcess>> origins_;
  LbProcess lb_;
  uint16_t port_ = 0;
  uint16_t admin_ = 0;
};

TEST_F(HotKeysHttpTest, TheTrueTopTenInOrderWithinThreeSecondsAndADroppedKeyLeavesAfterHold) {
  HotKeysZipfLoad load(HotKeysZipfLoad::Wire::kHttp, port_);
  ASSERT_TRUE(load.start()) << load.firstError();
  std::string last;
  const double listed_at = waitForTrueTopTen(load, admin_, "origins", 3.0, &last);
  ASSERT_GT(listed_at, 0) << "after " << load.elapsed() << " s (" << load.total()
                          << " requests sent), /hotkeys' top 10 was:\n" << last;
  EXPECT_EQ(load.errors(), 0) << load.firstError();

  // Each key's owner is the one /ring names, and the only host serving it (no bounded loads).
  auto doc = fetchHotKeys(admin_, "origins");
  ASSERT_TRUE(doc);
  for (int rank = 1; rank <= 3; ++rank) {
    const std::string key = "hk:" + std::to_string(rank);
    const testjson::Value* k = findHotKey(*doc, key);
    ASSERT_NE(k, nullptr) << key;
    auto ring = httpExchange(admin_, httpRequest("GET", "/ring?cluster=origins&key=" + key,
                                                 "Connection: close\r\n"));
    ASSERT_TRUE(ring.ok) << ring.error;
    auto r = testjson::parse(ring.body);
    ASSERT_TRUE(r);
    EXPECT_EQ((*k)["owner"].text, (*r)["owner"].text) << key;
    EXPECT_EQ((*k)["hash_hex"].text, (*r)["hash_hex"].text) << key;
    ASSERT_EQ((*k)["serving"].items.size(), 1u) << key;
    EXPECT_EQ((*k)["serving"].items[0].text, (*r)["owner"].text) << key;
  }

  bool rank1_hot = false;
  std::string problem;
  const double left =
      secondsUntilDroppedKeyLeaves(load, admin_, "origins", 3, 10.0, &rank1_hot, &problem);
  EXPECT_TRUE(problem.empty()) << problem;
  ASSERT_GT(left, 0) << "hk:3 was still hot 10 s after its last request";
  EXPECT_GE(left, 2.0) << "hk:3 left the hot set before the hold";
  EXPECT_LE(left, 8.0);
  EXPECT_TRUE(rank1_hot);
  load.stop();
  EXPECT_EQ(load.errors(), 0) << load.firstError();
}

}  // namespace
}  // namespace lb::test
