// lb as an HTTP/1.1 proxy, end to end: real lb and lb-origin processes on 127.0.0.1. Keys and
// affinity, keep-alive on both sides, pipelining, 100-continue and upgrades.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

class HttpProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* n : {"a", "b", "c"}) {
      std::string why;
      ASSERT_TRUE(h_.startOrigin(n, &why)) << why;
    }
  }
  // lb with one http listener over a, b, c.
  void startLb(const std::string& hash, const std::string& extra_listener = "",
               unsigned workers = 1) {
    std::string why;
    ASSERT_TRUE(h_.startLb("[lb]\nworkers = " + std::to_string(workers) +
                               "\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
                               "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
                               "hash = [ " + hash + " ]\n" + extra_listener +
                               "[clusters.c]\nselector = \"maglev\"\n" +
                               h_.backendsToml({"a", "b", "c"}),
                           &why))
        << why;
  }
  // Connects c to lb and asks for a websocket upgrade (key k); the response.
  HttpResponse upgrade(TcpClient& c) {
    if (!c.connect(h_.port()) ||
        !c.send("GET /ws HTTP/1.1\r\nHost: x\r\nx-key: k\r\nConnection: Upgrade\r\n"
                "Upgrade: websocket\r\n\r\n"))
      return {};
    return readHttpResponse(c);
  }
  ProxyHarness h_;
};

TEST_F(HttpProxyTest, HeaderKeyLandsOnTheSameBackendEveryTimeAndThousandKeysReachEveryBackend) {
  startLb("{ header = \"x-key\" }");
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  std::map<std::string, std::string> owner;
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string key = "key:" + std::to_string(i);
    std::string b = backendFor(c, "/", "x-key: " + key + "\r\n");
    ASSERT_NE(b, "") << key;
    owner[key] = b;
    seen.insert(b);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"a", "b", "c"}));
  // Again, on fresh connections: every key where it was.
  for (int i = 0; i < 1000; i += 37) {
    TcpClient d;
    ASSERT_TRUE(d.connect(h_.port()));
    std::string key = "key:" + std::to_string(i);
    EXPECT_EQ(backendFor(d, "/", "x-key: " + key + "\r\n"), owner[key]) << key;
  }
}

struct KeyCase {
  const char* name;
  const char* hash;
  // The request target and headers for key number i.
  std::string (*target)(int i);
  std::string (*headers)(int i);
};

class HttpKeyPluginTest : public HttpProxyTest, public ::testing::WithParamInterface<KeyCase> {};

TEST_P(HttpKeyPluginTest, SameKeySameBackendAcrossConnections) {
  const KeyCase& k = GetParam();
  startLb(k.hash);
  std::set<std::string> seen;
  for (int i = 0; i < 60; ++i) {
    std::string first;
    for (int rep = 0; rep < 3; ++rep) {
      TcpClient c;
      ASSERT_TRUE(c.connect(h_.port()));
      std::string b = backendFor(c, k.target(i), k.headers(i));
      ASSERT_NE(b, "") << k.name << " key " << i;
      if (rep == 0) first = b;
      EXPECT_EQ(b, first) << k.name << " key " << i;
    }
    seen.insert(first);
  }
  // source_ip has one key here (127.0.0.1); the others spread 60 keys over the fleet.
  if (std::string(k.name) != "source_ip") {
    EXPECT_EQ(seen.size(), 3u) << k.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Keys, HttpKeyPluginTest,
    ::testing::Values(
        KeyCase{"header", "{ header = \"x-key\" }", [](int) { return std::string("/"); },
                [](int i) { return "x-key: h" + std::to_string(i) + "\r\n"; }},
        KeyCase{"cookie", "{ cookie = \"sess\" }", [](int) { return std::string("/"); },
                [](int i) { return "Cookie: a=1; sess=s" + std::to_string(i) + "\r\n"; }},
        KeyCase{"query", "{ query = \"k\" }",
                [](int i) { return "/p?x=1&k=q" + std::to_string(i); },
                [](int) { return std::string(); }},
        KeyCase{"path", "{ path = true }", [](int i) { return "/obj/" + std::to_string(i); },
                [](int) { return std::string(); }},
        KeyCase{"source_ip", "{ source_ip = true }", [](int) { return std::string("/"); },
                [](int) { return std::string(); }}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(HttpProxyTest, FiveTupleKeyKeepsOneConnectionOnOneBackend) {
  startLb("{ five_tuple = true }");
  std::set<std::string> seen;
  for (int conn = 0; conn < 30; ++conn) {
    TcpClient c;
    ASSERT_TRUE(c.connect(h_.port()));
    std::string first = backendFor(c, "/", "");
    ASSERT_NE(first, "");
    for (int i = 0; i < 3; ++i) EXPECT_EQ(backendFor(c, "/", ""), first);
    seen.insert(first);
  }
  EXPECT_GE(seen.size(), 2u);   // 30 source ports do not all hash to one backend
}

TEST_F(HttpProxyTest, GeneratedCookieIsSetOnceThenTheClientSticks) {
  startLb("{ cookie = \"lb\", ttl = \"1h\" }");
  for (int client = 0; client < 10; ++client) {
    auto first = httpExchange(h_.port(), httpRequest("GET", "/"));
    ASSERT_TRUE(first.ok) << first.error;
    auto set = first.header("set-cookie");
    ASSERT_TRUE(set) << "no Set-Cookie on the first response";
    EXPECT_NE(set->find("; Max-Age=3600; Path=/; HttpOnly"), std::string::npos) << *set;
    std::string cookie = set->substr(0, set->find(';'));   // lb=VALUE
    ASSERT_EQ(cookie.rfind("lb=", 0), 0u) << cookie;
    std::string backend = first.header("x-backend").value_or("");
    for (int i = 0; i < 5; ++i) {
      auto r = httpExchange(h_.port(), httpRequest("GET", "/", "Cookie: " + cookie + "\r\n"));
      ASSERT_TRUE(r.ok) << r.error;
      EXPECT_EQ(r.header("x-backend").value_or(""), backend);
      EXPECT_FALSE(r.header("set-cookie")) << "a client with the cookie gets no new one";
    }
  }
}

TEST_F(HttpProxyTest, KeepAliveIsReusedOnBothSides) {
  startLb("{ header = \"x-key\" }");
  const long before = originStat(h_.originPort("a"), "connections_accepted") +
                      originStat(h_.originPort("b"), "connections_accepted") +
                      originStat(h_.originPort("c"), "connections_accepted");
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(c.send(httpRequest("GET", "/", "x-key: k" + std::to_string(i % 7) + "\r\n")));
    auto r = readHttpResponse(c);
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_EQ(r.status, 200);
    EXPECT_TRUE(r.keep_alive);
    EXPECT_FALSE(c.closedByPeer());
  }
  const long after = originStat(h_.originPort("a"), "connections_accepted") +
                     originStat(h_.originPort("b"), "connections_accepted") +
                     originStat(h_.originPort("c"), "connections_accepted");
  // One client connection; upstream, at most one connection per backend was ever opened
  // for 200 sequential requests (plus the /stats probes themselves, 3 before and 3 after).
  EXPECT_LE(after - before, 3 + 3);
}

TEST_F(HttpProxyTest, PipelinedRequestsAreAnsweredInOrder) {
  startLb("{ header = \"x-key\" }");
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  std::string burst;
  for (int i = 0; i < 5; ++i)
    burst += httpRequest("POST", "/echo", "x-key: k" + std::to_string(i) + "\r\n",
                         "body-" + std::to_string(i));
  ASSERT_TRUE(c.send(burst));
  for (int i = 0; i < 5; ++i) {
    auto r = readHttpResponse(c);
    ASSERT_TRUE(r.ok) << i << ": " << r.error;
    EXPECT_EQ(r.body, "body-" + std::to_string(i));
  }
}

TEST_F(HttpProxyTest, ExpectContinueLetsTheBackendsHundredThrough) {
  startLb("{ header = \"x-key\" }");
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: x\r\nx-key: k\r\nContent-Length: 5\r\n"
                     "Expect: 100-continue\r\n\r\n"));
  auto interim = readHttpResponse(c);
  ASSERT_TRUE(interim.ok) << interim.error;
  EXPECT_EQ(interim.status, 100);
  ASSERT_TRUE(c.send("hello"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
}

TEST_F(HttpProxyTest, UpgradedConnectionEchoesBothWays) {
  startLb("{ header = \"x-key\" }");
  TcpClient c;
  auto r = upgrade(c);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.status, 101);
  EXPECT_EQ(r.header("upgrade").value_or(""), "websocket");
  for (int i = 0; i < 3; ++i) {
    std::string msg = "frame-" + std::to_string(i) + std::string(1000 * i, 'x');
    ASSERT_TRUE(c.send(msg));
    ASSERT_TRUE(c.readAtLeast(msg.size())) << "echo " << i;
    EXPECT_EQ(c.take(msg.size()), msg);
  }
}

TEST_F(HttpProxyTest, UpgradedConnectionClosesBothSidesWhenTheClientEndsIt) {
  startLb("{ header = \"x-key\" }");
  TcpClient c;
  auto r = upgrade(c);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.status, 101);
  const uint16_t origin = h_.originPort(r.header("x-backend").value_or("?"));
  ASSERT_TRUE(c.send("last words"));
  ASSERT_TRUE(c.readAtLeast(10));
  EXPECT_EQ(c.take(10), "last words");
  // The tunnel and this probe itself.
  const long during = originStat(origin, "connections_active");
  ASSERT_GE(during, 2);
  c.shutdownWrite();
  // The client's EOF ends the tunnel: lb closes the client side and its backend connection.
  EXPECT_TRUE(c.waitClosed(3s));
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (originStat(origin, "connections_active") > during - 1 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(originStat(origin, "connections_active"), during - 1);
}

TEST_F(HttpProxyTest, HeadAndBodilessStatusesCarryNoBodyAndKeepTheConnection) {
  startLb("{ header = \"x-key\" }");
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  ASSERT_TRUE(c.send(httpRequest("HEAD", "/bytes?n=1000", "x-key: k\r\n")));
  auto head = readHttpResponse(c, /*head_request=*/true);
  ASSERT_TRUE(head.ok) << head.error;
  EXPECT_EQ(head.header("content-length").value_or(""), "1000");
  for (const char* status : {"204", "304"}) {
    ASSERT_TRUE(c.send(httpRequest("GET", std::string("/?status=") + status, "x-key: k\r\n")));
    auto r = readHttpResponse(c);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, atoi(status));
    EXPECT_EQ(r.body, "");
  }
  EXPECT_EQ(backendFor(c, "/", "x-key: k\r\n").empty(), false);
}

TEST_F(HttpProxyTest, ForwardedHeadersAreAddedAndHopByHopRemoved) {
  startLb("{ header = \"x-key\" }");
  auto r = httpExchange(h_.port(),
                        httpRequest("GET", "/", "x-key: k\r\nX-Forwarded-For: 10.9.9.9\r\n"
                                    "Keep-Alive: timeout=5\r\nTE: trailers\r\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.header("x-echo-x-forwarded-for").value_or(""), "10.9.9.9, 127.0.0.1");
  EXPECT_EQ(r.header("x-echo-x-forwarded-proto").value_or(""), "http");
  EXPECT_EQ(r.header("x-echo-host").value_or(""), "127.0.0.1");
  EXPECT_FALSE(r.header("x-echo-keep-alive"));
  EXPECT_FALSE(r.header("x-echo-te"));
}

TEST_F(HttpProxyTest, Http10ClientGetsKeepAliveOnlyWhenItAsks) {
  startLb("{ header = \"x-key\" }");
  TcpClient c;
  ASSERT_TRUE(c.connect(h_.port()));
  ASSERT_TRUE(c.send("GET / HTTP/1.0\r\nx-key: k\r\nConnection: keep-alive\r\n\r\n"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.header("connection").value_or(""), "keep-alive");
  ASSERT_TRUE(c.send("GET / HTTP/1.0\r\nx-key: k\r\n\r\n"));
  auto r2 = readHttpResponse(c);
  ASSERT_TRUE(r2.ok) << r2.error;
  EXPECT_TRUE(c.waitClosed()) << "HTTP/1.0 without keep-alive: lb closes after the response";
}

}  // namespace
}  // namespace lb::test
