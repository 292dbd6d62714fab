// Backend addresses that name a host: the loader asks a NameResolver about every name and
// reports one that does not resolve at its file:line:col, resolve_interval is read and
// bounded, and a new address for a name (lb/routing/readdress.h) moves no key.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "lb/config/config.h"
#include "lb/core/address.h"
#include "lb/routing/readdress.h"
#include "lb/routing/snapshot.h"

namespace lb {
namespace {

using Known = std::map<std::string, std::string>;   // name -> IP

// Answers from a fixed table instead of the system resolver; records what it was asked.
class TableResolver final : public NameResolver {
 public:
  explicit TableResolver(Known known) : known_(std::move(known)) {}
  std::vector<std::string> resolve(const std::vector<std::string>& names) override {
    asked.push_back(names);
    std::vector<std::string> why;
    for (const auto& n : names)
      why.push_back(known_.count(n) ? "" : "Name or service not known");
    return why;
  }
  // The answers as buildSnapshot takes them (port 0: each backend sets its own).
  ResolvedHosts hosts() const {
    ResolvedHosts out;
    for (const auto& [name, ip] : known_) {
      std::string error;
      ResolvedAddress a;
      EXPECT_TRUE(parseAddress(ip + ":1", &a.address, &a.len, &error)) << error;
      setAddressPort(&a.address, 0);
      out[name] = a;
    }
    return out;
  }
  std::vector<std::vector<std::string>> asked;

 private:
  Known known_;
};

const char kNamed[] =
    "[clusters.cache]\n"
    "selector = \"ring_hash\"\n"
    "resolve_interval = \"30s\"\n"
    "backends = [\n"
    "  { name = \"a\", address = \"cache-a.internal:9001\" },\n"
    "  { name = \"b\", address = \"cache-b.internal:9002\" },\n"
    "  { name = \"c\", address = \"127.0.0.1:9003\" },\n"
    "  { name = \"a2\", address = \"cache-a.internal:9004\" },\n"
    "]\n";

std::vector<std::string> errorsOf(const Result<Config>& r) {
  std::vector<std::string> out;
  if (!r.ok())
    for (const auto& e : r.errors()) out.push_back(e.format());
  return out;
}

TEST(ConfigNamesTest, AsksAboutEachDistinctNameOnceInFileOrder) {
  TableResolver resolver({{"cache-a.internal", "10.0.0.1"}, {"cache-b.internal", "10.0.0.2"}});
  auto r = loadConfigString(kNamed, "lb.toml", &resolver);
  ASSERT_TRUE(r.ok()) << errorsOf(r)[0];
  ASSERT_EQ(resolver.asked.size(), 1u);
  EXPECT_EQ(resolver.asked[0], (std::vector<std::string>{"cache-a.internal", "cache-b.internal"}));
  EXPECT_EQ(r.value().clusters[0].resolve_interval, Duration{30000});
}

TEST(ConfigNamesTest, ANameThatDoesNotResolveIsAnErrorAtItsAddress) {
  TableResolver resolver(Known{{"cache-a.internal", "10.0.0.1"}});
  auto r = loadConfigString(kNamed, "lb.toml", &resolver);
  EXPECT_EQ(errorsOf(r),
            (std::vector<std::string>{
                "lb.toml:6:27: clusters.cache.backends[1].address: cannot resolve "
                "'cache-b.internal': Name or service not known"}));
}

TEST(ConfigNamesTest, ResolutionErrorsComeWithTheOtherErrorsInFileOrder) {
  TableResolver resolver(Known{});
  std::string text = kNamed;
  text.insert(text.find("backends"), "retries = -1\n");
  auto r = loadConfigString(text, "lb.toml", &resolver);
  std::vector<std::string> errors = errorsOf(r);
  ASSERT_EQ(errors.size(), 4u) << ::testing::PrintToString(errors);
  EXPECT_NE(errors[0].find("clusters.cache.retries"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("backends[0].address: cannot resolve 'cache-a.internal'"),
            std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("backends[1].address: cannot resolve 'cache-b.internal'"),
            std::string::npos) << errors[2];
  EXPECT_NE(errors[3].find("backends[3].address: cannot resolve 'cache-a.internal'"),
            std::string::npos) << errors[3];
}

TEST(ConfigNamesTest, WithoutAResolverNamesAreCheckedForSyntaxOnly) {
  EXPECT_TRUE(loadConfigString(kNamed, "lb.toml").ok());
  std::string bad = kNamed;
  bad.replace(bad.find("cache-b.internal"), 16, "cache-b..internal");
  auto r = loadConfigString(bad, "lb.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(errorsOf(r)[0].find("neither a numeric IPv4 address"), std::string::npos)
      << errorsOf(r)[0];
}

TEST(ConfigNamesTest, ResolveIntervalIsOffByDefaultAndAtLeastASecond) {
  std::string off = kNamed;
  off.erase(off.find("resolve_interval"), std::string("resolve_interval = \"30s\"\n").size());
  auto r = loadConfigString(off, "lb.toml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().clusters[0].resolve_interval, Duration{0});
  std::string fast = kNamed;
  fast.replace(fast.find("\"30s\""), 5, "\"500ms\"");
  EXPECT_EQ(errorsOf(loadConfigString(fast, "lb.toml")),
            (std::vector<std::string>{"lb.toml:3:20: clusters.cache.resolve_interval: must be 0 "
                                      "(off) or at least 1s, got 500ms"}));
}

TEST(ConfigNamesTest, ListenAddressesStayNumeric) {
  auto r = loadConfigString(
      std::string("[listeners.web]\nlisten = \"localhost:8080\"\ncluster = \"cache\"\n") +
          kNamed,
      "lb.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(errorsOf(r)[0].find("listeners.web.listen: 'localhost:8080': a listen address is "
                                "numeric"),
            std::string::npos)
      << errorsOf(r)[0];
}

std::shared_ptr<const Snapshot> build(const char* text, const ResolvedHosts& hosts,
                                      StateRegistry& registry) {
  auto config = loadConfigString(text, "lb.toml");
  EXPECT_TRUE(config.ok());
  auto snap = buildSnapshot(std::move(config.value()), registry, 1, &hosts);
  EXPECT_TRUE(snap.ok()) << (snap.ok() ? "" : snap.errors()[0].format());
  return snap.value();
}

std::string addressOf(const BackendSnapshot& b) {
  return formatAddress(reinterpret_cast<const sockaddr*>(&b.address));
}

TEST(ConfigNamesTest, SnapshotTakesEachNamesAnswerWithTheBackendsPort) {
  StateRegistry registry(1);
  TableResolver resolver({{"cache-a.internal", "10.0.0.1"}, {"cache-b.internal", "10.0.0.2"}});
  auto snap = build(kNamed, resolver.hosts(), registry);
  const auto& backends = snap->clusters[0].backends;
  EXPECT_EQ(addressOf(backends[0]), "10.0.0.1:9001");
  EXPECT_EQ(addressOf(backends[1]), "10.0.0.2:9002");
  EXPECT_EQ(addressOf(backends[2]), "127.0.0.1:9003");
  EXPECT_EQ(addressOf(backends[3]), "10.0.0.1:9004");
  // A name nobody resolved cannot be built: the loader's resolver must have run first.
  StateRegistry other(1);
  auto config = loadConfigString(kNamed, "lb.toml");
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(buildSnapshot(std::move(config.value()), other, 1, nullptr).ok());
}

TEST(ConfigNamesTest, ANewAddressMovesNoKey) {
  StateRegistry registry(1);
  TableResolver before({{"cache-a.internal", "10.0.0.1"}, {"cache-b.internal", "10.0.0.2"}});
  auto snap = build(kNamed, before.hosts(), registry);
  TableResolver after({{"cache-a.internal", "10.0.0.9"}, {"cache-b.internal", "10.0.0.2"}});
  const uint32_t clusters[] = {0};
  std::vector<AddressChange> changes = addressChanges(*snap, clusters, after.hosts());
  ASSERT_EQ(changes.size(), 2u);   // both backends that name cache-a.internal, nothing else
  EXPECT_EQ(changes[0].backend, 0u);
  EXPECT_EQ(changes[1].backend, 3u);
  auto moved = withAddresses(*snap, changes);
  const ClusterSnapshot& c0 = snap->clusters[0];
  const ClusterSnapshot& c1 = moved->clusters[0];
  EXPECT_EQ(c1.table, c0.table) << "a new address must not rebuild the selector table";
  EXPECT_EQ(moved->generation, snap->generation);
  for (uint64_t h = 0; h < 100000; ++h)
    ASSERT_EQ(c1.table->pick(h * 0x9E3779B97F4A7C15ull, 0), c0.table->pick(h * 0x9E3779B97F4A7C15ull, 0));
  EXPECT_EQ(addressOf(c1.backends[0]), "10.0.0.9:9001");
  EXPECT_EQ(addressOf(c1.backends[1]), "10.0.0.2:9002");
  EXPECT_EQ(addressOf(c1.backends[3]), "10.0.0.9:9004");
  EXPECT_EQ(addressOf(c0.backends[0]), "10.0.0.1:9001") << "the running snapshot is unchanged";
  for (size_t i = 0; i < c1.backends.size(); ++i) {
    EXPECT_EQ(c1.backends[i].state, c0.backends[i].state) << "counters and health carry over";
    EXPECT_EQ(c1.backends[i].config, &moved->config.clusters[0].backends[i]);
  }
  // Same answer again: nothing to do.
  EXPECT_TRUE(addressChanges(*moved, clusters, after.hosts()).empty());
  // A name missing from the answers (it failed this time) keeps its address.
  TableResolver partial(Known{{"cache-b.internal", "10.0.0.2"}});
  EXPECT_TRUE(addressChanges(*moved, clusters, partial.hosts()).empty());
}

}  // namespace
}  // namespace lb
