// The etcd gateway's JSON apart from any socket: client URLs, and the strict readers fed the
// exact replies etcd 3.4.23 sent (copied from curl against a real server; see the top of
// lb/membership/etcd_client.h) and variations etcd never sends, which must be errors.
#include "lb/membership/etcd_json.h"

#include <gtest/gtest.h>

#include <string>

#include "lb/core/base64.h"
#include "lb/membership/etcd_client.h"

namespace lb {
namespace {

using namespace etcd_json;

TEST(EtcdUrlTest, ReadsHostAndPort) {
  EtcdEndpoint ep;
  std::string error;
  ASSERT_TRUE(parseEtcdUrl("http://127.0.0.1:2379", &ep, &error)) << error;
  EXPECT_EQ(ep.host, "127.0.0.1");
  EXPECT_EQ(ep.port, 2379);
  EXPECT_EQ(ep.url, "http://127.0.0.1:2379");
  EXPECT_EQ(ep.address.ss_family, AF_INET);
}

TEST(EtcdUrlTest, TakesATrailingSlashIpv6AndEtcdsDefaultPort) {
  EtcdEndpoint ep;
  std::string error;
  ASSERT_TRUE(parseEtcdUrl("http://10.0.0.1:22379/", &ep, &error)) << error;
  EXPECT_EQ(ep.url, "http://10.0.0.1:22379");
  ASSERT_TRUE(parseEtcdUrl("http://[::1]:2379", &ep, &error)) << error;
  EXPECT_EQ(ep.host, "::1");
  EXPECT_EQ(ep.address.ss_family, AF_INET6);
  ASSERT_TRUE(parseEtcdUrl("http://10.0.0.2", &ep, &error)) << error;
  EXPECT_EQ(ep.port, 2379);
  ASSERT_TRUE(parseEtcdUrl("http://[::1]", &ep, &error)) << error;
  EXPECT_EQ(ep.port, 2379);
}

TEST(EtcdUrlTest, TakesHttpsWithItsPort) {
  EtcdEndpoint ep;
  std::string error;
  ASSERT_TRUE(parseEtcdUrl("https://127.0.0.1:2380/", &ep, &error)) << error;
  EXPECT_TRUE(ep.tls);
  EXPECT_EQ(ep.port, 2380);
  EXPECT_EQ(ep.url, "https://127.0.0.1:2380");
  ASSERT_TRUE(parseEtcdUrl("https://10.0.0.2", &ep, &error)) << error;
  EXPECT_EQ(ep.port, 2379);
  ASSERT_TRUE(parseEtcdUrl("http://10.0.0.2", &ep, &error)) << error;
  EXPECT_FALSE(ep.tls);
}

TEST(EtcdJsonTest, AuthenticateRequestAndTokenReply) {
  EXPECT_EQ(etcd_json::authenticateRequest("lb", "p\"w"),
            "{\"name\":\"lb\",\"password\":\"p\\\"w\"}");
  std::string token, error;
  ASSERT_TRUE(etcd_json::readAuthToken(
      R"({"header":{"cluster_id":"1","member_id":"2","revision":"3","raft_term":"2"},)"
      R"("token":"oQjmxpkTaDDStMfZ.9"})",
      &token, &error))
      << error;
  EXPECT_EQ(token, "oQjmxpkTaDDStMfZ.9");
  EXPECT_FALSE(etcd_json::readAuthToken(R"({"header":{}})", &token, &error));
  // A token is sent as a header line as it is: nothing that could end the line.
  EXPECT_FALSE(etcd_json::readAuthToken(R"({"token":"a\r\nX-Evil: 1"})", &token, &error));
  EXPECT_TRUE(etcd_json::tokenRejected(401, ""));
  EXPECT_TRUE(etcd_json::tokenRejected(400, "status 400: etcdserver: invalid auth token"));
  EXPECT_FALSE(etcd_json::tokenRejected(
      400, "status 400: etcdserver: authentication failed, invalid user ID or password"));
}

TEST(EtcdUrlTest, RefusesWhatIsNotSchemeHostAndPort) {
  for (const char* bad : {"127.0.0.1:2379", "http://", "http://127.0.0.1:2379/v3",
                          "http://u@127.0.0.1:2379", "http://127.0.0.1:0", "http://127.0.0.1:x",
                          "http://etcd-0.internal:2379", "http://127.0.0.1:2379?a", "ftp://1.2.3.4"}) {
    EtcdEndpoint ep;
    std::string error;
    EXPECT_FALSE(parseEtcdUrl(bad, &ep, &error)) << bad;
    EXPECT_NE(error.find(bad), std::string::npos) << "the message quotes the URL: " << error;
  }
}

TEST(EtcdJsonTest, RequestsCarryBase64AndInt64AsStrings) {
  EXPECT_EQ(rangeRequest("/k"), "{\"key\":\"L2s=\"}");
  EXPECT_EQ(watchCreateRequest("/k", 12),
            "{\"create_request\":{\"key\":\"L2s=\",\"start_revision\":\"12\"}}");
  EXPECT_EQ(compactRequest(7), "{\"physical\":true,\"revision\":\"7\"}");
  EXPECT_EQ(txnPutIfModRevision("/k", "v", 0),
            "{\"compare\":[{\"key\":\"L2s=\",\"mod_revision\":\"0\",\"result\":\"EQUAL\","
            "\"target\":\"MOD\"}],\"failure\":[{\"request_range\":{\"key\":\"L2s=\"}}],"
            "\"success\":[{\"request_put\":{\"key\":\"L2s=\",\"value\":\"dg==\"}}]}");
}

// What etcd 3.4.23 answered to a range of an absent key.
constexpr const char* kRangeAbsent =
    R"({"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"1","raft_term":"2"}})";
// ... and of a key (value "v2").
constexpr const char* kRangeKey =
    R"({"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"3","raft_term":"2"},"kvs":[{"key":"L2s=","create_revision":"2","mod_revision":"3","version":"2","value":"djI="}],"count":"1"})";

TEST(EtcdJsonTest, ReadsARangeOfAnAbsentKey) {
  EtcdRangeReply r;
  std::string error;
  ASSERT_TRUE(readRange(kRangeAbsent, "/k", &r, &error)) << error;
  EXPECT_EQ(r.revision, 1);
  EXPECT_FALSE(r.kv);
}

TEST(EtcdJsonTest, ReadsARangeOfAKey) {
  EtcdRangeReply r;
  std::string error;
  ASSERT_TRUE(readRange(kRangeKey, "/k", &r, &error)) << error;
  EXPECT_EQ(r.revision, 3);
  ASSERT_TRUE(r.kv);
  EXPECT_EQ(r.kv->value, "v2");
  EXPECT_EQ(r.kv->create_revision, 2);
  EXPECT_EQ(r.kv->mod_revision, 3);
  EXPECT_EQ(r.kv->version, 2);
}

TEST(EtcdJsonTest, ARangeReplyMissingWhatTheContractNeedsIsAnError) {
  EtcdRangeReply r;
  std::string error;
  for (const char* bad : {
           "", "null", "[]", "{}", R"({"header":{}})", R"({"header":{"revision":"x"}})",
           R"({"header":{"revision":"99999999999999999999"}})",
           R"({"header":{"revision":3.5}})",
           R"({"header":{"revision":"3"},"kvs":{}})",
           R"({"header":{"revision":"3"},"kvs":[{"key":"L2s=","value":"djE="}]})",   // no mod_revision
           R"({"header":{"revision":"3"},"kvs":[{"key":"L2o=","mod_revision":"3"}]})",   // another key
           R"({"header":{"revision":"3"},"kvs":[{"key":"L2s=","mod_revision":"3","value":"dj"}]})",
           R"({"header":{"revision":"3"},"kvs":[{"key":"L2s=","mod_revision":"3"},{"key":"L2s=","mod_revision":"3"}]})",
           R"({"header":{"revision":"3"}} trailing)"}) {
    EXPECT_FALSE(readRange(bad, "/k", &r, &error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

TEST(EtcdJsonTest, ReadsATxnThatSucceeded) {
  EtcdTxnReply t;
  std::string error;
  ASSERT_TRUE(readTxn(
      R"({"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"4","raft_term":"2"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"4"}}}]})",
      "/k", &t, &error))
      << error;
  EXPECT_TRUE(t.succeeded);
  EXPECT_EQ(t.revision, 4);
  EXPECT_FALSE(t.current);
}

TEST(EtcdJsonTest, ReadsATxnThatFailedWithTheCurrentKey) {
  EtcdTxnReply t;
  std::string error;
  ASSERT_TRUE(readTxn(
      R"({"header":{"revision":"9"},"responses":[{"response_range":{"header":{"revision":"9"},"kvs":[{"key":"L2s=","create_revision":"4","mod_revision":"8","version":"3","value":"dHdv"}],"count":"1"}}]})",
      "/k", &t, &error))
      << error;
  EXPECT_FALSE(t.succeeded);
  ASSERT_TRUE(t.current);
  EXPECT_EQ(t.current->value, "two");
  EXPECT_EQ(t.current->mod_revision, 8);
}

TEST(EtcdJsonTest, ReadsATxnThatFailedOnAnAbsentKey) {
  EtcdTxnReply t;
  std::string error;
  ASSERT_TRUE(readTxn(
      R"({"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"5","raft_term":"2"},"responses":[{"response_range":{"header":{"revision":"5"}}}]})",
      "/x", &t, &error))
      << error;
  EXPECT_FALSE(t.succeeded);
  EXPECT_FALSE(t.current);
}

TEST(EtcdJsonTest, ATxnThatFailedWithoutItsRangeIsAnError) {
  EtcdTxnReply t;
  std::string error;
  EXPECT_FALSE(readTxn(R"({"header":{"revision":"9"}})", "/k", &t, &error));
  EXPECT_FALSE(readTxn(R"({"header":{"revision":"9"},"succeeded":"yes"})", "/k", &t, &error));
}

TEST(EtcdJsonTest, ReadsWatchMessages) {
  WatchMessage m;
  std::string error;
  ASSERT_TRUE(readWatchMessage(
      R"({"result":{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"6","raft_term":"2"},"created":true}})",
      "/k", &m, &error))
      << error;
  EXPECT_TRUE(m.created);
  EXPECT_TRUE(m.events.empty());
  ASSERT_TRUE(readWatchMessage(
      R"({"result":{"header":{"revision":"7"},"events":[{"kv":{"key":"L2s=","create_revision":"6","mod_revision":"6","version":"1","value":"YQ=="}},{"type":"DELETE","kv":{"key":"L2s=","mod_revision":"7"}}]}})",
      "/k", &m, &error))
      << error;
  ASSERT_EQ(m.events.size(), 2u);
  EXPECT_FALSE(m.events[0].deleted);
  EXPECT_EQ(m.events[0].kv.value, "a");
  EXPECT_TRUE(m.events[1].deleted);
  EXPECT_EQ(m.events[1].kv.mod_revision, 7);
}

TEST(EtcdJsonTest, ReadsTheCompactionCancelWhoseHeaderHasNoRevision) {
  WatchMessage m;
  std::string error;
  ASSERT_TRUE(readWatchMessage(
      R"({"result":{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","raft_term":"2"},"canceled":true,"compact_revision":"3"}})",
      "/k", &m, &error))
      << error;
  EXPECT_TRUE(m.canceled);
  EXPECT_EQ(m.compact_revision, 3);
  EXPECT_EQ(m.revision, 0);
}

TEST(EtcdJsonTest, EventsWithoutAHeaderRevisionAreAnError) {
  WatchMessage m;
  std::string error;
  EXPECT_FALSE(readWatchMessage(
      R"({"result":{"header":{},"events":[{"kv":{"key":"L2s=","mod_revision":"5"}}]}})", "/k", &m,
      &error));
}

TEST(EtcdJsonTest, AWatchMessageEtcdNeverSendsIsAnError) {
  WatchMessage m;
  std::string error;
  for (const char* bad : {
           "{", R"({"result":{}})", R"({"result":{"header":{"revision":"5"},"events":{}}})",
           R"({"result":{"header":{"revision":"5"},"events":[{"type":"PATCH","kv":{"key":"L2s=","mod_revision":"5"}}]}})",
           R"({"result":{"header":{"revision":"5"},"events":[{"kv":{"key":"L2o=","mod_revision":"5"}}]}})",
           R"({"result":{"header":{"revision":"5"},"fragment":true}})"}) {
    EXPECT_FALSE(readWatchMessage(bad, "/k", &m, &error)) << bad;
  }
}

TEST(EtcdJsonTest, AStreamErrorIsReadAsSuch) {
  WatchMessage m;
  std::string error;
  ASSERT_TRUE(readWatchMessage(
      R"({"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable"}})",
      "/k", &m, &error));
  EXPECT_TRUE(m.stream_error);
  EXPECT_EQ(m.error_text, "etcdserver: no leader");
}

TEST(EtcdJsonTest, ErrorTextIsEtcdsMessage) {
  EXPECT_EQ(errorText(R"({"error":"etcdserver: mvcc: required revision is a future revision","message":"etcdserver: mvcc: required revision is a future revision","code":11})"),
            "etcdserver: mvcc: required revision is a future revision");
  EXPECT_EQ(errorText("<html>\x01"), "<html>?");
}

}  // namespace
}  // namespace lb
