// Active HTTP checks against real lb-origin backends, one of them frozen with SIGSTOP (the
// kernel still accepts its connections; nothing answers):
//  - it is marked down within fall x interval + timeout, its keys go to the next hosts of
//    their own orders without waiting on it (a request already waiting on it included), no
//    other key moves, and after SIGCONT it is up after `rise` checks with every key back;
//  - flapping every 300 ms under rise 2 / fall 3 (interval 200 ms, timeout 100 ms), it is
//    never taken down: a down needs 3 failed checks in a row, whose starts are at least
//    2 x 175 ms apart and the last of which must see 100 ms of silence, so only a freeze of
//    450 ms or more can take it down. The test measures every freeze it makes and allows
//    one down and one up per freeze that long (none is expected); no key of another backend
//    moves meanwhile.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "tests/support/health_harness.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

constexpr int kKeys = 120;
constexpr int kIntervalMs = 200, kTimeoutMs = 100, kRise = 2, kFall = 3;
// fall x interval + timeout: the longest a frozen backend stays up.
constexpr double kDetectMs = kFall * kIntervalMs + kTimeoutMs;
// What the machine may add on top of it: the admin poll, two event loops and a busy CI box.
constexpr double kSlackMs = 1000;

std::string keyName(int i) { return "user:" + std::to_string(i); }

class HealthHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(startKeyedFleet(
                  h_, "timeouts = { connect = \"1s\", idle = \"30s\" }\n"
                      "[clusters.c]\nselector = \"ring_hash\"\nretries = 3\n"
                      "health = { type = \"http\", path = \"/health\", interval = \"" +
                          std::to_string(kIntervalMs) + "ms\", timeout = \"" +
                          std::to_string(kTimeoutMs) + "ms\", rise = " + std::to_string(kRise) +
                          ", fall = " + std::to_string(kFall) + " }\n"),
              "");
    // Every backend has been checked once: the checkers run.
    for (const char* n : {"a", "b", "c", "d"})
      ASSERT_TRUE(waitUntil([&] { return backendHealth(h_.adminPort(), "c", n).checked; }, 5s))
          << n << "\n" << h_.lb().output();
    for (int i = 0; i < kKeys; ++i) {
      orders_[keyName(i)] = ringOrder(h_.adminPort(), "c", keyName(i));
      ASSERT_EQ(orders_[keyName(i)].size(), 4u);
    }
  }

  // The first host of the key's order that is not `down`.
  std::string expected(const std::string& key, const std::string& down) {
    for (const auto& b : orders_[key])
      if (b != down) return b;
    return "";
  }

  // The backend that answers each key now, each request on a fresh connection with a 2 s
  // deadline (lb's own idle timeout is 30 s: a request that waited on a frozen backend
  // would fail here).
  std::map<std::string, std::string> whereKeysGo() {
    std::map<std::string, std::string> out;
    TcpClient c;
    if (!c.connect(h_.port())) return out;
    for (int i = 0; i < kKeys; ++i) {
      const std::string k = keyName(i);
      if (!c.send(httpRequest("GET", "/", "x-key: " + k + "\r\n"))) break;
      auto r = readHttpResponse(c, false, 2s);
      out[k] = r.ok && r.status == 200 ? r.header("x-backend").value_or("?") : "(failed)";
    }
    return out;
  }

  ProxyHarness h_;
  std::map<std::string, std::vector<std::string>> orders_;
};

TEST_F(HealthHttpTest, AFrozenBackendIsDownWithinFallTimesIntervalAndOnlyItsKeysMove) {
  auto before = whereKeysGo();
  int owned_by_b = 0;
  for (const auto& [k, b] : before) {
    ASSERT_EQ(b, orders_[k][0]) << k;
    owned_by_b += b == "b";
  }
  ASSERT_GT(owned_by_b, 0);
  std::string b_key;
  for (const auto& [k, b] : before)
    if (b == "b") b_key = k;

  ThawOnExit thaw_b(h_.origin("b"));
  freeze(h_.origin("b"));
  const auto t0 = Clock::now();
  // A request for one of b's keys, sent after the freeze: lb still thinks b is up and sends
  // it there, where nothing answers.
  TcpClient waiting;
  ASSERT_TRUE(waiting.connect(h_.port()));
  ASSERT_TRUE(waiting.send(httpRequest("GET", "/", "x-key: " + b_key + "\r\n")));

  ASSERT_TRUE(waitUntil([&] { return !backendHealth(h_.adminPort(), "c", "b").healthy; }, 10s))
      << h_.lb().output();
  const double detected_ms = msSince(t0);
  EXPECT_LE(detected_ms, kDetectMs + kSlackMs);
  RecordProperty("detection_ms", static_cast<int>(detected_ms));
  auto view = backendHealth(h_.adminPort(), "c", "b");
  EXPECT_EQ(view.health, "down");
  EXPECT_EQ(view.reason, "3 checks timed out after 100ms");
  EXPECT_NE(h_.lb().output().find("backend b down: 3 checks timed out after 100ms (cluster c)"),
            std::string::npos)
      << h_.lb().output();

  // The request that was waiting on b moved on to the key's next host once b went down.
  auto r = readHttpResponse(waiting, false, 5s);
  const double waited_ms = msSince(t0);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("x-backend").value_or(""), expected(b_key, "b"));
  EXPECT_LE(waited_ms, kDetectMs + kSlackMs) << "it waited for its timeout instead";
  RecordProperty("waiting_request_ms", static_cast<int>(waited_ms));

  // Every key: b's go to the next host of their own order, the others stay.
  auto during = whereKeysGo();
  for (const auto& [k, b] : before) {
    if (b == "b") {
      EXPECT_EQ(during[k], expected(k, "b")) << k;
    } else {
      EXPECT_EQ(during[k], b) << k << " was not b's and must not move";
    }
  }

  thaw(h_.origin("b"));
  const auto t1 = Clock::now();
  ASSERT_TRUE(waitUntil([&] { return backendHealth(h_.adminPort(), "c", "b").healthy; }, 10s))
      << h_.lb().output();
  RecordProperty("recovery_ms", static_cast<int>(msSince(t1)));
  EXPECT_EQ(backendHealth(h_.adminPort(), "c", "b").reason, "2 checks passed");
  EXPECT_NE(h_.lb().output().find("backend b up: 2 checks passed (cluster c)"), std::string::npos);
  EXPECT_EQ(whereKeysGo(), before) << "every key is back where it was";

  const std::string b_labels = "backend=\"b\",cluster=\"c\"";
  EXPECT_EQ(metricSample(h_.adminPort(), "lb_backend_health_transitions_total",
                         b_labels + ",to=\"down\""),
            1);
  EXPECT_EQ(metricSample(h_.adminPort(), "lb_backend_health_transitions_total",
                         b_labels + ",to=\"up\""),
            1);
  EXPECT_GE(metricSample(h_.adminPort(), "lb_backend_health_checks_total",
                         b_labels + ",result=\"timeout\""),
            kFall);
  EXPECT_EQ(metricSample(h_.adminPort(), "lb_backend_healthy", b_labels), 1);
  for (const char* other : {"a", "c", "d"})
    EXPECT_EQ(metricSample(h_.adminPort(), "lb_backend_health_transitions_total",
                           "backend=\"" + std::string(other) + "\",cluster=\"c\",to=\"down\""),
              0)
        << other;
}

TEST_F(HealthHttpTest, ABackendFlappingEvery300MsIsNotTakenDown) {
  auto before = whereKeysGo();
  std::vector<double> freezes_ms;
  std::atomic<bool> flapping{true};
  ThawOnExit thaw_b(h_.origin("b"));
  std::thread flapper([&] {
    for (int i = 0; i < 8; ++i) {
      freeze(h_.origin("b"));
      const auto t = Clock::now();
      std::this_thread::sleep_for(300ms);
      thaw(h_.origin("b"));
      freezes_ms.push_back(msSince(t));
      std::this_thread::sleep_for(300ms);
    }
    flapping = false;
  });
  // Meanwhile keys of the other backends keep going to their owners; b's keys are answered
  // by b (late, when it is frozen) or, if it ever went down, by their next host.
  int requests = 0, failed = 0;
  while (flapping.load() && failed == 0) {
    TcpClient c;
    if (!c.connect(h_.port())) {
      ++failed;
      break;
    }
    for (int i = 0; i < kKeys && flapping.load(); i += 7) {
      const std::string k = keyName(i);
      auto r = c.send(httpRequest("GET", "/", "x-key: " + k + "\r\n"))
                   ? readHttpResponse(c, false, 5s)
                   : HttpResponse{};
      if (!r.ok || r.status != 200) {
        ADD_FAILURE() << k << ": " << r.error << " " << r.status;
        ++failed;
        break;
      }
      const std::string got = r.header("x-backend").value_or("?");
      ++requests;
      if (before[k] != "b") {
        EXPECT_EQ(got, before[k]) << k << " was not b's and must not move";
      } else if (got != "b") {
        EXPECT_EQ(got, expected(k, "b")) << k;
      }
    }
  }
  flapper.join();   // the thread ends by itself after its 8 freezes
  EXPECT_GT(requests, 0);

  int long_freezes = 0;
  for (double f : freezes_ms) long_freezes += f >= 450;
  const std::string b_labels = "backend=\"b\",cluster=\"c\"";
  const double downs = metricSample(h_.adminPort(), "lb_backend_health_transitions_total",
                                    b_labels + ",to=\"down\"");
  const double ups = metricSample(h_.adminPort(), "lb_backend_health_transitions_total",
                                  b_labels + ",to=\"up\"");
  const double timeouts = metricSample(h_.adminPort(), "lb_backend_health_checks_total",
                                       b_labels + ",result=\"timeout\"");
  RecordProperty("flap_transitions", static_cast<int>(downs + ups));
  RecordProperty("flap_failed_checks", static_cast<int>(timeouts));
  RecordProperty("freezes_450ms_or_longer", long_freezes);
  EXPECT_GT(timeouts, 0) << "the checks saw the freezes";
  EXPECT_LE(downs, long_freezes) << "a 300 ms freeze took b down";
  EXPECT_LE(ups, downs);
  EXPECT_LE(downs * kFall, timeouts) << "every down needs fall failed checks";
  // Settled: b up (it may be on its way back from a down a long freeze caused).
  ASSERT_TRUE(waitUntil([&] { return backendHealth(h_.adminPort(), "c", "b").healthy; }, 10s));
  EXPECT_EQ(whereKeysGo(), before);
}

}  // namespace
}  // namespace lb::test
