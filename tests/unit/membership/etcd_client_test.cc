// lb::EtcdClient against a real etcd 3.4 (one member, shared by the suite: each test uses
// keys of its own) and against tiny fake servers for what etcd never does (silence, garbage).
// The loop runs on the test's thread; every wait is for a condition with a deadline, and
// every test ends with the client closed and the loop holding no handle.
#include "lb/membership/etcd_client.h"

#include <gtest/gtest.h>
#include <netinet/tcp.h>
#include <uv.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/etcd_process.h"
#include "tests/support/tcp_test_servers.h"

namespace lb {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

EtcdEndpoint endpointOf(const std::string& url) {
  EtcdEndpoint ep;
  std::string error;
  EXPECT_TRUE(parseEtcdUrl(url, &ep, &error)) << error;
  return ep;
}

std::string urlOfPort(uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

// A fake server's handler: after the request, `reply` one byte per segment (TCP_NODELAY and
// a pause between writes), so that every read the client makes splits it somewhere new.
test::BlockingServer::Handler trickling(std::string reply) {
  return [reply = std::move(reply)](int fd) {
    char buf[4096];
    if (read(fd, buf, sizeof buf) <= 0) return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (char c : reply) {
      if (!test::BlockingServer::writeAll(fd, std::string(1, c))) return;
      usleep(100);
    }
  };
}

// A loop on the test's thread and the client under test; TearDown closes the client and
// checks that nothing of it is left in the loop.
class EtcdLoopTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(uv_loop_init(&loop_), 0); }

  void TearDown() override {
    if (client_ != nullptr) closeClient();
    uv_run(&loop_, UV_RUN_NOWAIT);
    int live = 0;
    uv_walk(&loop_, [](uv_handle_t*, void* arg) { ++*static_cast<int*>(arg); }, &live);
    EXPECT_EQ(live, 0) << "handles left open";
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  EtcdClient& clientOf(const std::vector<std::string>& urls, Duration timeout = 2000ms) {
    std::vector<EtcdEndpoint> eps;
    for (const auto& u : urls) eps.push_back(endpointOf(u));
    client_ = std::make_unique<EtcdClient>(&loop_, std::move(eps), timeout);
    return *client_;
  }

  void closeClient() {
    bool closed = false;
    client_->close([&] { closed = true; });
    EXPECT_FALSE(closed) << "closed ran inline";
    EXPECT_TRUE(runUntil([&] { return closed; }));
    client_.reset();
  }

  bool runUntil(const std::function<bool()>& pred, std::chrono::milliseconds limit = 5s) {
    const auto deadline = Clock::now() + limit;
    while (!pred()) {
      if (Clock::now() > deadline) return false;
      uv_run(&loop_, UV_RUN_NOWAIT);
      if (!pred()) usleep(1000);
    }
    return true;
  }

  // One range, run to its end.
  struct RangeOutcome {
    bool done = false;
    std::optional<EtcdRangeReply> reply;
    std::optional<EtcdError> error;
  };
  RangeOutcome rangeOf(EtcdClient& c, const std::string& key) {
    RangeOutcome out;
    c.range(key, [&](const EtcdRangeReply* r, const EtcdError* e) {
      out.done = true;
      if (r != nullptr) out.reply = *r;
      if (e != nullptr) out.error = *e;
    });
    EXPECT_FALSE(out.done) << "the callback ran inline";
    EXPECT_TRUE(runUntil([&] { return out.done; }, 10s));
    return out;
  }

  struct TxnOutcome {
    bool done = false;
    std::optional<EtcdTxnReply> reply;
    std::optional<EtcdError> error;
  };
  TxnOutcome txnOf(EtcdClient& c, const std::string& key, const std::string& value,
                   int64_t expected) {
    TxnOutcome out;
    c.putIfModRevision(key, value, expected, [&](const EtcdTxnReply* r, const EtcdError* e) {
      out.done = true;
      if (r != nullptr) out.reply = *r;
      if (e != nullptr) out.error = *e;
    });
    EXPECT_TRUE(runUntil([&] { return out.done; }));
    return out;
  }

  // A watch's record.
  struct WatchLog {
    bool created = false;
    std::vector<EtcdWatchBatch> batches;
    std::optional<EtcdError> end;
    int ends = 0;
  };
  void watchInto(EtcdClient& c, const std::string& key, int64_t from, WatchLog* log) {
    c.watch(key, from, [log] { log->created = true; },
            [log](const EtcdWatchBatch& b) { log->batches.push_back(b); },
            [log](const EtcdError& e) {
              log->end = e;
              ++log->ends;
            });
  }

  uv_loop_t loop_;
  std::unique_ptr<EtcdClient> client_;
};

// One etcd member for the whole suite: each test uses keys of its own.
class EtcdClientTest : public EtcdLoopTest {
 protected:
  static void SetUpTestSuite() { etcd_ = new test::EtcdProcess(); }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(etcd_->ok()) << etcd_->output();
    EtcdLoopTest::SetUp();
  }

  // A client of the suite's etcd, or of `urls`.
  EtcdClient& client(std::vector<std::string> urls = {}, Duration timeout = 2000ms) {
    if (urls.empty()) urls = {etcd_->clientUrl()};
    return clientOf(urls, timeout);
  }

  static test::EtcdProcess* etcd_;
};

test::EtcdProcess* EtcdClientTest::etcd_ = nullptr;

TEST_F(EtcdClientTest, RangeOfAnAbsentKeyHasNoKvAndTheStoreRevision) {
  auto& c = client();
  auto out = rangeOf(c, "/lb-test/absent");
  ASSERT_TRUE(out.reply) << out.error->message;
  EXPECT_FALSE(out.reply->kv);
  EXPECT_GE(out.reply->revision, 1);
}

TEST_F(EtcdClientTest, RangeAfterPutReturnsTheValueByteExact) {
  // Not UTF-8, with quotes, a backslash, a newline and bytes above 0x7f.
  const std::string value = "{\"a\": \"\\\\\"}\n\xff\xfe\x80\x01 end";
  const int64_t rev = etcd_->put("/lb-test/bytes", value);
  ASSERT_GT(rev, 0);
  auto& c = client();
  auto out = rangeOf(c, "/lb-test/bytes");
  ASSERT_TRUE(out.reply) << out.error->message;
  ASSERT_TRUE(out.reply->kv);
  EXPECT_EQ(out.reply->kv->key, "/lb-test/bytes");
  EXPECT_EQ(out.reply->kv->value, value);
  EXPECT_EQ(out.reply->kv->mod_revision, rev);
  EXPECT_EQ(out.reply->kv->create_revision, rev);
  EXPECT_EQ(out.reply->kv->version, 1);
}

TEST_F(EtcdClientTest, HeaderRevisionIsTheStoresNotTheKeys) {
  const int64_t key_rev = etcd_->put("/lb-test/header-a", "1");
  const int64_t later = etcd_->put("/lb-test/header-b", "2");
  ASSERT_GT(later, key_rev);
  auto& c = client();
  auto out = rangeOf(c, "/lb-test/header-a");
  ASSERT_TRUE(out.reply && out.reply->kv);
  EXPECT_EQ(out.reply->kv->mod_revision, key_rev);
  EXPECT_GE(out.reply->revision, later);
}

TEST_F(EtcdClientTest, PutIfModRevisionSucceedsOnTheCurrentRevision) {
  const int64_t rev = etcd_->put("/lb-test/cas-ok", "old");
  auto& c = client();
  auto out = txnOf(c, "/lb-test/cas-ok", "new", rev);
  ASSERT_TRUE(out.reply) << out.error->message;
  EXPECT_TRUE(out.reply->succeeded);
  EXPECT_GT(out.reply->revision, rev);
  EXPECT_EQ(etcd_->get("/lb-test/cas-ok"), "new");
  auto after = rangeOf(c, "/lb-test/cas-ok");
  ASSERT_TRUE(after.reply && after.reply->kv);
  EXPECT_EQ(after.reply->kv->mod_revision, out.reply->revision);
}

TEST_F(EtcdClientTest, PutIfModRevisionFailsOnAStaleRevisionWithTheCurrentKey) {
  const int64_t first = etcd_->put("/lb-test/cas-stale", "one");
  const int64_t second = etcd_->put("/lb-test/cas-stale", "two");
  auto& c = client();
  auto out = txnOf(c, "/lb-test/cas-stale", "three", first);
  ASSERT_TRUE(out.reply) << out.error->message;
  EXPECT_FALSE(out.reply->succeeded);
  ASSERT_TRUE(out.reply->current);
  EXPECT_EQ(out.reply->current->value, "two");
  EXPECT_EQ(out.reply->current->mod_revision, second);
  EXPECT_EQ(etcd_->get("/lb-test/cas-stale"), "two");
}

TEST_F(EtcdClientTest, PutIfModRevisionZeroCreatesOnlyAnAbsentKey) {
  auto& c = client();
  auto created = txnOf(c, "/lb-test/cas-create", "first", 0);
  ASSERT_TRUE(created.reply) << created.error->message;
  EXPECT_TRUE(created.reply->succeeded);
  auto again = txnOf(c, "/lb-test/cas-create", "second", 0);
  ASSERT_TRUE(again.reply) << again.error->message;
  EXPECT_FALSE(again.reply->succeeded);
  ASSERT_TRUE(again.reply->current);
  EXPECT_EQ(again.reply->current->value, "first");
  EXPECT_EQ(again.reply->current->mod_revision, created.reply->revision);
}

TEST_F(EtcdClientTest, PutReturnsTheRevisionItWrote) {
  auto& c = client();
  int64_t rev = -1;
  c.put("/lb-test/put", "written", [&](int64_t r, const EtcdError* e) {
    EXPECT_EQ(e, nullptr) << e->message;
    rev = r;
  });
  ASSERT_TRUE(runUntil([&] { return rev >= 0; }));
  EXPECT_GT(rev, 0);
  EXPECT_EQ(etcd_->get("/lb-test/put"), "written");
  EXPECT_EQ(etcd_->revision(), rev);
}

TEST_F(EtcdClientTest, WatchFromTheNextRevisionSeesALaterPutAsOneBatch) {
  auto& c = client();
  auto start = rangeOf(c, "/lb-test/watch-put");
  ASSERT_TRUE(start.reply);
  WatchLog log;
  watchInto(c, "/lb-test/watch-put", start.reply->revision + 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.created || log.end; }));
  ASSERT_TRUE(log.created) << log.end->message;
  const int64_t rev = etcd_->put("/lb-test/watch-put", "v1");
  ASSERT_TRUE(runUntil([&] { return !log.batches.empty() || log.end; }));
  ASSERT_EQ(log.batches.size(), 1u);
  EXPECT_EQ(log.batches[0].revision, rev);
  ASSERT_EQ(log.batches[0].events.size(), 1u);
  const EtcdWatchEvent& ev = log.batches[0].events[0];
  EXPECT_FALSE(ev.deleted);
  EXPECT_EQ(ev.kv.key, "/lb-test/watch-put");
  EXPECT_EQ(ev.kv.value, "v1");
  EXPECT_EQ(ev.kv.mod_revision, rev);
  EXPECT_FALSE(log.end);
}

TEST_F(EtcdClientTest, WatchSeesADelete) {
  const int64_t put = etcd_->put("/lb-test/watch-del", "doomed");
  auto& c = client();
  WatchLog log;
  watchInto(c, "/lb-test/watch-del", put + 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.created; }));
  const int64_t del = etcd_->del("/lb-test/watch-del");
  ASSERT_GT(del, put);
  ASSERT_TRUE(runUntil([&] { return !log.batches.empty(); }));
  ASSERT_EQ(log.batches[0].events.size(), 1u);
  EXPECT_TRUE(log.batches[0].events[0].deleted);
  EXPECT_EQ(log.batches[0].events[0].kv.mod_revision, del);
  EXPECT_EQ(log.batches[0].events[0].kv.value, "");
}

TEST_F(EtcdClientTest, WatchFromAnOlderRevisionReplaysEachRevisionAsItsOwnBatch) {
  const int64_t a = etcd_->put("/lb-test/watch-replay", "a");
  const int64_t b = etcd_->put("/lb-test/watch-replay", "b");
  auto& c = client();
  WatchLog log;
  watchInto(c, "/lb-test/watch-replay", a, &log);
  ASSERT_TRUE(runUntil([&] {
    size_t n = 0;
    for (const auto& batch : log.batches) n += batch.events.size();
    return n >= 2;
  }));
  std::vector<int64_t> seen;
  for (const auto& batch : log.batches)
    for (const auto& e : batch.events) seen.push_back(e.kv.mod_revision);
  EXPECT_EQ(seen, (std::vector<int64_t>{a, b}));
}

TEST_F(EtcdClientTest, AllPutsOfOneTxnArriveAsOneBatch) {
  // The watch is on one key, so the txn writes it with a neighbour: one revision, one
  // message, one event for our key. (Two events of one key need two revisions.)
  auto& c = client();
  auto start = rangeOf(c, "/lb-test/watch-txn");
  ASSERT_TRUE(start.reply);
  WatchLog log;
  watchInto(c, "/lb-test/watch-txn", start.reply->revision + 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.created; }));
  const int64_t rev =
      etcd_->putInOneTxn({{"/lb-test/watch-txn-other", "x"}, {"/lb-test/watch-txn", "y"}});
  ASSERT_GT(rev, 0);
  ASSERT_TRUE(runUntil([&] { return !log.batches.empty(); }));
  ASSERT_EQ(log.batches.size(), 1u);
  EXPECT_EQ(log.batches[0].revision, rev);
  ASSERT_EQ(log.batches[0].events.size(), 1u);
  EXPECT_EQ(log.batches[0].events[0].kv.value, "y");
  EXPECT_EQ(log.batches[0].events[0].kv.mod_revision, rev);
}

TEST_F(EtcdClientTest, WatchFromACompactedRevisionEndsWithCompacted) {
  const int64_t first = etcd_->put("/lb-test/watch-compacted", "1");
  const int64_t last = etcd_->put("/lb-test/watch-compacted", "2");
  ASSERT_TRUE(etcd_->compact(last));
  auto& c = client();
  WatchLog log;
  watchInto(c, "/lb-test/watch-compacted", first, &log);
  ASSERT_TRUE(runUntil([&] { return log.end.has_value(); }));
  EXPECT_EQ(log.end->kind, EtcdFailure::kCompacted) << log.end->message;
  EXPECT_EQ(log.end->compact_revision, last);
  EXPECT_TRUE(log.batches.empty());
  // on_end once, and the watch is over.
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_EQ(log.ends, 1);
  EXPECT_FALSE(c.watching());
}

TEST_F(EtcdClientTest, CompactPastTheCurrentRevisionIsEtcdsError) {
  auto& c = client();
  std::optional<EtcdError> error;
  bool done = false;
  c.compact(etcd_->revision() + 1000, [&](const EtcdError* e) {
    done = true;
    if (e != nullptr) error = *e;
  });
  ASSERT_TRUE(runUntil([&] { return done; }));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, EtcdFailure::kHttpStatus);
  EXPECT_EQ(error->http_status, 400);
  EXPECT_NE(error->message.find("future revision"), std::string::npos) << error->message;
}

TEST_F(EtcdClientTest, ADeadFirstEndpointFailsOverToTheSecond) {
  const std::string dead = urlOfPort(test::closedPort());
  auto& c = client({dead, etcd_->clientUrl()});
  auto out = rangeOf(c, "/lb-test/absent");
  ASSERT_TRUE(out.reply) << out.error->message;
  EXPECT_EQ(c.currentEndpoint().url, etcd_->clientUrl());
}

TEST_F(EtcdClientTest, ARangeTimedOutOnAHungMemberIsAskedOfTheNext) {
  test::BlockingServer hung([](int fd) { test::BlockingServer::readToEof(fd); });
  auto& c = client({urlOfPort(hung.port()), etcd_->clientUrl()}, 200ms);
  auto out = rangeOf(c, "/lb-test/absent");
  ASSERT_TRUE(out.reply) << out.error->message;
  EXPECT_EQ(c.currentEndpoint().url, etcd_->clientUrl());
}

TEST_F(EtcdClientTest, APutTimedOutIsNotSentToAnotherMember) {
  // The hung member may have applied it: asking another could write it twice.
  test::BlockingServer hung([](int fd) { test::BlockingServer::readToEof(fd); });
  auto& c = client({urlOfPort(hung.port()), etcd_->clientUrl()}, 200ms);
  auto out = txnOf(c, "/lb-test/put-hung", "v", 0);
  ASSERT_TRUE(out.error);
  EXPECT_EQ(out.error->kind, EtcdFailure::kTimeout);
  EXPECT_EQ(out.error->endpoint, urlOfPort(hung.port()));
  EXPECT_EQ(etcd_->get("/lb-test/put-hung"), std::nullopt);
}

TEST_F(EtcdClientTest, APutRefusedByADeadMemberGoesToTheNext) {
  auto& c = client({urlOfPort(test::closedPort()), etcd_->clientUrl()});
  auto out = txnOf(c, "/lb-test/put-refused", "v", 0);
  ASSERT_TRUE(out.reply) << out.error->message;
  EXPECT_TRUE(out.reply->succeeded);
  EXPECT_EQ(etcd_->get("/lb-test/put-refused"), "v");
}

TEST_F(EtcdClientTest, AllEndpointsDeadFailsWithConnectWithinTheTimeout) {
  auto& c = client({urlOfPort(test::closedPort()), urlOfPort(test::closedPort())}, 500ms);
  const auto t0 = Clock::now();
  auto out = rangeOf(c, "/lb-test/absent");
  ASSERT_TRUE(out.error);
  EXPECT_EQ(out.error->kind, EtcdFailure::kConnect) << out.error->message;
  EXPECT_NE(out.error->message.find("refused"), std::string::npos) << out.error->message;
  EXPECT_LT(Clock::now() - t0, 500ms);
}

TEST_F(EtcdClientTest, AServerThatNeverAnswersTimesOut) {
  test::BlockingServer silent([](int fd) { test::BlockingServer::readToEof(fd); });
  auto& c = client({urlOfPort(silent.port())}, 200ms);
  // The loop's clock goes stale while its thread does something else: the deadline must be
  // counted from the request, not from the loop's last turn.
  usleep(100 * 1000);
  const auto t0 = Clock::now();
  auto out = rangeOf(c, "/lb-test/absent");
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(out.error);
  EXPECT_EQ(out.error->kind, EtcdFailure::kTimeout) << out.error->message;
  EXPECT_GE(took, 190ms);
  EXPECT_LT(took, 1s);
}

TEST_F(EtcdClientTest, A200ThatIsNotJsonIsAProtocolError) {
  test::BlockingServer garbage(test::BlockingServer::answering(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello"));
  auto& c = client({urlOfPort(garbage.port())});
  auto out = rangeOf(c, "/lb-test/absent");
  ASSERT_TRUE(out.error);
  EXPECT_EQ(out.error->kind, EtcdFailure::kProtocol) << out.error->message;
}

TEST_F(EtcdClientTest, JsonWithoutAHeaderRevisionIsAProtocolError) {
  test::BlockingServer fake(test::BlockingServer::answering(
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"));
  auto& c = client({urlOfPort(fake.port())});
  auto out = rangeOf(c, "/lb-test/absent");
  ASSERT_TRUE(out.error);
  EXPECT_EQ(out.error->kind, EtcdFailure::kProtocol);
  EXPECT_NE(out.error->message.find("header"), std::string::npos) << out.error->message;
}

TEST_F(EtcdClientTest, AMalformedChunkIsAProtocolError) {
  test::BlockingServer fake(test::BlockingServer::answering(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"));
  auto& c = client({urlOfPort(fake.port())});
  auto out = rangeOf(c, "/lb-test/absent");
  ASSERT_TRUE(out.error);
  EXPECT_EQ(out.error->kind, EtcdFailure::kProtocol) << out.error->message;
}

TEST_F(EtcdClientTest, AReplyEndedByTheServerClosingIsReadWhole) {
  // No Content-Length and no chunking: HTTP/1.1 lets the close end the body.
  test::BlockingServer fake([](int fd) {
    char buf[4096];
    if (read(fd, buf, sizeof buf) <= 0) return;
    test::BlockingServer::writeAll(
        fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"header\":{\"revision\":\"7\"}}");
  });
  auto& c = client({urlOfPort(fake.port())});
  auto out = rangeOf(c, "/k");
  ASSERT_TRUE(out.reply) << out.error->message;
  EXPECT_EQ(out.reply->revision, 7);
  EXPECT_FALSE(out.reply->kv);
}

TEST_F(EtcdClientTest, AReplyCutShortIsAConnectionFailure) {
  // etcd dying in the middle of a reply: another member may answer, so it is kConnect.
  test::BlockingServer fake([](int fd) {
    char buf[4096];
    if (read(fd, buf, sizeof buf) <= 0) return;
    test::BlockingServer::writeAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"hea");
  });
  auto& c = client({urlOfPort(fake.port())});
  auto out = rangeOf(c, "/lb-test/absent");
  ASSERT_TRUE(out.error);
  EXPECT_EQ(out.error->kind, EtcdFailure::kConnect) << out.error->message;
}

TEST_F(EtcdClientTest, AWatchMessageThatIsNotJsonEndsTheWatchWithProtocol) {
  test::BlockingServer fake(test::BlockingServer::answering(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nno\n\r\n"));
  auto& c = client({urlOfPort(fake.port())});
  WatchLog log;
  watchInto(c, "/lb-test/k", 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.end.has_value(); }));
  EXPECT_EQ(log.end->kind, EtcdFailure::kProtocol) << log.end->message;
  EXPECT_FALSE(log.created);
}

TEST_F(EtcdClientTest, AWatchMessageSplitAcrossChunksIsReadWhole) {
  // One message in three chunks, the created message and an event in one.
  const std::string created = "{\"result\":{\"header\":{\"revision\":\"5\"},\"created\":true}}\n";
  const std::string event =
      "{\"result\":{\"header\":{\"revision\":\"6\"},\"events\":[{\"kv\":{\"key\":\"L2s=\","
      "\"mod_revision\":\"6\",\"value\":\"dg==\"}}]}}\n";
  auto chunk = [](const std::string& s) {
    char size[16];
    snprintf(size, sizeof size, "%zx\r\n", s.size());
    return size + s + "\r\n";
  };
  const std::string both = created + event;
  const std::string reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                            chunk(both.substr(0, 10)) + chunk(both.substr(10, 70)) +
                            chunk(both.substr(80));
  test::BlockingServer fake(test::BlockingServer::answering(reply));
  auto& c = client({urlOfPort(fake.port())});
  WatchLog log;
  watchInto(c, "/k", 6, &log);
  ASSERT_TRUE(runUntil([&] { return !log.batches.empty() || log.end; }));
  EXPECT_TRUE(log.created);
  ASSERT_EQ(log.batches.size(), 1u);
  EXPECT_EQ(log.batches[0].revision, 6);
  EXPECT_EQ(log.batches[0].events[0].kv.value, "v");
}

TEST_F(EtcdClientTest, AWatchRefusedWithAStatusEndsWithHttpStatus) {
  // What etcd 3.4 answers to a watch request body it cannot read.
  test::BlockingServer fake(test::BlockingServer::answering(
      "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
      "Content-Length: 62\r\n\r\n"
      "{\"error\":\"unexpected EOF\",\"message\":\"unexpected EOF\",\"code\":2}"));
  auto& c = client({urlOfPort(fake.port())});
  WatchLog log;
  watchInto(c, "/lb-test/k", 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.end.has_value(); }));
  EXPECT_EQ(log.end->kind, EtcdFailure::kHttpStatus);
  EXPECT_EQ(log.end->http_status, 500);
  EXPECT_NE(log.end->message.find("unexpected EOF"), std::string::npos) << log.end->message;
  EXPECT_FALSE(c.watching());
}

TEST_F(EtcdClientTest, AWatchNeverCreatedTimesOut) {
  test::BlockingServer silent([](int fd) { test::BlockingServer::readToEof(fd); });
  auto& c = client({urlOfPort(silent.port())}, 200ms);
  WatchLog log;
  const auto t0 = Clock::now();
  watchInto(c, "/lb-test/k", 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.end.has_value(); }));
  EXPECT_EQ(log.end->kind, EtcdFailure::kTimeout) << log.end->message;
  EXPECT_GE(Clock::now() - t0, 190ms);
}

TEST_F(EtcdClientTest, ACreatedWatchOutlivesTheRequestTimeout) {
  auto& c = client({etcd_->clientUrl()}, 200ms);
  WatchLog log;
  watchInto(c, "/lb-test/watch-long", etcd_->revision() + 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.created; }));
  runUntil([] { return false; }, 400ms);   // twice the request timeout, idle
  EXPECT_FALSE(log.end) << log.end->message;
  const int64_t rev = etcd_->put("/lb-test/watch-long", "late");
  ASSERT_TRUE(runUntil([&] { return !log.batches.empty(); }));
  EXPECT_EQ(log.batches[0].revision, rev);
}

TEST_F(EtcdClientTest, EveryPutOfASequenceIsARevisionOfItsOwn) {
  // The fixture's fast writer (acceptance tests write a key a thousand times), watched.
  auto& c = client();
  const int64_t before = etcd_->revision();
  WatchLog log;
  watchInto(c, "/lb-test/sequence", before + 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.created; }));
  std::vector<std::string> values;
  for (int i = 0; i < 50; ++i) values.push_back("{\"n\": " + std::to_string(i) + "}");
  const auto t0 = Clock::now();
  const int64_t last = etcd_->putSequence("/lb-test/sequence", values);
  const auto took = Clock::now() - t0;
  ASSERT_EQ(last, before + 50);
  ASSERT_TRUE(runUntil([&] { return !log.batches.empty() && log.batches.back().revision == last; }));
  ASSERT_EQ(log.batches.size(), 50u);
  EXPECT_EQ(log.batches.back().events[0].kv.value, values.back());
  RecordProperty("put_sequence_ms_per_put",
                 static_cast<int>(std::chrono::duration_cast<std::chrono::microseconds>(took).count() / 50 / 1000));
}

TEST_F(EtcdClientTest, AReplyArrivingByteByByteIsReadWhole) {
  // The head split over many reads: the parser's checks of it must see it whole.
  const std::string body =
      "{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"L2s=\",\"mod_revision\":\"3\","
      "\"value\":\"djI=\"}]}";
  char size[16];
  snprintf(size, sizeof size, "%zx", body.size());
  const std::string reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n" +
                            std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n";
  test::BlockingServer trickle(trickling(reply));
  auto& c = client({urlOfPort(trickle.port())});
  auto out = rangeOf(c, "/k");
  ASSERT_TRUE(out.reply) << out.error->message;
  ASSERT_TRUE(out.reply->kv);
  EXPECT_EQ(out.reply->kv->value, "v2");
}

TEST_F(EtcdClientTest, AWatchArrivingByteByByteIsReadWhole) {
  const std::string created = "{\"result\":{\"header\":{\"revision\":\"5\"},\"created\":true}}\n";
  const std::string event =
      "{\"result\":{\"header\":{\"revision\":\"6\"},\"events\":[{\"kv\":{\"key\":\"L2s=\","
      "\"mod_revision\":\"6\",\"value\":\"dg==\"}}]}}\n";
  auto chunk = [](const std::string& m) {
    char size[16];
    snprintf(size, sizeof size, "%zx\r\n", m.size());
    return size + m + "\r\n";
  };
  test::BlockingServer trickle(
      trickling("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(created) + chunk(event)));
  auto& c = client({urlOfPort(trickle.port())});
  WatchLog log;
  watchInto(c, "/k", 6, &log);
  ASSERT_TRUE(runUntil([&] { return !log.batches.empty() || log.end; }));
  EXPECT_TRUE(log.created);
  ASSERT_EQ(log.batches.size(), 1u);
  EXPECT_EQ(log.batches[0].events[0].kv.value, "v");
}

TEST_F(EtcdClientTest, CancelWatchCallsNoCallbackAgain) {
  auto& c = client();
  auto start = rangeOf(c, "/lb-test/watch-cancel");
  ASSERT_TRUE(start.reply);
  WatchLog log;
  watchInto(c, "/lb-test/watch-cancel", start.reply->revision + 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.created; }));
  c.cancelWatch();
  EXPECT_FALSE(c.watching());
  etcd_->put("/lb-test/watch-cancel", "unseen");
  // A range after the put answers after the watch would have delivered it.
  auto after = rangeOf(c, "/lb-test/watch-cancel");
  ASSERT_TRUE(after.reply);
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_TRUE(log.batches.empty());
  EXPECT_EQ(log.ends, 0);
}

TEST_F(EtcdClientTest, CloseWithARequestAndAWatchInFlightCallsNeither) {
  test::BlockingServer silent([](int fd) { test::BlockingServer::readToEof(fd); });
  auto& c = client({urlOfPort(silent.port()), etcd_->clientUrl()}, 5000ms);
  bool range_called = false;
  WatchLog log;
  c.useNextEndpoint();   // the watch on etcd, the range on the silent one
  watchInto(c, "/lb-test/close", etcd_->revision() + 1, &log);
  ASSERT_TRUE(runUntil([&] { return log.created || log.end; }));
  ASSERT_TRUE(log.created);
  c.useNextEndpoint();
  c.range("/lb-test/close", [&](const EtcdRangeReply*, const EtcdError*) { range_called = true; });
  uv_run(&loop_, UV_RUN_NOWAIT);
  closeClient();   // checks `closed` comes from the loop; TearDown checks no handle is left
  etcd_->put("/lb-test/close", "after");
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_FALSE(range_called);
  EXPECT_TRUE(log.batches.empty());
  EXPECT_EQ(log.ends, 0);
}

// Etcd processes of the test's own: a cluster of three, a member killed under a watch.
class EtcdClusterClientTest : public EtcdLoopTest {};

TEST_F(EtcdClusterClientTest, ARangeGoesOnToTheNextMemberWhenTheLeaderIsKilled) {
  test::EtcdCluster cluster(3);
  ASSERT_TRUE(cluster.ok()) << cluster.output();
  const int64_t rev = cluster.put("/lb-test/cluster", "v");
  ASSERT_GT(rev, 0);
  const auto leader = cluster.leader();
  ASSERT_TRUE(leader);
  // The leader first: the worst case, where the others must elect a new one before they
  // can answer a linearizable read.
  std::vector<std::string> urls = {cluster.clientUrl(*leader)};
  for (size_t i = 0; i < cluster.size(); ++i)
    if (i != *leader) urls.push_back(cluster.clientUrl(i));
  auto& c = clientOf(urls, 1000ms);
  cluster.kill(*leader);
  // Asked again at once after a failure, as the membership source would after its backoff:
  // while the election runs, a member may answer 503 "etcdserver: leader changed".
  const auto t0 = Clock::now();
  std::optional<EtcdRangeReply> reply;
  std::vector<std::string> errors;
  while (!reply && Clock::now() - t0 < 5s) {
    bool done = false;
    c.range("/lb-test/cluster", [&](const EtcdRangeReply* r, const EtcdError* e) {
      done = true;
      if (r != nullptr) reply = *r;
      if (e != nullptr) errors.push_back(e->endpoint + ": " + e->message);
    });
    ASSERT_TRUE(runUntil([&] { return done; }, 5s));
  }
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(reply) << ::testing::PrintToString(errors);
  ASSERT_TRUE(reply->kv);
  EXPECT_EQ(reply->kv->mod_revision, rev);
  EXPECT_NE(c.currentEndpoint().url, cluster.clientUrl(*leader));
  // A new leader in about a second at most (heartbeat 25 ms, election timeout 250 ms,
  // randomized by raft up to twice that, and a split vote now and then: 250-810 ms
  // measured on 2 busy cores), with room for a loaded machine.
  EXPECT_LT(took, 1500ms) << ::testing::PrintToString(errors);
  RecordProperty("range_after_leader_kill_ms",
                 static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  // The old leader comes back on its data directory and serves the same store.
  ASSERT_TRUE(cluster.restart(*leader)) << cluster.output();
}

TEST_F(EtcdClusterClientTest, AWatchEndsWithClosedWhenItsMemberIsKilled) {
  test::EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  auto& c = clientOf({etcd.clientUrl()}, 1000ms);
  bool created = false;
  std::optional<EtcdError> end;
  c.watch("/lb-test/killed", etcd.revision() + 1, [&] { created = true; },
          [](const EtcdWatchBatch&) {}, [&](const EtcdError& e) { end = e; });
  ASSERT_TRUE(runUntil([&] { return created || end; }, 5s));
  ASSERT_TRUE(created);
  etcd.kill();
  ASSERT_TRUE(runUntil([&] { return end.has_value(); }, 5s));
  EXPECT_EQ(end->kind, EtcdFailure::kClosed) << end->message;
  EXPECT_EQ(end->endpoint, etcd.clientUrl());
}

}  // namespace
}  // namespace lb
