// What each check type sends and which replies pass, fed byte by byte and whole: the HTTP
// check reads only the status of the head (through lb's HttpParser), Redis wants +PONG,
// memcached a VERSION line.
#include "lb/health/check_reply.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>

namespace lb {
namespace {

using Verdict = CheckReply::Verdict;

CheckSpec spec(HealthCheckType type, uint32_t expect = 200, std::string path = "/healthz",
               std::string_view password = {}) {
  HealthConfig h;
  h.type = type;
  h.expect = expect;
  h.path = std::move(path);
  return checkSpecOf(h, "127.0.0.1:9001", password);
}

CheckSpec redisWithPassword(std::string_view password = "s3cret") {
  return spec(HealthCheckType::kRedis, 200, "/", password);
}

// Feeds `reply` in pieces of `step` bytes; the first verdict that is not kNeedMore.
Verdict feed(CheckReply& r, const std::string& reply, size_t step) {
  for (size_t at = 0; at < reply.size(); at += step) {
    const size_t n = std::min(step, reply.size() - at);
    if (n > r.spaceLeft()) return Verdict::kNeedMore;
    memcpy(r.space(), reply.data() + at, n);
    Verdict v = r.received(n);
    if (v != Verdict::kNeedMore) return v;
  }
  return Verdict::kNeedMore;
}

TEST(CheckSpecTest, RequestsPerType) {
  EXPECT_EQ(spec(HealthCheckType::kHttp).request,
            "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:9001\r\nUser-Agent: lb-health-check\r\n"
            "Accept: */*\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(spec(HealthCheckType::kRedis).request, "*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(spec(HealthCheckType::kMemcached).request, "version\r\n");
  EXPECT_EQ(spec(HealthCheckType::kTcp).request, "");
  EXPECT_EQ(spec(HealthCheckType::kHttp), spec(HealthCheckType::kHttp));
  EXPECT_FALSE(spec(HealthCheckType::kHttp) == spec(HealthCheckType::kHttp, 204));
}

TEST(CheckReplyTest, HttpPassesOnTheExpectedStatusWhateverTheSplit) {
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: b\r\n\r\nok\n";
  for (size_t step : {1u, 2u, 7u, 1000u}) {
    CheckSpec s = spec(HealthCheckType::kHttp);
    CheckReply r(s);
    EXPECT_EQ(feed(r, ok, step), Verdict::kPass) << step;
    EXPECT_EQ(r.detail(), "status 200");
  }
}

TEST(CheckReplyTest, HttpFailsOnAnotherStatus) {
  CheckSpec s = spec(HealthCheckType::kHttp);
  CheckReply r(s);
  EXPECT_EQ(feed(r, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", 5),
            Verdict::kFail);
  EXPECT_EQ(r.detail(), "status 503, expected 200");
  CheckSpec s204 = spec(HealthCheckType::kHttp, 204);
  CheckReply r204(s204);
  EXPECT_EQ(feed(r204, "HTTP/1.1 204 No Content\r\n\r\n", 100), Verdict::kPass);
}

TEST(CheckReplyTest, HttpSkipsAnInterimResponse) {
  CheckSpec s = spec(HealthCheckType::kHttp);
  CheckReply r(s);
  EXPECT_EQ(feed(r, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                 1000),
            Verdict::kPass);
}

TEST(CheckReplyTest, HttpFailsOnGarbageAndOnAnEarlyClose) {
  CheckSpec s = spec(HealthCheckType::kHttp);
  CheckReply r(s);
  EXPECT_EQ(feed(r, "+PONG\r\n", 100), Verdict::kFail);
  EXPECT_EQ(r.detail().rfind("malformed response", 0), 0u) << r.detail();
  CheckReply early(s);
  EXPECT_EQ(feed(early, "HTTP/1.1 200", 100), Verdict::kNeedMore);
  EXPECT_EQ(early.closed(), Verdict::kFail);
  CheckReply none(s);
  EXPECT_EQ(none.closed(), Verdict::kFail);
  EXPECT_EQ(none.detail(), "closed without a reply");
}

TEST(CheckReplyTest, HttpHeadsLongerThanTheBufferFail) {
  CheckSpec s = spec(HealthCheckType::kHttp);
  CheckReply r(s);
  std::string head = "HTTP/1.1 200 OK\r\nX-Long: " + std::string(CheckReply::kMaxReply, 'a');
  EXPECT_EQ(feed(r, head, 4096), Verdict::kFail);
  EXPECT_EQ(r.detail(), "a response head longer than 16 KiB");
}

TEST(CheckReplyTest, RedisWantsPong) {
  CheckSpec s = spec(HealthCheckType::kRedis);
  CheckReply ok(s);
  EXPECT_EQ(feed(ok, "+PONG\r\n", 1), Verdict::kPass);
  CheckReply loading(s);
  EXPECT_EQ(feed(loading, "-LOADING Redis is loading the dataset in memory\r\n", 3),
            Verdict::kFail);
  EXPECT_EQ(loading.detail(),
            "reply '-LOADING Redis is loading the dataset in memory', expected +PONG");
}

// Redis server.c processCommand: with requirepass and no AUTH every command is -NOAUTH.
TEST(CheckReplyTest, RedisNoauthSaysTheServerWantsAPassword) {
  CheckSpec s = spec(HealthCheckType::kRedis);
  CheckReply r(s);
  EXPECT_EQ(feed(r, "-NOAUTH Authentication required.\r\n", 100), Verdict::kFail);
  EXPECT_EQ(r.detail(),
            "redis PING refused: -NOAUTH Authentication required. (the server wants a "
            "password; the cluster has none)");
}

TEST(CheckSpecTest, RedisWithAPasswordPipelinesAuthBeforePing) {
  CheckSpec s = redisWithPassword();
  EXPECT_TRUE(s.auth);
  EXPECT_EQ(s.request, "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n*1\r\n$4\r\nPING\r\n");
  EXPECT_FALSE(spec(HealthCheckType::kRedis).auth);
  // A new password is a new check (the checker restarts with it).
  EXPECT_FALSE(redisWithPassword("a") == redisWithPassword("b"));
  // Only redis checks authenticate.
  EXPECT_EQ(spec(HealthCheckType::kMemcached, 200, "/", "s3cret").request, "version\r\n");
  EXPECT_FALSE(spec(HealthCheckType::kTcp, 200, "/", "s3cret").auth);
}

TEST(CheckReplyTest, RedisAuthOkThenPongPassesWhateverTheSplit) {
  for (size_t step : {1u, 2u, 5u, 6u, 100u}) {
    CheckSpec s = redisWithPassword();
    CheckReply r(s);
    EXPECT_EQ(feed(r, "+OK\r\n+PONG\r\n", step), Verdict::kPass) << step;
    EXPECT_EQ(r.detail(), "+PONG");
  }
}

TEST(CheckReplyTest, RedisAuthOkAloneIsNotAVerdict) {
  CheckSpec s = redisWithPassword();
  CheckReply r(s);
  EXPECT_EQ(feed(r, "+OK\r\n", 100), Verdict::kNeedMore);
  EXPECT_EQ(r.closed(), Verdict::kFail);
}

// Redis 7 acl.c: a wrong password is -WRONGPASS; the PING after it is -NOAUTH, never read.
TEST(CheckReplyTest, RedisRefusedAuthIsReportedAsTheAuthFailing) {
  CheckSpec s = redisWithPassword();
  CheckReply r(s);
  EXPECT_EQ(feed(r,
                 "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                 "-NOAUTH Authentication required.\r\n",
                 7),
            Verdict::kFail);
  EXPECT_EQ(r.detail(),
            "redis AUTH failed: -WRONGPASS invalid username-password pair or user is disabled.");
}

TEST(CheckReplyTest, RedisAuthToAServerWithoutAPasswordFails) {
  CheckSpec s = redisWithPassword();
  CheckReply r(s);
  EXPECT_EQ(feed(r, "-ERR AUTH <password> called without any password configured\r\n+PONG\r\n",
                 100),
            Verdict::kFail);
  EXPECT_EQ(r.detail(),
            "redis AUTH failed: -ERR AUTH <password> called without any password configured");
}

TEST(CheckReplyTest, RedisPingErrorAfterAGoodAuthIsThePingsFailure) {
  CheckSpec s = redisWithPassword();
  CheckReply r(s);
  EXPECT_EQ(feed(r, "+OK\r\n-LOADING Redis is loading the dataset in memory\r\n", 3),
            Verdict::kFail);
  EXPECT_EQ(r.detail(),
            "reply '-LOADING Redis is loading the dataset in memory', expected +PONG");
}

TEST(CheckReplyTest, MemcachedWantsAVersionLine) {
  CheckSpec s = spec(HealthCheckType::kMemcached);
  CheckReply ok(s);
  EXPECT_EQ(feed(ok, "VERSION 1.6.18\r\n", 4), Verdict::kPass);
  EXPECT_EQ(ok.detail(), "VERSION 1.6.18");
  CheckReply bad(s);
  EXPECT_EQ(feed(bad, "SERVER_ERROR out of memory\r\n", 100), Verdict::kFail);
  EXPECT_EQ(bad.detail(), "reply 'SERVER_ERROR out of memory', expected VERSION");
}

// With identity (a cluster with a handover): redis sends INFO server after PING and names the
// process by its run_id; memcached sends stats and names it by pid and start time.
CheckSpec identified(HealthCheckType type) {
  HealthConfig h;
  h.type = type;
  return checkSpecOf(h, "127.0.0.1:9001", {}, true);
}

TEST(CheckSpecTest, WithIdentityRedisAsksInfoAndMemcachedStats) {
  EXPECT_EQ(identified(HealthCheckType::kRedis).request,
            "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n");
  EXPECT_EQ(identified(HealthCheckType::kMemcached).request, "stats\r\n");
}

TEST(CheckReplyTest, RedisWithIdentityReadsTheRunIdWhateverTheSplit) {
  const std::string info = "# Server\r\nredis_version:7.0.15\r\nrun_id:4f1c0ffee\r\ntcp_port:6379\r\n";
  const std::string reply = "+PONG\r\n$" + std::to_string(info.size()) + "\r\n" + info + "\r\n";
  for (size_t step : {size_t{1}, size_t{7}, reply.size()}) {
    CheckReply r(identified(HealthCheckType::kRedis));
    EXPECT_EQ(feed(r, reply, step), Verdict::kPass) << step;
    EXPECT_EQ(r.identity(), "run_id 4f1c0ffee") << step;
  }
  // PONG alone is not yet a verdict: INFO's reply is due.
  CheckReply waiting(identified(HealthCheckType::kRedis));
  EXPECT_EQ(feed(waiting, "+PONG\r\n", 100), Verdict::kNeedMore);
  // INFO refused (an ACL, a renamed command): PING said it is up; no identity.
  CheckReply refused(identified(HealthCheckType::kRedis));
  EXPECT_EQ(feed(refused, "+PONG\r\n-NOPERM no permissions\r\n", 100), Verdict::kPass);
  EXPECT_EQ(refused.identity(), "");
}

TEST(CheckReplyTest, MemcachedWithIdentityReadsPidAndStartFromStats) {
  const std::string stats =
      "STAT pid 4242\r\nSTAT uptime 30\r\nSTAT time 1700000030\r\nSTAT version 1.6.18\r\n"
      "END\r\n";
  for (size_t step : {size_t{1}, size_t{5}, stats.size()}) {
    CheckReply r(identified(HealthCheckType::kMemcached));
    EXPECT_EQ(feed(r, stats, step), Verdict::kPass) << step;
    EXPECT_EQ(r.identity(), "pid 4242 started 1700000000") << step;
  }
  CheckReply wrong(identified(HealthCheckType::kMemcached));
  EXPECT_EQ(feed(wrong, "ERROR\r\n", 100), Verdict::kFail);
  EXPECT_EQ(wrong.detail(), "reply 'ERROR', expected STAT");
}

TEST(CheckReplyTest, UnprintableBytesAreNotLoggedAsTheyAre) {
  CheckSpec s = spec(HealthCheckType::kRedis);
  CheckReply r(s);
  EXPECT_EQ(feed(r, std::string("-\x1b[31mX\r\n"), 100), Verdict::kFail);
  EXPECT_EQ(r.detail(), "reply '-?[31mX', expected +PONG");
}

}  // namespace
}  // namespace lb
