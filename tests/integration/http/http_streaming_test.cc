// 64 MiB bodies stream through lb in both directions, with Content-Length and chunked, while
// lb's peak resident memory (VmHWM) grows by less than 16 MiB: bodies are never buffered whole.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

constexpr long kBody = 64L << 20;

class HttpStreamingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One 64 MiB upload file for the suite (sparse writes would be zeros; any bytes do).
    char path[] = "/tmp/lb-upload-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    std::string block(1 << 20, 'u');
    for (long i = 0; i < kBody / (1 << 20); ++i)
      ASSERT_EQ(write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
    ::close(fd);
    upload_ = path;
  }
  static void TearDownTestSuite() { unlink(upload_.c_str()); }

  void SetUp() override {
    std::string why;
    ASSERT_TRUE(h_.startOrigin("a", &why)) << why;
    ASSERT_TRUE(h_.startLb("[lb]\nworkers = 1\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
                           "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
                           "[clusters.c]\n" + h_.backendsToml({"a"}),
                           &why))
        << why;
    // Warm up (first pool blocks, first connection) before the baseline is taken.
    ASSERT_EQ(httpExchange(h_.port(), httpRequest("GET", "/bytes?n=300000")).status, 200);
    baseline_kib_ = h_.lbStatusKib("VmRSS");
    ASSERT_GT(baseline_kib_, 0);
  }

  // curl through lb: "<http_code> <size_download> <size_upload>".
  std::string curl(std::vector<std::string> args) {
    std::vector<std::string> argv = {"curl", "-s", "-o", "/dev/null", "-w",
                                     "%{http_code} %{size_download} %{size_upload}"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = runCommand(argv, 60s);
    return r.out;
  }

  void expectPeakGrowthUnder16MiB() {
    long peak = h_.lbStatusKib("VmHWM");
    RecordProperty("lb_peak_rss_growth_kib", std::to_string(peak - baseline_kib_));
    EXPECT_LT(peak - baseline_kib_, 16 * 1024)
        << "lb's peak RSS grew from " << baseline_kib_ << " KiB to " << peak << " KiB";
  }

  static std::string upload_;
  ProxyHarness h_;
  long baseline_kib_ = 0;
};
std::string HttpStreamingTest::upload_;

TEST_F(HttpStreamingTest, DownloadWithContentLength) {
  EXPECT_EQ(curl({localUrl(h_.port(), "/bytes?n=" + std::to_string(kBody))}),
            "200 " + std::to_string(kBody) + " 0");
  expectPeakGrowthUnder16MiB();
}

TEST_F(HttpStreamingTest, DownloadChunked) {
  EXPECT_EQ(curl({localUrl(h_.port(), "/bytes?chunked=1&n=" + std::to_string(kBody))}),
            "200 " + std::to_string(kBody) + " 0");
  expectPeakGrowthUnder16MiB();
}

TEST_F(HttpStreamingTest, UploadWithContentLengthIsEchoed) {
  EXPECT_EQ(curl({"--data-binary", "@" + upload_, "-H", "Expect:", localUrl(h_.port(), "/echo")}),
            "200 " + std::to_string(kBody) + " " + std::to_string(kBody));
  expectPeakGrowthUnder16MiB();
}

TEST_F(HttpStreamingTest, UploadChunkedIsEchoed) {
  // curl's size_upload counts the chunk framing too: check what came back.
  std::string out = curl({"-T", upload_, "-X", "POST", "-H", "Transfer-Encoding: chunked", "-H",
                          "Expect:", localUrl(h_.port(), "/echo")});
  EXPECT_EQ(out.substr(0, out.rfind(' ')), "200 " + std::to_string(kBody));
  expectPeakGrowthUnder16MiB();
}

}  // namespace
}  // namespace lb::test
