// process_* metrics from /proc: the parser on tricky command names, and the live values of
// this very test process.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>

#include "lb/admin/process_metrics.h"
#include "tests/support/metrics_test_snapshot.h"

namespace lb {
namespace {

// A stat line whose command name holds spaces and a ')' (proc(5): fields follow the last ')').
constexpr const char* kStat =
    "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 1510 0 0 0 250 120 0 0 20 0 3 0 98765 "
    "123456789 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 "
    "0 0\n";

TEST(ProcStatTest, ParsesFieldsAfterTheLastParenthesis) {
  auto s = parseProcStat(kStat);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->utime_ticks, 250u);
  EXPECT_EQ(s->stime_ticks, 120u);
  EXPECT_EQ(s->start_ticks, 98765u);
  EXPECT_EQ(s->vsize_bytes, 123456789u);
  EXPECT_EQ(s->rss_pages, 2048u);
}

TEST(ProcStatTest, RejectsTruncatedLine) {
  EXPECT_FALSE(parseProcStat("4242 (x) S 1 2 3"));
  EXPECT_FALSE(parseProcStat("no parenthesis at all"));
}

TEST(ProcStatTest, FindsBootTimeLine) {
  EXPECT_EQ(parseBootTime("cpu  1 2 3\nintr 5\nbtime 1795981714\nprocesses 9\n"),
            std::optional<uint64_t>(1795981714));
  EXPECT_FALSE(parseBootTime("cpu 1 2 3\n"));
}

class ProcessCollectorTest : public ::testing::Test {
 protected:
  double value(const char* name) {
    auto* m = testing::findSample(families_, name, {});
    if (m == nullptr) {
      ADD_FAILURE() << "missing " << name;
      return -1;
    }
    return testing::findFamily(families_, name)->type == prometheus::MetricType::Counter
               ? m->counter.value
               : m->gauge.value;
  }
  std::vector<prometheus::MetricFamily> families_ = ProcessCollector().Collect();
};

TEST_F(ProcessCollectorTest, ReportsResidentMemory) {
  EXPECT_GT(value("process_resident_memory_bytes"), 1 << 20);   // a gtest binary is > 1 MiB
}

TEST_F(ProcessCollectorTest, CountsOpenFds) {
  // stdin, stdout, stderr at least; and below the limit.
  EXPECT_GE(value("process_open_fds"), 3);
  EXPECT_LT(value("process_open_fds"), value("process_max_fds"));
}

TEST_F(ProcessCollectorTest, MaxFdsIsTheSoftLimit) {
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  EXPECT_EQ(value("process_max_fds"), static_cast<double>(lim.rlim_cur));
}

TEST_F(ProcessCollectorTest, StartTimeIsInThePast) {
  using namespace std::chrono;
  const double now = duration<double>(system_clock::now().time_since_epoch()).count();
  double start = value("process_start_time_seconds");
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 24 * 3600);   // this test process started less than a day ago
}

TEST_F(ProcessCollectorTest, CpuSecondsIsACounter) {
  EXPECT_GE(value("process_cpu_seconds_total"), 0);
  EXPECT_EQ(testing::findFamily(families_, "process_cpu_seconds_total")->type,
            prometheus::MetricType::Counter);
}

}  // namespace
}  // namespace lb
