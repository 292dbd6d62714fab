// A cluster's `membership` table: what it reads, its defaults, and every mistake reported at
// its position with its key path, as every other key is.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/config/config.h"
#include "tests/support/config_errors.h"

namespace lb {
namespace {

using test::errorsOf;

TEST(ConfigMembershipTest, ReadsEveryKey) {
  auto r = loadConfigString(R"([clusters.cache]
backends = [ { name = "a", address = "127.0.0.1:9001" } ]
[clusters.cache.membership]
etcd = ["http://127.0.0.1:2379", "http://127.0.0.1/"]
key = "/lb/prod/cache"
max_remove_percent = 30
min_apply_interval = "250ms"
reconcile_interval = "5s"
state_file = "/var/lib/lb/cache.json"
)",
                            "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const ClusterConfig& c = r.value().clusters.at(0);
  ASSERT_TRUE(c.membership.has_value());
  EXPECT_EQ(c.membership->etcd,
            (std::vector<std::string>{"http://127.0.0.1:2379", "http://127.0.0.1/"}));
  EXPECT_EQ(c.membership->key, "/lb/prod/cache");
  EXPECT_EQ(c.membership->max_remove_percent, 30u);
  EXPECT_EQ(c.membership->min_apply_interval, Duration{250});
  EXPECT_EQ(c.membership->reconcile_interval, Duration{5000});
  EXPECT_EQ(c.membership->state_file, "/var/lib/lb/cache.json");
  EXPECT_EQ(c.backends.size(), 1u);
}

TEST(ConfigMembershipTest, ReadsHttpsTlsAndCredentials) {
  auto r = loadConfigString(R"([clusters.cache]
[clusters.cache.membership]
etcd = ["https://10.0.0.1:2379", "https://10.0.0.2"]
key = "/lb/prod/cache"
tls = { ca = "etcd-ca.pem", server_name = "etcd.internal", cert = "/etc/lb/etcd.pem", key = "/etc/lb/etcd.key" }
user = "lb"
password = "s3cret"
)",
                            "/etc/lb/lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const MembershipConfig& m = *r.value().clusters.at(0).membership;
  EXPECT_EQ(m.etcd, (std::vector<std::string>{"https://10.0.0.1:2379", "https://10.0.0.2"}));
  EXPECT_TRUE(m.tls.enabled);
  EXPECT_EQ(m.tls.ca, "/etc/lb/etcd-ca.pem");   // beside the config, as a cluster's tls
  EXPECT_EQ(m.tls.server_name, "etcd.internal");
  EXPECT_EQ(m.tls.cert, "/etc/lb/etcd.pem");
  EXPECT_EQ(m.tls.key, "/etc/lb/etcd.key");
  EXPECT_EQ(m.user, "lb");
  EXPECT_EQ(m.password, "s3cret");
}

TEST(ConfigMembershipTest, DefaultsLeaveOnlyEtcdAndKeyToWrite) {
  auto r = loadConfigString(
      "[clusters.cache]\nmembership = { etcd = [\"http://127.0.0.1:2379\"], key = \"/k\" }\n",
      "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const MembershipConfig& m = *r.value().clusters.at(0).membership;
  EXPECT_EQ(m.max_remove_percent, 50u);
  EXPECT_EQ(m.min_apply_interval, Duration{100});
  EXPECT_EQ(m.reconcile_interval, Duration{30000});
  EXPECT_EQ(m.state_file, "");
}

TEST(ConfigMembershipTest, AClusterWithoutMembershipHasNone) {
  auto r = loadConfigString(
      "[clusters.cache]\nbackends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
      "lb.toml");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().clusters.at(0).membership.has_value());
}

// With a membership the backends are a fallback: none, or an empty list, is a cluster that
// serves nothing until etcd or the state file gives it hosts; checkServes accepts it.
TEST(ConfigMembershipTest, BackendsAreOptionalWithAMembership) {
  for (const char* backends : {"", "backends = []\n"}) {
    const std::string toml = std::string("[listeners.web]\nlisten = \"127.0.0.1:8080\"\n"
                                         "cluster = \"cache\"\n[clusters.cache]\n"
                                         "membership = { etcd = [\"http://127.0.0.1:2379\"], "
                                         "key = \"/k\" }\n") +
                             backends;
    auto r = loadConfigString(toml, "lb.toml");
    ASSERT_TRUE(r.ok()) << toml << r.errors().front().format();
    EXPECT_TRUE(r.value().clusters.at(0).backends.empty());
    Errors warnings;
    EXPECT_TRUE(checkServes(r.value(), &warnings).empty());
    EXPECT_TRUE(warnings.empty());
  }
}

struct Mistake {
  const char* name;
  const char* membership;   // the table's text after "membership = "
  const char* error;        // the one error expected, formatted
};

std::ostream& operator<<(std::ostream& os, const Mistake& m) { return os << m.name; }

// Each case is line 2 of a cluster "cache" with one backend: columns count from
// "membership = " (13 characters).
const Mistake kMistakes[] = {
    {"EtcdMissing", "{ key = \"/k\" }",
     "lb.toml:2:14: clusters.cache.membership: missing required key 'etcd'"},
    {"EtcdEmpty", "{ etcd = [], key = \"/k\" }",
     "lb.toml:2:23: clusters.cache.membership.etcd: lists no endpoint (write e.g. "
     "[\"http://127.0.0.1:2379\"])"},
    {"EtcdNotAList", "{ etcd = \"http://127.0.0.1:2379\", key = \"/k\" }",
     "lb.toml:2:23: clusters.cache.membership.etcd: must be an array, got string"},
    {"EtcdEntryNotAString", "{ etcd = [2379], key = \"/k\" }",
     "lb.toml:2:24: clusters.cache.membership.etcd[0]: must be a string (an http:// URL), got "
     "integer"},
    {"EtcdNotAUrl", "{ etcd = [\"127.0.0.1:2379\"], key = \"/k\" }",
     "lb.toml:2:24: clusters.cache.membership.etcd[0]: '127.0.0.1:2379' is not an etcd client "
     "URL (write http://host:port or https://host:port, e.g. http://127.0.0.1:2379)"},
    {"TlsWithoutHttps",
     "{ etcd = [\"http://127.0.0.1:2379\"], key = \"/k\", tls = { ca = \"/ca.pem\" } }",
     "lb.toml:2:68: clusters.cache.membership.tls: is set but every etcd URL is http:// (write "
     "https://host:port)"},
    {"TlsCertWithoutKey",
     "{ etcd = [\"https://127.0.0.1:2379\"], key = \"/k\", tls = { cert = \"/c.pem\" } }",
     "lb.toml:2:78: clusters.cache.membership.tls.cert: needs its private key too: key = "
     "\"...pem\""},
    {"UserWithoutPassword", "{ etcd = [\"https://127.0.0.1:2379\"], key = \"/k\", user = \"lb\" }",
     "lb.toml:2:70: clusters.cache.membership.user: needs its password too: password = \"...\""},
    {"PasswordWithoutUser",
     "{ etcd = [\"https://127.0.0.1:2379\"], key = \"/k\", password = \"pw\" }",
     "lb.toml:2:74: clusters.cache.membership.password: needs its user too: user = \"...\""},
    {"EtcdWithPath", "{ etcd = [\"http://127.0.0.1:2379/v3\"], key = \"/k\" }",
     "lb.toml:2:24: clusters.cache.membership.etcd[0]: 'http://127.0.0.1:2379/v3': an etcd "
     "client URL has no path (write http://host:port)"},
    {"EtcdHostName", "{ etcd = [\"http://etcd-1:2379\"], key = \"/k\" }",
     "lb.toml:2:24: clusters.cache.membership.etcd[0]: 'http://etcd-1:2379': the etcd host must "
     "be an IP address (write e.g. http://127.0.0.1:2379)"},
    {"EtcdBadPort", "{ etcd = [\"http://127.0.0.1:99999\"], key = \"/k\" }",
     "lb.toml:2:24: clusters.cache.membership.etcd[0]: 'http://127.0.0.1:99999': '127.0.0.1:99999': "
     "port must be 1-65535, got 99999"},
    {"KeyMissing", "{ etcd = [\"http://127.0.0.1:2379\"] }",
     "lb.toml:2:14: clusters.cache.membership: missing required key 'key'"},
    {"KeyEmpty", "{ etcd = [\"http://127.0.0.1:2379\"], key = \"\" }",
     "lb.toml:2:56: clusters.cache.membership.key: must not be empty (the etcd key holding the "
     "membership document)"},
    {"PercentZero", "{ etcd = [\"http://127.0.0.1:2379\"], key = \"/k\", max_remove_percent = 0 }",
     "lb.toml:2:83: clusters.cache.membership.max_remove_percent: must be >= 1, got 0"},
    {"PercentOver100",
     "{ etcd = [\"http://127.0.0.1:2379\"], key = \"/k\", max_remove_percent = 101 }",
     "lb.toml:2:83: clusters.cache.membership.max_remove_percent: must be <= 100, got 101"},
    {"IntervalNotADuration",
     "{ etcd = [\"http://127.0.0.1:2379\"], key = \"/k\", min_apply_interval = \"fast\" }",
     "lb.toml:2:83: clusters.cache.membership.min_apply_interval: 'fast' is not a duration (use "
     "e.g. 250ms, 2s, 1m)"},
    {"IntervalNegative",
     "{ etcd = [\"http://127.0.0.1:2379\"], key = \"/k\", min_apply_interval = \"-1s\" }",
     "lb.toml:2:83: clusters.cache.membership.min_apply_interval: '-1s': a duration cannot be "
     "negative"},
    {"IntervalOverAMinute",
     "{ etcd = [\"http://127.0.0.1:2379\"], key = \"/k\", min_apply_interval = \"2m\" }",
     "lb.toml:2:83: clusters.cache.membership.min_apply_interval: must be at most 1m, got 2m"},
    {"ReconcileTooOften",
     "{ etcd = [\"http://127.0.0.1:2379\"], key = \"/k\", reconcile_interval = \"10ms\" }",
     "lb.toml:2:83: clusters.cache.membership.reconcile_interval: must be at least 100ms, got "
     "'10ms'"},
    {"StateFileEmpty", "{ etcd = [\"http://127.0.0.1:2379\"], key = \"/k\", state_file = \"\" }",
     "lb.toml:2:75: clusters.cache.membership.state_file: must not be empty (leave it out for no "
     "state file)"},
    {"UnknownKey", "{ etcd = [\"http://127.0.0.1:2379\"], key = \"/k\", max_remove_pecrent = 10 }",
     "lb.toml:2:62: clusters.cache.membership: unknown key 'max_remove_pecrent' (did you mean "
     "'max_remove_percent'?)"},
    {"NotATable", "\"http://127.0.0.1:2379\"",
     "lb.toml:2:14: clusters.cache.membership: must be a table, got string"},
};

class ConfigMembershipMistakeTest : public testing::TestWithParam<Mistake> {};

TEST_P(ConfigMembershipMistakeTest, IsReportedAloneWithPositionPathAndMessage) {
  const std::string toml = std::string("[clusters.cache]\nmembership = ") + GetParam().membership +
                           "\nbackends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n";
  EXPECT_EQ(errorsOf(toml), std::vector<std::string>{GetParam().error}) << toml;
}

INSTANTIATE_TEST_SUITE_P(Mistakes, ConfigMembershipMistakeTest, testing::ValuesIn(kMistakes),
                         [](const testing::TestParamInfo<Mistake>& info) {
                           return std::string(info.param.name);
                         });

// Without a membership the backends stay required, and an empty list stays an error.
TEST(ConfigMembershipTest, WithoutMembershipBackendsAreStillRequired) {
  EXPECT_EQ(errorsOf("[clusters.cache]\nselector = \"maglev\"\n"),
            std::vector<std::string>{"lb.toml:1:1: clusters.cache: missing required key 'backends'"});
  EXPECT_EQ(errorsOf("[clusters.cache]\nbackends = []\n"),
            std::vector<std::string>{"lb.toml:2:12: clusters.cache.backends: lists no backends"});
}

}  // namespace
}  // namespace lb
