// HTTP/2 clients that attack or do not follow RFC 9113, frame by frame
// (tests/support/h2_probe.py): each malformed request is refused as the RFC says and never
// reaches a backend; each flood or bomb ends its connection with GOAWAY ENHANCE_YOUR_CALM
// (or the RFC's error), is counted by reason in lb_h2_goaways_total, and leaves the other
// clients served.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/h2_fleet.h"

namespace lb::test {
namespace {

using nlohmann::json;

constexpr int kProtocolError = 1;
constexpr int kEnhanceYourCalm = 11;

class H2HostileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fleet_.ok()) << fleet_.output(); }

  json probe(const std::vector<std::string>& args) {
    auto r = fleet_.probe(fleet_.web(), args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out.empty() ? "{}" : r.out);
  }
  double goaways(const std::string& reason) {
    return fleet_.metric("lb_h2_goaways_total{listener=\"web\",reason=\"" + reason + "\"}");
  }
  // Another client, on its own connection, is served as before.
  void othersStillServed() {
    auto r = fleet_.probe(fleet_.web(), {"keys", "10"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["ended"], 10) << r.out;
  }

  H2Fleet fleet_;
};

// RFC 9113 §8.2.1, §8.2.2, §8.3, §8.1.1: each of these makes the request malformed, a stream
// error of type PROTOCOL_ERROR; none of it is forwarded.
class H2MalformedTest : public H2HostileTest,
                        public ::testing::WithParamInterface<const char*> {};

TEST_P(H2MalformedTest, IsResetWithProtocolErrorAndNeverForwarded) {
  const uint64_t before = fleet_.originRequests();
  json j = probe({"malformed", GetParam()});
  EXPECT_EQ(j["rst"]["1"], kProtocolError) << j.dump();
  EXPECT_TRUE(j["status"].empty()) << j.dump();
  EXPECT_TRUE(j["goaway_code"].is_null()) << j.dump();   // a stream error, not the connection's
  EXPECT_EQ(fleet_.originRequests(), before) << GetParam();
  othersStillServed();
}

INSTANTIATE_TEST_SUITE_P(Cases, H2MalformedTest,
                         ::testing::Values("uppercase", "connection", "transfer_encoding", "te",
                                           "pseudo_after", "no_path", "dup_method",
                                           "unknown_pseudo", "content_length"));

// CVE-2023-44487: streams opened and reset at once, as fast as the socket takes them. The
// connection ends within its bucket (2 x max_concurrent_streams), long before the 2 s are up,
// and the reset streams cost no backend a request: they are started only after the read
// that carried them, by which time they are gone.
TEST_F(H2HostileTest, RapidResetEndsWithEnhanceYourCalm) {
  const uint64_t before = fleet_.originRequests();
  json j = probe({"rapid_reset", "2"});
  EXPECT_EQ(j["goaway_code"], kEnhanceYourCalm) << j.dump();
  EXPECT_LE(j["streams"].get<int>(), 2000) << j.dump();
  EXPECT_EQ(goaways("rapid_reset"), 1);
  EXPECT_LT(fleet_.originRequests() - before, 200u);
  othersStillServed();
}

// CVE-2024-27316: a header block that never ends.
TEST_F(H2HostileTest, ContinuationFloodEndsWithEnhanceYourCalm) {
  json j = probe({"continuation", "5000"});
  EXPECT_EQ(j["goaway_code"], kEnhanceYourCalm) << j.dump();
  EXPECT_LT(j["sent"].get<int>(), 5000) << j.dump();
  EXPECT_EQ(goaways("continuation_flood"), 1);
  othersStillServed();
}

TEST_F(H2HostileTest, SettingsFloodEndsWithEnhanceYourCalm) {
  json j = probe({"settings", "100000"});
  EXPECT_EQ(j["goaway_code"], kEnhanceYourCalm) << j.dump();
  EXPECT_LT(j["sent"].get<int>(), 100000) << j.dump();
  EXPECT_EQ(goaways("settings_flood"), 1);
  othersStillServed();
}

TEST_F(H2HostileTest, PingFloodEndsWithEnhanceYourCalm) {
  json j = probe({"ping", "100000"});
  EXPECT_EQ(j["goaway_code"], kEnhanceYourCalm) << j.dump();
  EXPECT_LT(j["sent"].get<int>(), 100000) << j.dump();
  EXPECT_EQ(goaways("ping_flood"), 1);
  othersStillServed();
}

TEST_F(H2HostileTest, EmptyDataFramesEndWithEnhanceYourCalm) {
  json j = probe({"empty_data", "100000"});
  EXPECT_EQ(j["goaway_code"], kEnhanceYourCalm) << j.dump();
  EXPECT_LT(j["sent"].get<int>(), 100000) << j.dump();
  EXPECT_EQ(goaways("empty_frames"), 1);
  othersStillServed();
}

// A header block over h2.max_header_list (twenty 4000-byte fields) is answered 431; a client
// that keeps sending them loses the connection after the eighth.
TEST_F(H2HostileTest, HeaderBlocksOverTheLimitAre431ThenGoaway) {
  json one = probe({"hpack_bomb", "1", "20"});
  EXPECT_EQ(one["status"]["1"], 200) << one.dump();   // the honest first request
  EXPECT_EQ(one["status"]["3"], 431) << one.dump();
  EXPECT_TRUE(one["goaway_code"].is_null()) << one.dump();
  json many = probe({"hpack_bomb", "12", "20"});
  EXPECT_EQ(many["status"]["17"], 431) << many.dump();   // the eighth
  EXPECT_EQ(many["goaway_code"], kEnhanceYourCalm) << many.dump();
  EXPECT_EQ(goaways("header_list"), 1);
  othersStillServed();
}

// An HPACK bomb: a 4000-byte field named 2000 times from the dynamic table, about 8 MB
// decoded from a few KB sent. Past 16 x h2.max_header_list decoded the connection ends at
// once, before the rest of the block is decoded.
TEST_F(H2HostileTest, AnHpackBombEndsTheConnectionAtOnce) {
  json j = probe({"hpack_bomb", "5"});
  EXPECT_EQ(j["status"]["1"], 200) << j.dump();
  EXPECT_EQ(j["goaway_code"], kEnhanceYourCalm) << j.dump();
  EXPECT_EQ(j["goaway_last"], 3) << j.dump();   // the bomb's own stream, never answered
  EXPECT_TRUE(j["status"]["3"].is_null()) << j.dump();
  EXPECT_EQ(goaways("header_list"), 1);
  othersStillServed();
}

// A client that asks for a download with its windows shut and never opens them holds lb's
// bytes: past timeouts.idle (400 ms on this listener) with nothing moving, GOAWAY.
TEST_F(H2HostileTest, AWindowHeldShutIsAStall) {
  auto r = fleet_.probe(fleet_.shortIdle(), {"zero_window", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["goaway_code"], kEnhanceYourCalm) << j.dump();
  EXPECT_EQ(fleet_.metric("lb_h2_goaways_total{listener=\"short\",reason=\"stall\"}"), 1);
}

// 10,000 streams opened on a connection that allows 100 at once (and whose backend holds
// each for 3 s): the first past the limit is a PROTOCOL_ERROR (RFC 9113 §5.1.2; nghttp2 makes
// it the connection's once the client has acknowledged the limit), so the rest never open.
TEST_F(H2HostileTest, StreamsPastTheLimitEndTheConnection) {
  json j = probe({"past_max", "10000"});
  EXPECT_EQ(j["goaway_code"], kProtocolError) << j.dump();
  EXPECT_EQ(j["goaway_last"], 199) << j.dump();   // the 100th stream
  EXPECT_EQ(goaways("protocol_error"), 1);
  othersStillServed();
}

}  // namespace
}  // namespace lb::test
