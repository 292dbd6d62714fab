// loadBackendListToml (lb/config/backends.h): a TOML file holding only `backends = [...]`,
// which `lb membership put` accepts besides JSON, read and checked as a cluster's own list.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/config/backends.h"

namespace lb {
namespace {

std::vector<std::string> errorsOf(const std::string& text, const ClusterConfig& settings = {}) {
  std::vector<std::string> out;
  auto list = loadBackendListToml(text, "m.toml", settings);
  if (list.ok()) return out;
  for (const auto& e : list.errors()) out.push_back(e.format());
  return out;
}

TEST(ConfigBackendListTest, ReadsTheListWithDefaults) {
  auto list = loadBackendListToml(
      "backends = [\n  { name = \"a\", address = \"127.0.0.1:9001\", weight = 2 },\n"
      "  { name = \"b\", address = \"127.0.0.1:9002\", hash_key = \"bee\" },\n]\n",
      "m.toml", ClusterConfig{});
  ASSERT_TRUE(list.ok()) << list.errors()[0].format();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].weight, 2u);
  EXPECT_EQ((*list)[0].hash_key, "");
  EXPECT_EQ((*list)[1].hash_key, "bee");
}

TEST(ConfigBackendListTest, ErrorsAtTheirPositionsWithBackendsPaths) {
  EXPECT_EQ(errorsOf("backends = [\n"
                     "  { name = \"a\", address = \"127.0.0.1:9001\" },\n"
                     "  { name = \"a\", address = \"127.0.0.1:9002\", weight = 0 },\n"
                     "]\n"),
            (std::vector<std::string>{
                "m.toml:3:12: backends[1].name: backend name 'a' is already used by backends[0]",
                "m.toml:3:54: backends[1].weight: must be >= 1, got 0"}));
}

TEST(ConfigBackendListTest, AnythingButBackendsIsAnUnknownKey) {
  EXPECT_EQ(errorsOf("backend = []\n"),
            (std::vector<std::string>{"m.toml:1:1: missing required key 'backends'",
                                      "m.toml:1:1: unknown key 'backend' (did you mean "
                                      "'backends'?)"}));
}

TEST(ConfigBackendListTest, EmptyListListsNoBackends) {
  EXPECT_EQ(errorsOf("backends = []\n"),
            std::vector<std::string>{"m.toml:1:12: backends: lists no backends"});
}

TEST(ConfigBackendListTest, TheClustersSelectorRulesApply) {
  ClusterConfig jump;
  jump.name = "shards";
  jump.selector = "jump";
  EXPECT_EQ(errorsOf("backends = [ { name = \"a\", address = \"127.0.0.1:9001\", weight = 3 } ]\n",
                     jump),
            std::vector<std::string>{"m.toml:1:65: backends[0].weight: jump has no weights "
                                     "(shards are numbered); remove weight or use rendezvous"});
}

TEST(ConfigBackendListTest, TomlSyntaxErrorAtItsPosition) {
  const auto errs = errorsOf("backends = [\n  { name = \"a\" address = \"x\" }\n]\n");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].substr(0, 11), "m.toml:2:16") << errs[0];
}

}  // namespace
}  // namespace lb
