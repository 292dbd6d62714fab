// lb::EtcdClient's sign-in to etcd (user and password for a token) against a scripted fake
// gateway, for what a real etcd does only at moments a test cannot choose: a token refused
// as invalid on the next request (expired, or a restarted member), twice in a row, and a
// sign-in refused while several requests wait for it. The integration tests
// (tests/integration/membership/membership_etcd_auth_test.cc) run the same against real etcd.
#include "lb/membership/etcd_client.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/tcp_test_servers.h"

namespace lb {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const char kPassword[] = "pa55-word";

std::string reply(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Error") +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::string etcdError(const std::string& text, int code) {
  return "{\"error\":\"" + text + "\",\"message\":\"" + text + "\",\"code\":" +
         std::to_string(code) + "}";
}

// What the fake gateway saw: each request's path and Authorization header ("" without one).
struct Seen {
  std::string path;
  std::string token;
  std::string body;
};

class FakeGateway {
 public:
  // `answer(seen so far, this request)` is the raw HTTP reply.
  using Answer = std::function<std::string(const std::vector<Seen>&, const Seen&)>;
  explicit FakeGateway(Answer answer)
      : answer_(std::move(answer)),
        server_(test::BlockingServer::answering([this](const std::string& request) {
          Seen s;
          const size_t sp = request.find(' ');
          s.path = request.substr(sp + 1, request.find(' ', sp + 1) - sp - 1);
          const size_t auth = request.find("\r\nAuthorization: ");
          if (auth != std::string::npos) {
            const size_t from = auth + 17;
            s.token = request.substr(from, request.find("\r\n", from) - from);
          }
          const size_t head_end = request.find("\r\n\r\n");
          if (head_end != std::string::npos) s.body = request.substr(head_end + 4);
          std::lock_guard<std::mutex> g(mu_);
          std::string r = answer_(seen_, s);
          seen_.push_back(s);
          return r;
        })) {}

  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> g(mu_);
    return seen_;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }

 private:
  Answer answer_;
  std::mutex mu_;
  std::vector<Seen> seen_;
  test::BlockingServer server_;
};

int countOf(const std::vector<Seen>& seen, const std::string& path) {
  int n = 0;
  for (const auto& s : seen) n += s.path == path;
  return n;
}

class EtcdClientAuthTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(uv_loop_init(&loop_), 0); }
  void TearDown() override {
    if (client_ != nullptr) {
      bool closed = false;
      client_->close([&] { closed = true; });
      EXPECT_TRUE(runUntil([&] { return closed; }));
      client_.reset();
    }
    uv_run(&loop_, UV_RUN_NOWAIT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  EtcdClient& clientOf(const std::string& url) {
    EtcdEndpoint ep;
    std::string error;
    EXPECT_TRUE(parseEtcdUrl(url, &ep, &error)) << error;
    EtcdCredentials credentials;
    credentials.user = "lb";
    credentials.password = kPassword;
    client_ = std::make_unique<EtcdClient>(&loop_, std::vector<EtcdEndpoint>{ep},
                                           Duration{2000}, std::move(credentials));
    return *client_;
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

  struct Outcome {
    bool done = false;
    std::optional<EtcdRangeReply> reply;
    std::optional<EtcdError> error;
  };
  void rangeInto(EtcdClient& c, Outcome* out) {
    c.range("/k", [out](const EtcdRangeReply* r, const EtcdError* e) {
      out->done = true;
      if (r != nullptr) out->reply = *r;
      if (e != nullptr) out->error = *e;
    });
  }

  uv_loop_t loop_;
  std::unique_ptr<EtcdClient> client_;
};

const std::string kRangeReply = reply(200, "{\"header\":{\"revision\":\"5\"}}");
const std::string kInvalidToken = reply(401, etcdError("etcdserver: invalid auth token", 16));

TEST_F(EtcdClientAuthTest, SignsInFirstAndSendsTheTokenWithTheRequest) {
  FakeGateway etcd([](const std::vector<Seen>&, const Seen& s) {
    if (s.path == "/v3/auth/authenticate") return reply(200, "{\"header\":{},\"token\":\"t1\"}");
    return kRangeReply;
  });
  Outcome out;
  rangeInto(clientOf(etcd.url()), &out);
  ASSERT_TRUE(runUntil([&] { return out.done; }));
  ASSERT_TRUE(out.reply) << out.error->message;
  EXPECT_EQ(out.reply->revision, 5);
  const auto seen = etcd.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].path, "/v3/auth/authenticate");
  EXPECT_EQ(seen[0].token, "");
  EXPECT_EQ(seen[0].body, std::string("{\"name\":\"lb\",\"password\":\"") + kPassword + "\"}");
  EXPECT_EQ(seen[1].path, "/v3/kv/range");
  EXPECT_EQ(seen[1].token, "t1");
}

TEST_F(EtcdClientAuthTest, ATokenRefusedAsInvalidSignsInAgainOnceAndSendsTheRequestAgain) {
  FakeGateway etcd([](const std::vector<Seen>& before, const Seen& s) {
    if (s.path == "/v3/auth/authenticate") {
      const int n = countOf(before, s.path) + 1;
      return reply(200, "{\"header\":{},\"token\":\"t" + std::to_string(n) + "\"}");
    }
    return s.token == "t1" ? kInvalidToken : kRangeReply;
  });
  Outcome out;
  rangeInto(clientOf(etcd.url()), &out);
  ASSERT_TRUE(runUntil([&] { return out.done; }));
  ASSERT_TRUE(out.reply) << out.error->message;
  const auto seen = etcd.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[1].token, "t1");
  EXPECT_EQ(seen[2].path, "/v3/auth/authenticate");
  EXPECT_EQ(seen[3].path, "/v3/kv/range");
  EXPECT_EQ(seen[3].token, "t2");
}

TEST_F(EtcdClientAuthTest, ATokenRefusedTwiceFailsTheRequestWithoutLooping) {
  FakeGateway etcd([](const std::vector<Seen>&, const Seen& s) {
    if (s.path == "/v3/auth/authenticate") return reply(200, "{\"header\":{},\"token\":\"t\"}");
    return kInvalidToken;
  });
  Outcome out;
  rangeInto(clientOf(etcd.url()), &out);
  ASSERT_TRUE(runUntil([&] { return out.done; }));
  ASSERT_TRUE(out.error);
  EXPECT_EQ(out.error->kind, EtcdFailure::kHttpStatus);
  EXPECT_EQ(out.error->http_status, 401);
  EXPECT_NE(out.error->message.find("invalid auth token"), std::string::npos);
  const auto seen = etcd.seen();
  EXPECT_EQ(countOf(seen, "/v3/auth/authenticate"), 2);
  EXPECT_EQ(countOf(seen, "/v3/kv/range"), 2);
}

TEST_F(EtcdClientAuthTest, ARefusedSignInFailsEveryWaitingRequestOnceWithoutThePassword) {
  FakeGateway etcd([](const std::vector<Seen>&, const Seen&) {
    return reply(400, etcdError("etcdserver: authentication failed, invalid user ID or password",
                                3));
  });
  EtcdClient& c = clientOf(etcd.url());
  Outcome a, b;
  rangeInto(c, &a);
  rangeInto(c, &b);
  ASSERT_TRUE(runUntil([&] { return a.done && b.done; }));
  for (const Outcome* o : {&a, &b}) {
    ASSERT_TRUE(o->error);
    EXPECT_EQ(o->error->message,
              "authentication as user 'lb' failed: status 400: etcdserver: authentication "
              "failed, invalid user ID or password");
    EXPECT_EQ(o->error->message.find(kPassword), std::string::npos);
  }
  // One sign-in for both; neither request was sent without a token.
  const auto seen = etcd.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v3/auth/authenticate");
}

}  // namespace
}  // namespace lb
