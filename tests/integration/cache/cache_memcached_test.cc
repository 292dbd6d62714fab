// protocol = "memcached": two memcached processes behind lb, the text protocol over raw
// sockets as clients speak it. Every command goes to its key's server; a get over many keys
// is split by server and merged back in key order under one END.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"

namespace lb::test {
namespace {

class CacheMemcachedTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fleet_.start()) << fleet_.output(); }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }

  // Sends `request` and returns everything up to and including `until`.
  std::string exchange(TcpClient& c, const std::string& request, const std::string& until) {
    EXPECT_TRUE(c.send(request));
    if (!c.readUntil(until, 10s)) {
      ADD_FAILURE() << "no '" << until << "' after " << request << ": " << c.buffer();
      return c.take(c.buffer().size());
    }
    return c.take(c.buffer().find(until) + until.size());
  }

  CacheFleet fleet_{CacheServer::kMemcached, 2};
};

TEST_F(CacheMemcachedTest, StorageAndRetrievalCommandsWorkThroughLb) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  EXPECT_EQ(exchange(c, "set a 5 0 3\r\nabc\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(exchange(c, "add a 0 0 1\r\nx\r\n", "\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(exchange(c, "append a 0 0 2\r\nde\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(exchange(c, "get a\r\n", "END\r\n"), "VALUE a 5 5\r\nabcde\r\nEND\r\n");
  EXPECT_EQ(exchange(c, "set n 0 0 1 noreply\r\n7\r\nincr n 5\r\n", "\r\n"), "12\r\n");
  EXPECT_EQ(exchange(c, "delete a\r\n", "\r\n"), "DELETED\r\n");
  EXPECT_EQ(exchange(c, "get a\r\n", "END\r\n"), "END\r\n");
  EXPECT_EQ(exchange(c, "version\r\n", "\r\n").rfind("VERSION ", 0), 0u);
  ASSERT_TRUE(c.send("quit\r\n"));
  EXPECT_TRUE(c.waitClosed());
}

TEST_F(CacheMemcachedTest, GetOfTwoHundredKeysOnTwoServersComesBackInOrderUnderOneEnd) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  std::vector<std::string> keys;
  std::string sets;
  for (int i = 0; i < 200; ++i) {
    keys.push_back("item:" + std::to_string(i * 13));
    if (i % 7 == 5) continue;   // a few misses among them
    const std::string value = "v" + std::to_string(i);
    sets += "set " + keys.back() + " " + std::to_string(i) + " 0 " +
            std::to_string(value.size()) + " noreply\r\n" + value + "\r\n";
  }
  ASSERT_TRUE(c.send(sets));
  std::set<std::string> owners;
  for (const auto& o : fleet_.ringOwners(keys)) owners.insert(o);
  ASSERT_EQ(owners.size(), 2u);

  std::string get = "get";
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    get += " " + keys[static_cast<size_t>(i)];
    if (i % 7 == 5) continue;
    const std::string value = "v" + std::to_string(i);
    expected += "VALUE " + keys[static_cast<size_t>(i)] + " " + std::to_string(i) + " " +
                std::to_string(value.size()) + "\r\n" + value + "\r\n";
  }
  EXPECT_EQ(exchange(c, get + "\r\n", "END\r\n"), expected + "END\r\n");
  EXPECT_EQ(c.buffer(), "");
  // gets adds each item's CAS; still one END, in order.
  const std::string gets = exchange(c, "gets " + keys[0] + " " + keys[1] + " " + keys[2] + "\r\n",
                                    "END\r\n");
  EXPECT_EQ(countOf(gets, "VALUE "), 3u) << gets;
  EXPECT_EQ(countOf(gets, "END\r\n"), 1u) << gets;
  EXPECT_LT(gets.find("VALUE " + keys[0]), gets.find("VALUE " + keys[1])) << gets;
}

TEST_F(CacheMemcachedTest, PipelinedCommandsFromManyClientsComeBackInEachClientsOrder) {
  constexpr int kClients = 50, kPerClient = 40;
  std::vector<std::unique_ptr<TcpClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(clients.back()->connect(fleet_.port()));
    std::string batch;
    for (int j = 0; j < kPerClient; ++j) {
      const std::string key = "c" + std::to_string(i) + "-" + std::to_string(j);
      batch += "set " + key + " 0 0 " + std::to_string(key.size()) + "\r\n" + key + "\r\nget " +
               key + "\r\n";
    }
    ASSERT_TRUE(clients.back()->send(batch));
  }
  for (int i = 0; i < kClients; ++i) {
    std::string expected;
    for (int j = 0; j < kPerClient; ++j) {
      const std::string key = "c" + std::to_string(i) + "-" + std::to_string(j);
      expected += "STORED\r\nVALUE " + key + " 0 " + std::to_string(key.size()) + "\r\n" + key +
                  "\r\nEND\r\n";
    }
    TcpClient& c = *clients[static_cast<size_t>(i)];
    ASSERT_TRUE(c.readAtLeast(expected.size())) << i << ": " << c.buffer();
    EXPECT_EQ(c.buffer(), expected) << i;
  }
}

TEST_F(CacheMemcachedTest, UnsupportedAndMalformedCommandsGetAClearErrorAndTheConnectionStays) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  // Without the listener's fanout, flush_all is refused, naming the setting.
  const std::string flush = exchange(c, "flush_all\r\n", "\r\n");
  EXPECT_EQ(flush, "CLIENT_ERROR lb: flush_all needs fanout = true on the listener\r\n");
  const std::string stats = exchange(c, "stats\r\n", "\r\n");
  EXPECT_EQ(stats, "CLIENT_ERROR lb: stats addresses every server, not a key\r\n");
  EXPECT_EQ(exchange(c, "bogus command\r\n", "\r\n"), "ERROR\r\n");
  // A bad field drops the data block with the line (a byte count that does not read closes
  // the connection instead: memcached_hostile_test.cc).
  EXPECT_EQ(exchange(c, "set k notanumber 0 2\r\nzz\r\n", "\r\n").rfind("CLIENT_ERROR", 0), 0u);
  // A data block longer than announced is refused, as memcached does.
  EXPECT_EQ(exchange(c, "set k 0 0 2\r\nabcd\r\n", "\r\n").rfind("CLIENT_ERROR bad data chunk", 0),
            0u);
  ASSERT_TRUE(c.send("version\r\n"));
  ASSERT_TRUE(c.readUntil("VERSION ")) << c.buffer();
  c.take(c.buffer().size());
  EXPECT_EQ(exchange(c, "set k 0 0 2\r\nok\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(exchange(c, "get k\r\n", "END\r\n"), "VALUE k 0 2\r\nok\r\nEND\r\n");
}

TEST_F(CacheMemcachedTest, TheBinaryProtocolIsRefusedInBinaryAndTheConnectionCloses) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  // A binary GET of key "k": magic 0x80, opcode 0x00, key length 1, total body 1.
  std::string header(24, '\0');
  header[0] = '\x80';
  header[3] = 1;
  header[11] = 1;
  ASSERT_TRUE(c.send(header + "k"));
  ASSERT_TRUE(c.waitClosed());
  const std::string reply = c.buffer();
  ASSERT_GE(reply.size(), 24u);
  EXPECT_EQ(static_cast<unsigned char>(reply[0]), 0x81);   // a binary response
  EXPECT_NE(reply.find("binary protocol is not supported"), std::string::npos) << reply;
  // lb carries on for text clients.
  TcpClient t;
  ASSERT_TRUE(t.connect(fleet_.port()));
  EXPECT_EQ(exchange(t, "version\r\n", "\r\n").rfind("VERSION ", 0), 0u);
}

}  // namespace
}  // namespace lb::test
