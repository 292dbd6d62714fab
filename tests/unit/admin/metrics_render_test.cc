// /metrics as text: the exposition format 0.0.4 through prometheus-cpp's TextSerializer,
// checked by Prometheus' own linter (promtool check metrics) and by reading the lines back.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "lb/admin/metrics.h"
#include "tests/support/metrics_test_snapshot.h"

namespace lb {
namespace {

// Runs `cmd` through the shell with `input` on stdin; returns its exit status, output in *out.
int runWithInput(const std::string& cmd, const std::string& input, std::string* out) {
  char path[] = "/tmp/lb_metrics_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  FILE* f = fdopen(fd, "w");
  fwrite(input.data(), 1, input.size(), f);
  fclose(f);
  std::string full = cmd + " < " + path + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  int status = pclose(p);
  unlink(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class MetricsRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snap_ = testing::buildTestSnapshot(registry_);
    ASSERT_NE(snap_, nullptr);
    // Some traffic in every family, so the linter sees real values.
    for (const auto& c : snap_->clusters)
      for (const auto& b : c.backends) {
        b.state->live.store(2);
        b.state->per_worker[1].requests[1].add(10);
        b.state->per_worker[0].picks[0].add(10);
        b.state->per_worker[0].bytes_rx.add(1000);
        b.state->per_worker[1].latency_le[3].add(10);
        b.state->per_worker[1].latency_count.add(10);
        b.state->per_worker[1].latency_sum_us.add(30000);
      }
    metrics_ = std::make_unique<Metrics>([this] { return snap_; }, 1700000000);
    metrics_->noteReload(false, 1700000100);
  }

  StateRegistry registry_{2};
  std::shared_ptr<const Snapshot> snap_;
  std::unique_ptr<Metrics> metrics_;
};

TEST_F(MetricsRenderTest, PassesPromtoolCheckMetrics) {
  std::string out;
  int rc = runWithInput("promtool check metrics", metrics_->render(), &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "") << "promtool lint findings";
}

TEST_F(MetricsRenderTest, PromtoolRejectsBrokenExposition) {
  // The check above can fail: the same linter on a counter without _total and without HELP.
  std::string out;
  EXPECT_NE(runWithInput("promtool check metrics", "# TYPE lb_x counter\nlb_x 1\n", &out), 0);
}

TEST_F(MetricsRenderTest, WritesHistogramWithInfBucket) {
  std::string text = metrics_->render();
  EXPECT_NE(text.find("# TYPE lb_backend_response_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("lb_backend_response_seconds_bucket{backend=\"cache-a\",cluster=\"cache\","
                      "le=\"+Inf\"} 10\n"),
            std::string::npos);
  EXPECT_NE(text.find("lb_backend_response_seconds_sum{backend=\"cache-a\",cluster=\"cache\"} "
                      "0.03\n"),
            std::string::npos);
}

TEST_F(MetricsRenderTest, WritesCounterWithLabels) {
  std::string text = metrics_->render();
  EXPECT_NE(text.find("lb_backend_requests_total{backend=\"p-1\",cluster=\"plain\",code=\"2xx\"} "
                      "10\n"),
            std::string::npos)
      << text.substr(0, 2000);
  EXPECT_NE(text.find("lb_config_reloads_total{result=\"failure\"} 1\n"), std::string::npos);
}

TEST_F(MetricsRenderTest, EscapesLabelValues) {
  Config c = testing::metricsTestConfig();
  c.clusters[1].backends[0].name = "we\"ird\\name";
  StateRegistry registry(1);
  auto snap = testing::buildTestSnapshot(registry, c);
  ASSERT_NE(snap, nullptr);
  Metrics m([snap] { return snap; }, 0);
  std::string text = m.render();
  EXPECT_NE(text.find("backend=\"we\\\"ird\\\\name\""), std::string::npos);
  std::string out;
  EXPECT_EQ(runWithInput("promtool check metrics", text, &out), 0) << out;
}

}  // namespace
}  // namespace lb
