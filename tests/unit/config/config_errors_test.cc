// Every config mistake is reported with its exact file:line:column, key path and a specific
// message; several mistakes in one file are all reported, in file order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/config/config.h"

namespace lb {
namespace {

// A valid cluster that listener cases can point at; appended after each case's own lines.
#define CACHE_CLUSTER                                 \
  "[clusters.cache]\n"                                \
  "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n"

struct Mistake {
  const char* name;
  const char* toml;
  const char* error;   // the one error expected, formatted
};

std::ostream& operator<<(std::ostream& os, const Mistake& m) { return os << m.name; }

const Mistake kMistakes[] = {
    {"TomlSyntax", "[lb]\nworkers = \n",
     "lb.toml:2:11: Error while parsing key-value pair: expected value, saw '\\n'"},
    {"UnknownSection", "[listener.web]\nlisten = \"127.0.0.1:8080\"\n",
     "lb.toml:1:2: unknown key 'listener' (did you mean 'listeners'?)"},
    {"WorkersNegative", "[lb]\nworkers = -1\n", "lb.toml:2:11: lb.workers: must be >= 0, got -1"},
    {"WorkersTooMany", "[lb]\nworkers = 5000\n",
     "lb.toml:2:11: lb.workers: must be <= 1024, got 5000"},
    {"WorkersNotInteger", "[lb]\nworkers = \"two\"\n",
     "lb.toml:2:11: lb.workers: must be an integer, got string"},
    {"LogLevelTypo", "[lb]\nlog_level = \"inof\"\n",
     "lb.toml:2:13: lb.log_level: 'inof' is not one of error, warn, info, debug (did you mean "
     "'info'?)"},
    {"DurationGarbage", "[lb]\ndrain_timeout = \"2x\"\n",
     "lb.toml:2:17: lb.drain_timeout: '2x' is not a duration (use e.g. 250ms, 2s, 1m)"},
    {"DurationNegative", "[lb]\ndrain_timeout = \"-5s\"\n",
     "lb.toml:2:17: lb.drain_timeout: '-5s': a duration cannot be negative"},
    {"DurationNotString", "[lb]\ndrain_timeout = 30\n",
     "lb.toml:2:17: lb.drain_timeout: must be a duration string such as \"2s\", got integer"},
    {"AdminHostName", "[admin]\nlisten = \"localhost:9901\"\n",
     "lb.toml:2:10: admin.listen: 'localhost:9901': a listen address is numeric (a name can "
     "stand for several addresses, and lb binds one): write e.g. 127.0.0.1:9901, [::1]:9901 or "
     "0.0.0.0:9901"},
    {"AdminUnknownKey", "[admin]\nlistn = \"127.0.0.1:9901\"\n",
     "lb.toml:2:1: admin: unknown key 'listn' (did you mean 'listen'?)"},
    {"ListenPortZero",
     "[listeners.web]\nlisten = \"127.0.0.1:0\"\ncluster = \"cache\"\n" CACHE_CLUSTER,
     "lb.toml:2:10: listeners.web.listen: '127.0.0.1:0': port must be 1-65535, got 0"},
    {"ListenBareIpv6", "[listeners.web]\nlisten = \"::1:80\"\ncluster = \"cache\"\n" CACHE_CLUSTER,
     "lb.toml:2:10: listeners.web.listen: '::1:80': write an IPv6 address in brackets, e.g. "
     "[::1]:9001"},
    {"ListenMissing", "[listeners.web]\ncluster = \"cache\"\n" CACHE_CLUSTER,
     "lb.toml:1:1: listeners.web: missing required key 'listen'"},
    {"ListenerBadName",
     "[listeners.\"my web\"]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n" CACHE_CLUSTER,
     "lb.toml:1:12: listeners.my web: 'my web' is not a valid listener name (use letters, "
     "digits, '_' and '-', at most 64)"},
    {"ProtocolUnknown",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\nprotocol = \"udp\"\ncluster = \"cache\"\n"
     CACHE_CLUSTER,
     "lb.toml:3:12: listeners.web.protocol: 'udp' is not one of http, tcp, redis, memcached"},
    {"ClusterUndefined", "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cahce\"\n"
     CACHE_CLUSTER,
     "lb.toml:3:11: listeners.web.cluster: cluster 'cahce' is not defined (did you mean "
     "'cache'?)"},
    {"L7KeyOnTcpListener",
     "[listeners.m]\nlisten = \"127.0.0.1:11311\"\nprotocol = \"tcp\"\ncluster = \"cache\"\n"
     "hash = [ { header = \"x-key\" } ]\n" CACHE_CLUSTER,
     "lb.toml:5:10: listeners.m.hash[0]: 'header' needs an HTTP request, but this listener has "
     "protocol = \"tcp\" (use source_ip or five_tuple)"},
    {"TcpListenerWithoutKey",
     "[listeners.m]\nlisten = \"127.0.0.1:11311\"\nprotocol = \"tcp\"\ncluster = \"cache\"\n"
     CACHE_CLUSTER,
     "lb.toml:1:1: listeners.m: a tcp listener needs a key: set hash = [ { five_tuple = true } ] "
     "(or source_ip), or on_missing_key to choose without one"},
    {"HashEntryTwoSources",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "hash = [ { header = \"x\", cookie = \"lb\" } ]\n" CACHE_CLUSTER,
     "lb.toml:4:10: listeners.web.hash[0]: has both 'header' and 'cookie'; write one key source "
     "per entry"},
    {"HashEntryTwoSourcesWithTtl",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "hash = [ { cookie = \"lb\", ttl = \"1h\", query = \"k\" } ]\n" CACHE_CLUSTER,
     "lb.toml:4:10: listeners.web.hash[0]: has both 'cookie' and 'query'; write one key source "
     "per entry"},
    {"HashEntryNoSource",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "hash = [ { terminal = true } ]\n" CACHE_CLUSTER,
     "lb.toml:4:10: listeners.web.hash[0]: needs one key source: header, cookie, source_ip, "
     "five_tuple, query, path"},
    {"HashEntryTypo",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "hash = [ { hedaer = \"x\" } ]\n" CACHE_CLUSTER,
     "lb.toml:4:12: listeners.web.hash[0]: unknown key 'hedaer' (did you mean 'header'?)"},
    {"HashEntryFalse",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "hash = [ { source_ip = false } ]\n" CACHE_CLUSTER,
     "lb.toml:4:24: listeners.web.hash[0].source_ip: must be true (remove the entry to stop "
     "using it), got false"},
    {"HashHeaderNotToken",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "hash = [ { header = \"x key\" } ]\n" CACHE_CLUSTER,
     "lb.toml:4:21: listeners.web.hash[0].header: 'x key' is not a valid header name"},
    {"HashTtlOnHeader",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "hash = [ { header = \"x\", ttl = \"1h\" } ]\n" CACHE_CLUSTER,
     "lb.toml:4:32: listeners.web.hash[0].ttl: applies only to cookie entries"},
    {"HashCookieTtlGarbage",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "hash = [ { cookie = \"lb\", ttl = \"1 hour\" } ]\n" CACHE_CLUSTER,
     "lb.toml:4:33: listeners.web.hash[0].ttl: '1 hour' is not a duration (use e.g. 250ms, 2s, "
     "1m)"},
    {"HashEntryNotTable",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "hash = [ \"x-key\" ]\n" CACHE_CLUSTER,
     "lb.toml:4:10: listeners.web.hash[0]: must be a table such as { header = \"x-cache-key\" }, "
     "got string"},
    {"OnMissingKeyTypo",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "on_missing_key = \"randm\"\n" CACHE_CLUSTER,
     "lb.toml:4:18: listeners.web.on_missing_key: 'randm' is not one of random, round_robin, "
     "reject (did you mean 'random'?)"},
    {"TimeoutZero",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "timeouts = { connect = \"0\" }\n" CACHE_CLUSTER,
     "lb.toml:4:24: listeners.web.timeouts.connect: must be at least 1ms, got '0'"},
    {"TimeoutTypo",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "timeouts = { iddle = \"5s\" }\n" CACHE_CLUSTER,
     "lb.toml:4:14: listeners.web.timeouts: unknown key 'iddle' (did you mean 'idle'?)"},
    {"HeaderLimitTooSmall",
     "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n"
     "limits = { max_header_bytes = 100 }\n" CACHE_CLUSTER,
     "lb.toml:4:31: listeners.web.limits.max_header_bytes: must be >= 1024, got 100"},
    {"ListenOverlap",
     "[listeners.a]\nlisten = \"0.0.0.0:8080\"\ncluster = \"cache\"\n"
     "[listeners.b]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n" CACHE_CLUSTER,
     "lb.toml:5:10: listeners.b.listen: '127.0.0.1:8080' overlaps listeners.a ('0.0.0.0:8080', "
     "line 2)"},
    {"ListenOverlapsAdmin",
     "[admin]\nlisten = \"127.0.0.1:9901\"\n"
     "[listeners.a]\nlisten = \"127.0.0.1:9901\"\ncluster = \"cache\"\n" CACHE_CLUSTER,
     "lb.toml:4:10: listeners.a.listen: '127.0.0.1:9901' overlaps admin ('127.0.0.1:9901', line "
     "2)"},
    {"ListenersNotTable", "[[listeners]]\nlisten = \"127.0.0.1:8080\"\n",
     "lb.toml:1:1: listeners: must be a table, got array"},
    {"SelectorTypo", "[clusters.cache]\nselector = \"maglve\"\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:2:12: clusters.cache.selector: 'maglve' is not one of ring_hash, maglev, "
     "rendezvous, jump, ketama, twemproxy (did you mean 'maglev'?)"},
    {"BalanceFactorTooSmall", "[clusters.cache]\nhash_balance_factor = 50\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:2:23: clusters.cache.hash_balance_factor: must be 0 (off) or > 100 (percent of the "
     "mean load), got 50"},
    {"RetriesNegative", "[clusters.cache]\nretries = -1\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:2:11: clusters.cache.retries: must be >= 0, got -1"},
    {"TableSizeNotPrime", "[clusters.cache]\nmaglev = { table_size = 65536 }\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:2:25: clusters.cache.maglev.table_size: table size 65536 is not prime (e.g. 251, "
     "4099, 65537, 655373)"},
    {"TableSizeHuge", "[clusters.cache]\nmaglev = { table_size = 10000019 }\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:2:25: clusters.cache.maglev.table_size: must be <= 5000011, got 10000019"},
    {"TableSizeBelowBackends",
     "[clusters.cache]\nselector = \"maglev\"\nmaglev = { table_size = 2 }\nbackends = [\n"
     "  { name = \"a\", address = \"127.0.0.1:9001\" },\n"
     "  { name = \"b\", address = \"127.0.0.1:9002\" },\n"
     "  { name = \"c\", address = \"127.0.0.1:9003\" },\n]\n",
     "lb.toml:3:25: clusters.cache.maglev.table_size: table size 2 is smaller than the 3 "
     "backends"},
    {"VnodesZero", "[clusters.cache]\nring_hash = { vnodes = 0 }\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:2:24: clusters.cache.ring_hash.vnodes: must be >= 1, got 0"},
    {"RingTooLarge", "[clusters.cache]\nring_hash = { vnodes = 10000 }\nbackends = [\n"
     "  { name = \"a\", address = \"127.0.0.1:9001\", weight = 1000 },\n"
     "  { name = \"b\", address = \"127.0.0.1:9002\", weight = 1000 },\n]\n",
     "lb.toml:2:24: clusters.cache.ring_hash.vnodes: the ring would hold 20000000 points (at most "
     "10000000); lower vnodes or the weights"},
    {"WeightZero", "[clusters.cache]\nbackends = [\n"
     "  { name = \"a\", address = \"127.0.0.1:9001\" },\n"
     "  { name = \"b\", address = \"127.0.0.1:9002\", weight = 0 },\n]\n",
     "lb.toml:4:54: clusters.cache.backends[1].weight: must be >= 1, got 0"},
    {"BackendKeyTypo", "[clusters.cache]\nbackends = [\n"
     "  { name = \"a\", address = \"127.0.0.1:9001\", wieght = 2 },\n]\n",
     "lb.toml:3:45: clusters.cache.backends[0]: unknown key 'wieght' (did you mean 'weight'?)"},
    {"BackendWithoutAddress", "[clusters.cache]\nbackends = [\n  { name = \"a\" },\n]\n",
     "lb.toml:3:3: clusters.cache.backends[0]: missing required key 'address'"},
    {"BackendNotTable", "[clusters.cache]\nbackends = [ \"127.0.0.1:9001\" ]\n",
     "lb.toml:2:14: clusters.cache.backends[0]: must be a table such as { name = \"cache-a\", "
     "address = \"127.0.0.1:9001\" }, got string"},
    {"DuplicateBackendName", "[clusters.cache]\nbackends = [\n"
     "  { name = \"a\", address = \"127.0.0.1:9001\" },\n"
     "  { name = \"a\", address = \"127.0.0.1:9002\" },\n]\n",
     "lb.toml:4:12: clusters.cache.backends[1].name: backend name 'a' is already used by "
     "backends[0]"},
    {"DuplicateHashKey", "[clusters.cache]\nbackends = [\n"
     "  { name = \"a\", address = \"127.0.0.1:9001\" },\n"
     "  { name = \"b\", address = \"127.0.0.1:9002\", hash_key = \"a\" },\n]\n",
     "lb.toml:4:56: clusters.cache.backends[1].hash_key: hash_key 'a' is already the hash_key of "
     "backends[0]"},
    {"JumpWithWeight", "[clusters.cache]\nselector = \"jump\"\nbackends = [\n"
     "  { name = \"a\", address = \"127.0.0.1:9001\", weight = 3 },\n]\n",
     "lb.toml:4:54: clusters.cache.backends[0].weight: jump has no weights (shards are numbered); "
     "remove weight or use rendezvous"},
    {"KetamaHashKeyWithoutPort", "[clusters.cache]\nselector = \"ketama\"\nbackends = [\n"
     "  { name = \"a\", address = \"127.0.0.1:9001\" },\n]\n",
     "lb.toml:4:3: clusters.cache.backends[0].hash_key: ketama places hosts by nginx's server "
     "string host:port; set hash_key = \"127.0.0.1:9001\" (got 'a')"},
    {"TwemproxyHashTypo", "[clusters.cache]\nselector = \"twemproxy\"\n"
     "twemproxy = { hash = \"fnv1a64\" }\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:3:22: clusters.cache.twemproxy.hash: 'fnv1a64' is not one of fnv1a_64, fnv1_64, "
     "fnv1a_32, fnv1_32, md5, murmur, crc32a, crc32, crc16, one_at_a_time, jenkins, hsieh (did "
     "you mean 'fnv1a_64'?)"},
    {"TwemproxyUnknownKey", "[clusters.cache]\nselector = \"twemproxy\"\n"
     "twemproxy = { hash = \"md5\", points = 160 }\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:3:29: clusters.cache.twemproxy: unknown key 'points'"},
    {"TwemproxyDistributionNotKetamaOrModula", "[clusters.cache]\nselector = \"twemproxy\"\n"
     "twemproxy = { hash = \"md5\", distribution = \"random\" }\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:3:44: clusters.cache.twemproxy.distribution: 'random' is not one of ketama, modula"},
    {"TwemproxyDistributionOnAnotherSelector", "[clusters.cache]\nselector = \"maglev\"\n"
     "twemproxy = { distribution = \"modula\" }\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
     "lb.toml:3:30: clusters.cache.twemproxy.distribution: applies only to selector = "
     "\"twemproxy\" (this cluster's selector is 'maglev')"},
    {"TwemproxyTableOnAnotherSelector", "[clusters.cache]\nselector = \"ketama\"\n"
     "twemproxy = { hash = \"md5\" }\n"
     "backends = [ { name = \"a\", address = \"127.0.0.1:9001\", "
     "hash_key = \"10.0.0.1:11211\" } ]\n",
     "lb.toml:3:13: clusters.cache.twemproxy: applies only to selector = \"twemproxy\" (this "
     "cluster's selector is 'ketama')"},
    {"TwemproxyHashKeyTooLong", "[clusters.cache]\nselector = \"twemproxy\"\nbackends = [\n"
     "  { name = \"a\", address = \"127.0.0.1:9001\", hash_key = \""
     "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\" },\n]\n",
     "lb.toml:4:56: clusters.cache.backends[0].hash_key: twemproxy names points NAME-i in a fixed "
     "buffer; a hash_key of 65 bytes is longer than 64"},
    {"NoBackends", "[clusters.cache]\nbackends = []\n",
     "lb.toml:2:12: clusters.cache.backends: lists no backends"},
    {"BackendsMissing", "[clusters.cache]\nselector = \"maglev\"\n",
     "lb.toml:1:1: clusters.cache: missing required key 'backends'"},
};

class ConfigMistakeTest : public testing::TestWithParam<Mistake> {};

TEST_P(ConfigMistakeTest, IsReportedAloneWithPositionPathAndMessage) {
  auto r = loadConfigString(GetParam().toml, "lb.toml");
  ASSERT_FALSE(r.ok()) << "loaded:\n" << GetParam().toml;
  std::vector<std::string> got;
  for (const auto& e : r.errors()) got.push_back(e.format());
  EXPECT_EQ(got, std::vector<std::string>{GetParam().error}) << GetParam().toml;
}

INSTANTIATE_TEST_SUITE_P(Mistakes, ConfigMistakeTest, testing::ValuesIn(kMistakes),
                         [](const testing::TestParamInfo<Mistake>& info) {
                           return std::string(info.param.name);
                         });

TEST(ConfigErrorsTest, EveryMistakeInOneFileIsReportedInFileOrder) {
  auto r = loadConfigString(R"([lb]
workers = -1
log_level = "verbos"
[listeners.web]
listen = "127.0.0.1:70000"
cluster = "cahce"
hash = [ { header = "x" }, { coookie = "lb" } ]
[clusters.cache]
selector = "maglve"
backends = [
  { name = "a", address = "127.0.0.1:9001" },
  { name = "a", address = "127.0.0.1:9002", wieght = 2 },
  { name = "b", address = "127.0.0.1", weight = 0 },
]
[clusters.e]
backends = []
)",
                            "lb.toml");
  ASSERT_FALSE(r.ok());
  std::vector<std::string> got;
  for (const auto& e : r.errors()) got.push_back(e.format());
  std::vector<std::string> want = {
      "lb.toml:2:11: lb.workers: must be >= 0, got -1",
      "lb.toml:3:13: lb.log_level: 'verbos' is not one of error, warn, info, debug",
      "lb.toml:5:10: listeners.web.listen: '127.0.0.1:70000': port must be 1-65535, got 70000",
      "lb.toml:6:11: listeners.web.cluster: cluster 'cahce' is not defined (did you mean "
      "'cache'?)",
      "lb.toml:7:30: listeners.web.hash[1]: unknown key 'coookie' (did you mean 'cookie'?)",
      "lb.toml:9:12: clusters.cache.selector: 'maglve' is not one of ring_hash, maglev, "
      "rendezvous, jump, ketama, twemproxy (did you mean 'maglev'?)",
      "lb.toml:12:12: clusters.cache.backends[1].name: backend name 'a' is already used by "
      "backends[0]",
      "lb.toml:12:45: clusters.cache.backends[1]: unknown key 'wieght' (did you mean 'weight'?)",
      "lb.toml:13:27: clusters.cache.backends[2].address: '127.0.0.1' has no port (use "
      "host:port, e.g. 127.0.0.1:9001 or [::1]:9001)",
      "lb.toml:13:49: clusters.cache.backends[2].weight: must be >= 1, got 0",
      "lb.toml:16:12: clusters.e.backends: lists no backends",
  };
  EXPECT_EQ(got, want);
}

TEST(ConfigErrorsTest, AListenerWithABadValueIsNotAlsoReportedAsMissingIt) {
  // A wrong type is one mistake, not two ("must be a string" and "missing").
  auto r = loadConfigString("[listeners.web]\nlisten = 8080\ncluster = \"cache\"\n" CACHE_CLUSTER,
                            "lb.toml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 1u);
  EXPECT_EQ(r.errors()[0].format(),
            "lb.toml:2:10: listeners.web.listen: must be a string, got integer");
}

TEST(ConfigErrorsTest, EmptyFileIsAValidConfigWithEveryDefault) {
  auto r = loadConfigString("", "empty.toml");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().listeners.empty());
  EXPECT_TRUE(r.value().clusters.empty());
}

}  // namespace
}  // namespace lb
