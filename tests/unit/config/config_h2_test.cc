// A listener's `h2` table and HTTP/2 in `tls.alpn`: what they read, their defaults, and every
// mistake reported at its position with its key path, so that a setting lb cannot honour
// (HTTP/2 on a listener that does not speak HTTP) is refused rather than accepted and ignored.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/config/config.h"
#include "tests/support/config_errors.h"

namespace lb {
namespace {

using test::errorsOf;

std::string listenerWith(const std::string& protocol, const std::string& line) {
  return "[listeners.web]\nlisten = \"127.0.0.1:8080\"\nprotocol = \"" + protocol +
         "\"\ncluster = \"c\"\n" + line +
         "\n[clusters.c]\nbackends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n";
}

TEST(ConfigH2Test, DefaultsWithoutTheTable) {
  auto r = loadConfigString(listenerWith("http", ""), "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const H2Config& h = r.value().listeners.at(0).h2;
  EXPECT_EQ(h.max_concurrent_streams, 100u);
  EXPECT_EQ(h.initial_window, 1u << 20);
  EXPECT_EQ(h.max_header_list, 64u << 10);
  EXPECT_EQ(h.cleartext, H2Cleartext::kDetect);
}

TEST(ConfigH2Test, ReadsEverySetting) {
  auto r = loadConfigString(
      listenerWith("http", "h2 = { max_concurrent_streams = 250, initial_window = \"256KiB\", "
                           "max_header_list = 32768, cleartext = \"only\" }"),
      "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const H2Config& h = r.value().listeners.at(0).h2;
  EXPECT_EQ(h.max_concurrent_streams, 250u);
  EXPECT_EQ(h.initial_window, 256u << 10);
  EXPECT_EQ(h.max_header_list, 32768u);
  EXPECT_EQ(h.cleartext, H2Cleartext::kOnly);
  EXPECT_EQ(h.pos.line, 5u);
}

TEST(ConfigH2Test, OutOfRangeValuesAreRefusedByName) {
  EXPECT_EQ(errorsOf(listenerWith("http", "h2 = { initial_window = \"1KiB\" }")),
            std::vector<std::string>{
                "lb.toml:5:25: listeners.web.h2.initial_window: must be from 16KiB to 16MiB, "
                "got 1024 bytes"});
  EXPECT_EQ(errorsOf(listenerWith("http", "h2 = { max_concurrent_streams = 0 }")).size(), 1u);
  EXPECT_EQ(errorsOf(listenerWith("http", "h2 = { max_header_list = \"2GiB\" }")).size(), 1u);
  EXPECT_EQ(errorsOf(listenerWith("http", "h2 = { max_header_list = \"128KiB\" }")).size(), 1u);
  EXPECT_EQ(errorsOf(listenerWith("http", "h2 = { max_header_list = \"lots\" }")),
            std::vector<std::string>{
                "lb.toml:5:26: listeners.web.h2.max_header_list: must be a size such as "
                "\"64MiB\" (B, KiB, MiB, GiB) or a number of bytes, got 'lots'"});
  EXPECT_EQ(errorsOf(listenerWith("http", "h2 = { cleartext = \"maybe\" }")).size(), 1u);
  EXPECT_EQ(errorsOf(listenerWith("http", "h2 = { streams = 5 }")).size(), 1u);
}

TEST(ConfigH2Test, OnAListenerThatDoesNotSpeakHttpIsRefused) {
  const auto e = errorsOf(listenerWith("redis", "h2 = { max_concurrent_streams = 10 }"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("lb.toml:5:6: listeners.web.h2: is for http listeners"), std::string::npos)
      << e[0];
  EXPECT_NE(e[0].find("speaks redis"), std::string::npos) << e[0];
}

TEST(ConfigH2Test, H2InTheAlpnOfAListenerThatDoesNotSpeakHttpIsRefused) {
  const std::string tls = "tls = { certificates = [ { cert = \"c.pem\", key = \"k.pem\" } ], "
                          "alpn = [\"h2\", \"redis\"] }";
  const auto e = errorsOf(listenerWith("redis", tls));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("listeners.web.tls.alpn[0]: \"h2\" is HTTP/2"), std::string::npos) << e[0];
  auto ok = loadConfigString(listenerWith("http", tls), "lb.toml");
  ASSERT_TRUE(ok.ok()) << ok.errors().front().format();
  EXPECT_EQ(ok.value().listeners.at(0).tls.alpn, (std::vector<std::string>{"h2", "redis"}));
}

}  // namespace
}  // namespace lb
