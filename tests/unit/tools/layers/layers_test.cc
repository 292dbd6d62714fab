// The include-direction check of docs/architecture.md ("Layers"): the repository passes it,
// and a deliberately wrong include in a scratch tree is caught with its file, line and rule.
#include "tools/layers/layers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace lb::layers {
namespace {

namespace fs = std::filesystem;

// A scratch source tree, removed at the end of the test.
class Tree {
 public:
  Tree() {
    char tmpl[] = "/tmp/lb-layers-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  ~Tree() { fs::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + path).parent_path());
    std::ofstream(root_ + "/" + path) << text;
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(LayersTest, RepositoryIncludesPointDownward) {
  auto violations = checkTree(LB_SOURCE_DIR);
  for (const auto& v : violations) ADD_FAILURE() << describe(v);
  EXPECT_TRUE(violations.empty());
}

TEST(LayersTest, RepositoryHasNoIncludeCycles) {
  auto cycles = findCycles(LB_SOURCE_DIR);
  for (const auto& c : cycles) ADD_FAILURE() << "include cycle: " << c;
  EXPECT_TRUE(cycles.empty());
}

TEST(LayersTest, RuntimeIncludingAProtocolIsReportedWithFileLineAndRule) {
  Tree t;
  t.write("lb/runtime/listener.cc",
          "#include \"lb/runtime/listener.h\"\n\n#include <uv.h>\n#include \"lb/proxy/http/http_session.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(describe(v[0]),
            "lb/runtime/listener.cc:4: includes lb/proxy/http/http_session.h: runtime may "
            "include core, plugins, net, tls, http, config, hotkeys, routing, health");
}

TEST(LayersTest, CoreMayIncludeNothingOfLbs) {
  Tree t;
  t.write("lb/core/log.h", "#pragma once\n#include \"lb/config/config.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].file, "lb/core/log.h");
  EXPECT_EQ(v[0].line, 2);
  EXPECT_EQ(v[0].rule, "core may include nothing of lb's");
}

TEST(LayersTest, OneProtocolNeverIncludesAnother) {
  Tree t;
  t.write("lb/proxy/redis/redis_session.cc", "#include \"lb/proxy/tcp/tcp_session.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].rule.find("a protocol folder never includes another"), std::string::npos);
}

TEST(LayersTest, RedisAndMemcachedStandOnTheCacheEngine) {
  Tree t;
  t.write("lb/proxy/redis/redis_session.h", "#include \"lb/proxy/cache/cache_session.h\"\n");
  t.write("lb/proxy/memcached/memcached_session.h",
          "#include \"lb/proxy/cache/cache_session.h\"\n");
  EXPECT_TRUE(checkTree(t.root()).empty());
}

TEST(LayersTest, HttpIncludingTheCacheEngineIsReported) {
  Tree t;
  t.write("lb/proxy/http/http_session.cc", "#include \"lb/proxy/cache/byte_chain.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].file, "lb/proxy/http/http_session.cc");
  EXPECT_EQ(v[0].included, "lb/proxy/cache/byte_chain.h");
}

TEST(LayersTest, TheCacheEngineNeverIncludesAProtocol) {
  Tree t;
  t.write("lb/proxy/cache/cache_session.cc", "#include \"lb/proxy/redis/resp.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].line, 1);
}

TEST(LayersTest, RuntimeIncludingTheCacheEngineIsReported) {
  Tree t;
  t.write("lb/runtime/worker_env.h", "#pragma once\n#include \"lb/proxy/cache/cache_worker.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(describe(v[0]),
            "lb/runtime/worker_env.h:2: includes lb/proxy/cache/cache_worker.h: runtime may "
            "include core, plugins, net, tls, http, config, hotkeys, routing, health");
}

// The operator commands live in lb/cli/NAME, each with its own rule, and stay out of the
// proxy: `lb hotkeys` reads /hotkeys over HTTP and knows nothing of routing.
TEST(LayersTest, AnOperatorCommandIncludesOnlyWhatItsFolderStandsOn) {
  Tree t;
  t.write("lb/cli/hotkeys/hotkeys_cli.cc", "#include \"lb/routing/snapshot.h\"\n");
  t.write("lb/cli/simulate/model.cc", "#include \"lb/cli/analyze/report.h\"\n");
  t.write("lb/cli/analyze/report.cc", "#include \"lb/runtime/worker.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(describe(v[0]),
            "lb/cli/analyze/report.cc:1: includes lb/runtime/worker.h: cli/analyze may include "
            "core, plugins, config, hotkeys, routing");
  EXPECT_EQ(describe(v[1]),
            "lb/cli/hotkeys/hotkeys_cli.cc:1: includes lb/routing/snapshot.h: cli/hotkeys may "
            "include core, net, http");
}

TEST(LayersTest, LowerLayersAreReachableThroughTheChain) {
  Tree t;
  // routing stands on config, config on plugins, plugins on core.
  t.write("lb/routing/snapshot.cc",
          "#include \"lb/config/config.h\"\n#include \"plugins/selector.h\"\n#include \"lb/core/log.h\"\n");
  t.write("lb/app/main.cc", "#include \"lb/proxy/http/http_session.h\"\n");
  EXPECT_TRUE(checkTree(t.root()).empty());
}

TEST(LayersTest, TheOriginStandsOnCoreNetAndHttpOnly) {
  Tree t;
  t.write("tools/origin/respond.cc",
          "#include \"lb/http/parser.h\"\n#include \"plugins/keys/key_plugins.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].included, "plugins/keys/key_plugins.h");
  EXPECT_EQ(v[0].rule, "tools/origin may include core, net, http");
}

TEST(LayersTest, NetIncludingHttpIsReported) {
  Tree t;
  t.write("lb/net/connection.cc", "#include \"lb/net/connection.h\"\n#include \"lb/http/parser.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(describe(v[0]),
            "lb/net/connection.cc:2: includes lb/http/parser.h: net may include core");
}

TEST(LayersTest, MembershipStandsOnCoreNetHttpAndConfig) {
  Tree t;
  t.write("lb/membership/etcd_client.cc",
          "#include \"lb/net/connection.h\"\n#include \"lb/http/parser.h\"\n"
          "#include \"lb/config/config.h\"\n#include \"lb/core/log.h\"\n");
  t.write("lb/app/run.cc", "#include \"lb/membership/etcd_client.h\"\n");
  EXPECT_TRUE(checkTree(t.root()).empty());
}

TEST(LayersTest, AdminIncludingMembershipIsReported) {
  Tree t;
  t.write("lb/admin/routes.cc", "#include \"lb/admin/routes.h\"\n#include \"lb/membership/etcd_client.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(describe(v[0]),
            "lb/admin/routes.cc:2: includes lb/membership/etcd_client.h: admin may include "
            "core, plugins, net, http, config, hotkeys, routing");
}

TEST(LayersTest, MembershipIncludingRoutingIsReported) {
  Tree t;
  t.write("lb/membership/membership_source.cc", "#include \"lb/routing/snapshot.h\"\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "membership may include core, plugins, net, tls, http, config");
}

TEST(LayersTest, AFileDirectlyUnderLbIsReported) {
  Tree t;
  t.write("lb/stray.cc", "int x;\n");
  auto v = checkTree(t.root());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].file, "lb/stray.cc");
}

TEST(LayersTest, ACycleThroughAnImplementationFileIsFound) {
  Tree t;
  t.write("lb/runtime/a.h", "#pragma once\n");
  t.write("lb/runtime/a.cc", "#include \"lb/runtime/a.h\"\n#include \"lb/runtime/b.h\"\n");
  t.write("lb/runtime/b.h", "#pragma once\n");
  t.write("lb/runtime/b.cc", "#include \"lb/runtime/b.h\"\n#include \"lb/runtime/a.h\"\n");
  auto c = findCycles(t.root());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], "lb/runtime/a -> lb/runtime/b -> lb/runtime/a");
}

}  // namespace
}  // namespace lb::layers
