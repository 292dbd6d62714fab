// A client connection follows the membership: clients keep pooled connections open for
// hours, and one lb must not send a key to two servers by the age of the connection asking.
// A connection opened before a reload that adds a server routes every command it sends after
// the reload where /ring says, single and multi-key, pipelined across the change; and an
// HTTP keep-alive connection routes each request by the table current at its head.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"
#include "tests/support/etcd_process.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/membership_fleet.h"
#include "tests/support/origin_fleet.h"

namespace lb::test {
namespace {

std::vector<std::string> keys(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// The keys of `all` whose /ring owner is `owner`, and every key's owner.
std::vector<std::string> ownedBy(CacheFleet& fleet, const std::vector<std::string>& all,
                                 const std::string& owner, std::vector<std::string>* owners) {
  *owners = fleet.ringOwners(all);
  std::vector<std::string> out;
  for (size_t i = 0; i < all.size(); ++i)
    if ((*owners)[i] == owner) out.push_back(all[i]);
  return out;
}

// GET at one server directly.
std::optional<std::string> directGet(CacheServer& s, const std::string& key) {
  TcpClient c;
  if (!c.connect(s.port())) return std::nullopt;
  return redisCall(c, {"GET", key});
}

TEST(CacheFollowMembershipTest, ARedisConnectionOpenedBeforeAReloadRoutesByTheNewRing) {
  CacheFleet fleet(CacheServer::kRedis, 2);
  ASSERT_TRUE(fleet.start()) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_EQ(redisCall(c, {"SET", "before", "1"}), "OK");   // the session is serving
  // A pipeline sent before the change, read after it.
  std::string early;
  for (const auto& k : keys("early:", 50)) early += redisEncode({"SET", k, "e"});
  ASSERT_TRUE(c.send(early));
  ASSERT_TRUE(fleet.grow()) << fleet.output();
  const std::vector<std::string> all = keys("moved:", 300);
  std::vector<std::string> owners;
  const std::vector<std::string> moved = ownedBy(fleet, all, "s3", &owners);
  ASSERT_GT(moved.size(), 40u) << "the new server should own about a third of the keys";
  // Single-key commands, pipelined after the change on the old connection.
  std::string late;
  for (const auto& k : moved) late += redisEncode({"SET", k, "v:" + k});
  ASSERT_TRUE(c.send(late));
  for (size_t i = 0; i < 50 + moved.size(); ++i) {
    auto v = readResp(c);
    ASSERT_TRUE(v) << i;
    EXPECT_EQ(v->text, "OK") << i;
  }
  for (const auto& k : moved) EXPECT_EQ(directGet(fleet.server(2), k), "v:" + k) << k;
  // A multi-key command: every part goes to its key's owner now, s3's included.
  std::vector<std::string> mset = {"MSET"};
  for (size_t i = 0; i < all.size(); ++i) {
    mset.push_back(all[i]);
    mset.push_back("m:" + all[i]);
  }
  std::string cmd = "*" + std::to_string(mset.size()) + "\r\n";
  for (const auto& a : mset) cmd += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  ASSERT_TRUE(c.send(cmd));
  auto ok = readResp(c);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->text, "OK");
  for (size_t i = 0; i < all.size(); ++i)
    EXPECT_EQ(directGet(fleet.server(fleet.indexOf(owners[i])), all[i]), "m:" + all[i]) << all[i];
}

TEST(CacheFollowMembershipTest, AMemcachedConnectionOpenedBeforeAReloadRoutesByTheNewRing) {
  CacheFleet fleet(CacheServer::kMemcached, 2);
  ASSERT_TRUE(fleet.start()) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_TRUE(c.send("set before 0 0 1\r\n1\r\n"));
  ASSERT_TRUE(c.readUntil("STORED\r\n"));
  c.take(c.buffer().size());
  ASSERT_TRUE(fleet.grow()) << fleet.output();
  const std::vector<std::string> all = keys("moved:", 300);
  std::vector<std::string> owners;
  const std::vector<std::string> moved = ownedBy(fleet, all, "s3", &owners);
  ASSERT_GT(moved.size(), 40u);
  // The new owner holds one value and every old server another: a get through the old
  // connection must read the new owner's.
  for (int s = 0; s < 3; ++s) {
    TcpClient d;
    ASSERT_TRUE(d.connect(fleet.server(s).port()));
    std::string sets;
    for (const auto& k : all) sets += "set " + k + " 0 0 2 noreply\r\n" + (s == 2 ? "s3" : "ol") + "\r\n";
    ASSERT_TRUE(d.send(sets + "mn\r\n"));
    ASSERT_TRUE(d.readUntil("MN\r\n"));
  }
  // One multi-key get over every key: the parts owned by s3 go there.
  std::string get = "get", want;
  for (size_t i = 0; i < all.size(); ++i) {
    get += " " + all[i];
    want += "VALUE " + all[i] + " 0 2\r\n" + (owners[i] == "s3" ? "s3" : "ol") + "\r\n";
  }
  ASSERT_TRUE(c.send(get + "\r\n"));
  ASSERT_TRUE(c.readUntil("END\r\n", 10s)) << c.buffer();
  EXPECT_EQ(c.take(c.buffer().size()), want + "END\r\n");
  // And single-key sets land there.
  std::string sets, stored;
  for (const auto& k : moved) {
    sets += "set " + k + " 0 0 3\r\nnew\r\n";
    stored += "STORED\r\n";
  }
  ASSERT_TRUE(c.send(sets));
  ASSERT_TRUE(c.readAtLeast(stored.size()));
  EXPECT_EQ(c.take(stored.size()), stored);
  TcpClient d;
  ASSERT_TRUE(d.connect(fleet.server(2).port()));
  for (const auto& k : moved) {
    ASSERT_TRUE(d.send("get " + k + "\r\n"));
    ASSERT_TRUE(d.readUntil("END\r\n"));
    EXPECT_EQ(d.take(d.buffer().size()), "VALUE " + k + " 0 3\r\nnew\r\nEND\r\n");
  }
}

// The same after an etcd revision that adds a server: the membership a cluster serves comes
// from etcd, and a connection opened before the revision routes by it from then on.
TEST(CacheFollowMembershipTest, ARedisConnectionOpenedBeforeAnEtcdRevisionRoutesByIt) {
  EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  std::vector<std::unique_ptr<CacheServer>> servers;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<CacheServer>(CacheServer::kRedis));
    ASSERT_TRUE(servers.back()->ok()) << servers.back()->output();
  }
  auto document = [&](int n) {
    std::string d = "{\"backends\": [";
    for (int i = 0; i < n; ++i)
      d += std::string(i > 0 ? ", " : "") + "{\"name\": \"s" + std::to_string(i + 1) +
           "\", \"address\": \"" + servers[static_cast<size_t>(i)]->address() + "\"}";
    return d + "]}";
  };
  const std::string key = "/lb/test/clusters/cache";
  const int64_t first = etcd.put(key, document(2));
  ASSERT_GT(first, 0);
  const uint16_t port = freePort();
  const uint16_t admin = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start("[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
                           std::to_string(admin) + "\"\n[listeners.cache]\nlisten = \"127.0.0.1:" +
                           std::to_string(port) +
                           "\"\nprotocol = \"redis\"\ncluster = \"cache\"\n[clusters.cache]\n"
                           "selector = \"ring_hash\"\nmembership = { etcd = [\"" +
                           etcd.clientUrl() + "\"], key = \"" + key + "\" }\n",
                       {port, admin}))
      << lb.output();
  ASSERT_TRUE(waitForRevision(admin, first, 10s)) << lb.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  ASSERT_EQ(redisCall(c, {"SET", "before", "1"}), "OK");
  const int64_t second = etcd.put(key, document(3));
  ASSERT_GT(second, first);
  ASSERT_TRUE(waitForRevision(admin, second, 10s)) << lb.output();
  std::vector<std::string> moved;
  for (const auto& k : keys("moved:", 200)) {
    const auto r = runCommand({"curl", "-s", "--max-time", "5",
                               localUrl(admin, "/ring?cluster=cache&key=" + k)});
    if (r.out.find("\"owner\":\"s3\"") != std::string::npos) moved.push_back(k);
  }
  ASSERT_GT(moved.size(), 20u);
  std::string sets;
  for (const auto& k : moved) sets += redisEncode({"SET", k, "v:" + k});
  ASSERT_TRUE(c.send(sets));
  for (size_t i = 0; i < moved.size(); ++i) {
    auto v = readResp(c);
    ASSERT_TRUE(v) << i;
    EXPECT_EQ(v->text, "OK");
  }
  for (const auto& k : moved) EXPECT_EQ(directGet(*servers[2], k), "v:" + k) << k;
}

// HTTP: a keep-alive connection's first request after a reload goes by the new table.
TEST(HttpFollowMembershipTest, AKeepAliveRequestIsRoutedByTheTableCurrentAtItsHead) {
  OriginFleet origins(3);
  ASSERT_TRUE(origins.ok()) << origins.error();
  const uint16_t port = freePort();
  const uint16_t admin = freePort();
  auto config = [&](size_t n) {
    return "[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
           std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
           std::to_string(port) +
           "\"\nprotocol = \"http\"\ncluster = \"origins\"\nhash = [ { header = \"x-key\" } ]\n"
           "[clusters.origins]\nselector = \"ring_hash\"\nbackends = [\n" +
           origins.backends(n) + "]\n";
  };
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(2), {port, admin})) << lb.output();
  // Keys that origin-c will own once it is added.
  std::vector<std::string> all = keys("k", 200), moved;
  ASSERT_TRUE(lb.reload(config(3))) << lb.output();
  for (const auto& k : all) {
    const auto r = runCommand({"curl", "-s", "--max-time", "5",
                               localUrl(admin, "/ring?cluster=origins&key=" + k)});
    if (r.out.find("\"owner\":\"origin-c\"") != std::string::npos) moved.push_back(k);
  }
  ASSERT_GT(moved.size(), 20u);
  ASSERT_TRUE(lb.reload(config(2))) << lb.output();
  // Connections opened and used before the change, idle across it.
  std::vector<std::unique_ptr<TcpClient>> conns;
  for (size_t i = 0; i < moved.size(); ++i) {
    conns.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(conns.back()->connect(port));
    ASSERT_TRUE(conns.back()->send(httpRequest("GET", "/", "x-key: " + moved[i] + "\r\n")));
    HttpResponse r = readHttpResponse(*conns.back());
    ASSERT_TRUE(r) << r.error;
    EXPECT_NE(r.header("x-backend"), "origin-c");
  }
  ASSERT_TRUE(lb.reload(config(3))) << lb.output();
  for (size_t i = 0; i < moved.size(); ++i) {
    ASSERT_TRUE(conns[i]->send(httpRequest("GET", "/", "x-key: " + moved[i] + "\r\n")));
    HttpResponse r = readHttpResponse(*conns[i]);
    ASSERT_TRUE(r) << r.error;
    EXPECT_EQ(r.header("x-backend"), "origin-c") << moved[i] << " on connection " << i;
  }
}

}  // namespace
}  // namespace lb::test
