// Socket addresses as the config writes them, numeric or host:port (lb/core/address.h).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>

#include "lb/core/address.h"

namespace lb {
namespace {

struct Parsed {
  sockaddr_storage addr{};
  socklen_t len = 0;
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&addr); }
};

Parsed parsed(const char* text) {
  Parsed p;
  std::string error;
  EXPECT_TRUE(parseAddress(text, &p.addr, &p.len, &error)) << text << ": " << error;
  return p;
}

std::string rejection(const char* text) {
  sockaddr_storage addr{};
  addr.ss_family = AF_UNIX;   // sentinel: a rejection must leave *out alone
  socklen_t len = 7;
  std::string error;
  EXPECT_FALSE(parseAddress(text, &addr, &len, &error)) << text;
  EXPECT_EQ(addr.ss_family, AF_UNIX);
  EXPECT_EQ(len, 7u);
  return error;
}

TEST(AddressTest, ParsesIpv4) {
  Parsed p = parsed("127.0.0.1:9001");
  ASSERT_EQ(p.addr.ss_family, AF_INET);
  EXPECT_EQ(p.len, sizeof(sockaddr_in));
  const auto* sin = reinterpret_cast<const sockaddr_in*>(&p.addr);
  EXPECT_EQ(ntohs(sin->sin_port), 9001);
  EXPECT_EQ(ntohl(sin->sin_addr.s_addr), 0x7f000001u);
}

TEST(AddressTest, ParsesWildcardAndBracketedIpv6) {
  EXPECT_EQ(formatAddress(parsed("0.0.0.0:8080").sa()), "0.0.0.0:8080");
  Parsed p = parsed("[::1]:65535");
  ASSERT_EQ(p.addr.ss_family, AF_INET6);
  EXPECT_EQ(p.len, sizeof(sockaddr_in6));
  EXPECT_EQ(formatAddress(p.sa()), "[::1]:65535");
  EXPECT_EQ(formatAddress(parsed("[::]:1").sa()), "[::]:1");
}

TEST(AddressTest, NumericFormRejectsNames) {
  // parseAddress is the numeric-only form (listen addresses, lb-origin): a name is refused
  // there; backends take names through parseHostPort.
  EXPECT_EQ(rejection("localhost:80"),
            "'localhost:80': host must be a numeric IPv4 address or a bracketed IPv6 address");
  // inet_pton takes only dotted quads: no shorthand that inet_aton would read differently.
  EXPECT_NE(rejection("127.1:80").find("numeric IPv4"), std::string::npos);
  EXPECT_NE(rejection("256.0.0.1:80").find("numeric IPv4"), std::string::npos);
}

TEST(AddressTest, RejectsBadPorts) {
  EXPECT_EQ(rejection("127.0.0.1:0"), "'127.0.0.1:0': port must be 1-65535, got 0");
  EXPECT_EQ(rejection("127.0.0.1:65536"), "'127.0.0.1:65536': port must be 1-65535, got 65536");
  EXPECT_EQ(rejection("127.0.0.1:http"),
            "'127.0.0.1:http': port must be a number 1-65535, got 'http'");
  EXPECT_EQ(rejection("127.0.0.1:-1"), "'127.0.0.1:-1': port must be a number 1-65535, got '-1'");
  EXPECT_EQ(rejection("127.0.0.1:99999999999"),
            "'127.0.0.1:99999999999': port must be a number 1-65535, got '99999999999'");
  EXPECT_EQ(rejection("127.0.0.1:"),
            "'127.0.0.1:' has no port (use host:port, e.g. 127.0.0.1:9001 or [::1]:9001)");
}

TEST(AddressTest, TakesPortZeroOnlyWhenAskedTo) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string error;
  ASSERT_TRUE(parseAddress("[::1]:0", &addr, &len, &error, PortZero::kAllow)) << error;
  EXPECT_EQ(formatAddress(reinterpret_cast<const sockaddr*>(&addr)), "[::1]:0");
  EXPECT_FALSE(parseAddress("127.0.0.1:65536", &addr, &len, &error, PortZero::kAllow));
  EXPECT_EQ(error, "'127.0.0.1:65536': port must be 0-65535, got 65536");
}

TEST(AddressTest, RejectsMalformedShapes) {
  EXPECT_EQ(rejection(""), "address is empty (use host:port, e.g. 127.0.0.1:9001 or [::1]:9001)");
  EXPECT_EQ(rejection("127.0.0.1"),
            "'127.0.0.1' has no port (use host:port, e.g. 127.0.0.1:9001 or [::1]:9001)");
  EXPECT_EQ(rejection(":80"), "':80' has no host (use 0.0.0.0 or [::] for every address)");
  EXPECT_EQ(rejection("::1:80"), "'::1:80': write an IPv6 address in brackets, e.g. [::1]:9001");
  EXPECT_EQ(rejection("[::1:80"), "'[::1:80': missing ']' after the IPv6 address");
  EXPECT_EQ(rejection("[::1]80"),
            "'[::1]80' has no port (use host:port, e.g. 127.0.0.1:9001 or [::1]:9001)");
  EXPECT_EQ(rejection("[1.2.3.4]:80"), "'[1.2.3.4]:80': '1.2.3.4' is not a numeric IPv6 address");
}

TEST(AddressTest, WildcardOverlapsEverySpecificAddressOnItsPort) {
  EXPECT_TRUE(addressesOverlap(parsed("0.0.0.0:80").sa(), parsed("127.0.0.1:80").sa()));
  EXPECT_TRUE(addressesOverlap(parsed("127.0.0.1:80").sa(), parsed("127.0.0.1:80").sa()));
  EXPECT_TRUE(addressesOverlap(parsed("[::]:80").sa(), parsed("127.0.0.1:80").sa()));
  EXPECT_TRUE(addressesOverlap(parsed("[::1]:80").sa(), parsed("[::]:80").sa()));
}

TEST(AddressTest, DistinctAddressesOrPortsDoNotOverlap) {
  EXPECT_FALSE(addressesOverlap(parsed("0.0.0.0:80").sa(), parsed("0.0.0.0:81").sa()));
  EXPECT_FALSE(addressesOverlap(parsed("127.0.0.1:80").sa(), parsed("127.0.0.2:80").sa()));
  EXPECT_FALSE(addressesOverlap(parsed("[::1]:80").sa(), parsed("127.0.0.1:80").sa()));
  EXPECT_FALSE(addressesOverlap(parsed("0.0.0.0:80").sa(), parsed("[::1]:80").sa()));
}

HostPort hostPort(const char* text) {
  HostPort hp;
  std::string error;
  EXPECT_TRUE(parseHostPort(text, &hp, &error)) << text << ": " << error;
  return hp;
}

std::string hostPortRejection(const char* text) {
  HostPort hp;
  hp.host = "untouched";
  std::string error;
  EXPECT_FALSE(parseHostPort(text, &hp, &error)) << text;
  EXPECT_EQ(hp.host, "untouched");
  return error;
}

TEST(HostPortTest, KeepsAHostNameForTheResolver) {
  HostPort hp = hostPort("cache-1.internal:11211");
  EXPECT_FALSE(hp.numeric);
  EXPECT_EQ(hp.host, "cache-1.internal");
  EXPECT_EQ(hp.port, 11211);
  EXPECT_EQ(hp.address_len, 0u);
  EXPECT_EQ(hostPort("localhost:80").host, "localhost");
  EXPECT_EQ(hostPort("redis_1:6379").host, "redis_1");        // Compose service names
  EXPECT_EQ(hostPort("cache.example.:80").host, "cache.example.");   // fully qualified
}

TEST(HostPortTest, ConvertsNumericHostsAtOnce) {
  HostPort hp = hostPort("127.0.0.1:9001");
  EXPECT_TRUE(hp.numeric);
  EXPECT_EQ(formatAddress(reinterpret_cast<const sockaddr*>(&hp.address)), "127.0.0.1:9001");
  HostPort v6 = hostPort("[::1]:9001");
  EXPECT_TRUE(v6.numeric);
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(formatAddress(reinterpret_cast<const sockaddr*>(&v6.address)), "[::1]:9001");
}

TEST(HostPortTest, RefusesWhatIsNeitherAnAddressNorAName) {
  // A last label of digits is a mistyped IPv4 address, not a name.
  EXPECT_EQ(hostPortRejection("127.1:80"),
            "'127.1:80': '127.1' is neither a numeric IPv4 address, a bracketed IPv6 address "
            "nor a host name");
  EXPECT_NE(hostPortRejection("256.0.0.1:80").find("neither"), std::string::npos);
  EXPECT_NE(hostPortRejection("-cache:80").find("neither"), std::string::npos);
  EXPECT_NE(hostPortRejection("cache-:80").find("neither"), std::string::npos);
  EXPECT_NE(hostPortRejection("a..b:80").find("neither"), std::string::npos);
  EXPECT_NE(hostPortRejection("cache 1:80").find("neither"), std::string::npos);
  EXPECT_NE(hostPortRejection((std::string(64, 'a') + ".example:80").c_str()).find("neither"),
            std::string::npos);
  EXPECT_EQ(hostPortRejection("cache:0"), "'cache:0': port must be 1-65535, got 0");
}

TEST(HostPortTest, SetAddressPortAndSameAddress) {
  HostPort a = hostPort("127.0.0.1:1");
  HostPort b = hostPort("127.0.0.1:2");
  EXPECT_FALSE(sameAddress(a.address, a.address_len, b.address, b.address_len));
  setAddressPort(&a.address, 2);
  EXPECT_TRUE(sameAddress(a.address, a.address_len, b.address, b.address_len));
  HostPort v6 = hostPort("[::1]:2");
  EXPECT_FALSE(sameAddress(a.address, a.address_len, v6.address, v6.address_len));
}

}  // namespace
}  // namespace lb
