// The twemproxy selector against the real thing: redis-server and memcached instances on free
// loopback ports behind a nutcracker 0.5.0 (Debian's package) with its own nutcracker.yml;
// keys are stored through nutcracker, then found by asking each server directly, and every
// key's server must be the owner `lb analyze --config F --cluster C --key K` computes for a
// cluster with the same names, weights and hash. This is where what nobody published gets
// pinned: bytes >= 0x80, the empty key, crc16's high bits, the single-precision weights.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/analyze_json_test_util.h"
#include "tests/support/cache_server.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

// Keys of several shapes, a third of them with bytes >= 0x80 (UTF-8, and bytes that are not),
// none with whitespace or control characters (memcached's text protocol forbids them).
std::vector<std::string> testKeys(size_t count) {
  static const char* const kPrefixes[] = {"user:", "obj/", "caf\xc3\xa9:", "k", "\xff\x80-",
                                          "session:", "\xe4\xbd\xa0\xe5\xa5\xbd:"};
  std::vector<std::string> keys;
  for (size_t i = 0; i < count; ++i)
    keys.push_back(kPrefixes[i % 7] + std::to_string(i * 7919 % 100003));
  return keys;
}

// One nutcracker pool: its servers (started here), its nutcracker, and the equivalent lb
// config. Starts and stops every process it runs; the temporary directory goes with it.
// Servers are named s1, s2, ... unless `names` says otherwise.
class TwemproxyPool {
 public:
  TwemproxyPool(CacheServer::Kind kind, std::string hash, std::vector<uint32_t> weights,
                std::string distribution = "ketama", std::vector<std::string> names = {})
      : kind_(kind), hash_(std::move(hash)), weights_(std::move(weights)),
        distribution_(std::move(distribution)), names_(std::move(names)) {
    for (size_t i = names_.size(); i < weights_.size(); ++i)
      names_.push_back("s" + std::to_string(i + 1));
    char tmpl[] = "/tmp/lb_twemproxy_XXXXXX";
    if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  }
  ~TwemproxyPool() {
    if (nutcracker_) nutcracker_->stop();
    nutcracker_.reset();
    servers_.clear();
    for (const char* f : {"/nutcracker.yml", "/nutcracker.log", "/lb.toml"})
      unlink((dir_ + f).c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  TwemproxyPool(const TwemproxyPool&) = delete;
  TwemproxyPool& operator=(const TwemproxyPool&) = delete;

  // Empty on success, else what went wrong.
  std::string start() {
    if (dir_.empty()) return "mkdtemp failed";
    for (size_t i = 0; i < weights_.size(); ++i) {
      servers_.push_back(std::make_unique<CacheServer>(kind_));
      if (!servers_.back()->ok()) return servers_.back()->output();
    }
    // nutcracker cannot listen on port 0 and report it: take a free port and retry if another
    // process wins it. In the foreground, so that this Process owns its pid (nutcracker writes
    // a -p pid file only with -d).
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = freePort();
      writeFile("/nutcracker.yml", nutcrackerYml());
      nutcracker_ = std::make_unique<Process>(std::vector<std::string>{
          "nutcracker", "-c", dir_ + "/nutcracker.yml", "-o", dir_ + "/nutcracker.log", "-s",
          std::to_string(freePort()), "-a", "127.0.0.1"});
      bool up = false;
      for (int i = 0; i < 500 && !up && nutcracker_->running(); ++i) up = waitForPort(port_, 10ms);
      if (up && nutcracker_->running()) {
        writeFile("/lb.toml", lbToml());
        return "";
      }
    }
    return "nutcracker did not start: " + nutcracker_->output() + readFile("/nutcracker.log");
  }

  // Stores `key` through nutcracker; false when nutcracker did not acknowledge it.
  bool store(TcpClient& c, const std::string& key) {
    if (kind_ == CacheServer::kRedis) return redisCall(c, {"SET", key, "v"}) == "OK";
    if (!c.send("set " + key + " 0 0 1\r\nv\r\n") || !c.readUntil("\r\n")) return false;
    return c.take(c.buffer().find("\r\n") + 2) == "STORED\r\n";
  }

  // The name of the server ("s1"...) that holds `key`, asked directly; "" when none does,
  // "many" when more than one.
  std::string holder(std::vector<std::unique_ptr<TcpClient>>& direct, const std::string& key) {
    std::string found;
    for (size_t i = 0; i < direct.size(); ++i) {
      bool has = false;
      if (kind_ == CacheServer::kRedis) {
        has = redisCall(*direct[i], {"EXISTS", key}) == "1";
      } else if (direct[i]->send("get " + key + "\r\n") && direct[i]->readUntil("END\r\n")) {
        has = direct[i]->buffer().rfind("VALUE ", 0) == 0;
        direct[i]->take(direct[i]->buffer().find("END\r\n") + 5);
      }
      if (has) found = found.empty() ? name(i) : "many";
    }
    return found;
  }

  // Each key's owner under lb's twemproxy selector, from one `lb analyze --config` run.
  std::vector<std::string> lbOwners(const std::vector<std::string>& keys, std::string* error) {
    std::vector<std::string> argv = {builtBinary("lb"), "analyze", "--config", dir_ + "/lb.toml",
                                     "--cluster", "pool"};
    for (const auto& k : keys) argv.insert(argv.end(), {"--key", k});
    const auto r = runCommand(argv, 60s);
    std::vector<std::string> owners;
    if (r.exit_code != 0) {
      *error = "lb analyze exit " + std::to_string(r.exit_code) + ": " + r.err;
      return owners;
    }
    size_t start = 0;
    while (start < r.out.size()) {
      const size_t end = r.out.find('\n', start);
      const auto line = testjson::parse(r.out.substr(start, end - start));
      const bool has_order = line && !(*line)["order"].items.empty();
      owners.push_back(has_order ? (*line)["order"].items.front().text : "?");
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return owners;
  }

  // lb in front of the same servers, with a listener of the pool's protocol; its port, or 0
  // when it did not start (*error says why).
  uint16_t startLb(LbProcess& lb, std::string* error) {
    const uint16_t port = freePort();
    const std::string toml = "[lb]\nworkers = 2\naccess_log = \"\"\n[listeners.cache]\n"
                             "listen = \"127.0.0.1:" + std::to_string(port) + "\"\nprotocol = \"" +
                             (kind_ == CacheServer::kRedis ? "redis" : "memcached") +
                             "\"\ncluster = \"pool\"\n" + lbToml();
    if (lb.start(toml, {port})) return port;
    *error = lb.output();
    return 0;
  }

  // Reads `key` through c; whether it was found with the value store() wrote.
  bool found(TcpClient& c, const std::string& key) {
    if (kind_ == CacheServer::kRedis) return redisCall(c, {"GET", key}) == "v";
    if (!c.send("get " + key + "\r\n") || !c.readUntil("END\r\n")) return false;
    return c.take(c.buffer().find("END\r\n") + 5) ==
           "VALUE " + key + " 0 1\r\nv\r\nEND\r\n";
  }

  uint16_t port() const { return port_; }
  size_t size() const { return servers_.size(); }
  uint16_t serverPort(size_t i) const { return servers_[i]->port(); }
  const std::string& name(size_t i) const { return names_[i]; }

 private:
  std::string nutcrackerYml() const {
    std::string yml = "pool:\n  listen: 127.0.0.1:" + std::to_string(port_) + "\n  hash: " +
                      hash_ + "\n  distribution: " + distribution_ + "\n  redis: " +
                      (kind_ == CacheServer::kRedis ? "true" : "false") +
                      "\n  auto_eject_hosts: false\n  servers:\n";
    for (size_t i = 0; i < servers_.size(); ++i)
      yml += "   - " + servers_[i]->address() + ":" + std::to_string(weights_[i]) + " " +
             name(i) + "\n";
    return yml;
  }
  std::string lbToml() const {
    std::string toml = "[clusters.pool]\nselector = \"twemproxy\"\ntwemproxy = { hash = \"" +
                       hash_ + "\", distribution = \"" + distribution_ + "\" }\nbackends = [\n";
    for (size_t i = 0; i < servers_.size(); ++i)
      toml += "  { name = \"" + name(i) + "\", address = \"" + servers_[i]->address() +
              "\", weight = " + std::to_string(weights_[i]) + " },\n";
    return toml + "]\n";
  }
  void writeFile(const char* name, const std::string& text) {
    std::ofstream(dir_ + name) << text;
  }
  std::string readFile(const char* name) const {
    std::ifstream in(dir_ + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  CacheServer::Kind kind_;
  std::string hash_;
  std::vector<uint32_t> weights_;
  std::string distribution_;
  std::vector<std::string> names_;
  std::string dir_;
  std::vector<std::unique_ptr<CacheServer>> servers_;
  std::unique_ptr<Process> nutcracker_;
  uint16_t port_ = 0;
};

// Stores every key through nutcracker, finds each on the servers, and compares with lb.
// Returns how many keys each server holds, to show the test spread keys over all of them.
void expectSamePlacement(TwemproxyPool& pool, const std::vector<std::string>& keys,
                         std::map<std::string, int>* per_server = nullptr) {
  TcpClient through;
  ASSERT_TRUE(through.connect(pool.port()));
  for (const auto& key : keys) ASSERT_TRUE(pool.store(through, key)) << key;
  std::vector<std::unique_ptr<TcpClient>> direct;
  for (size_t i = 0; i < pool.size(); ++i) {
    direct.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(direct.back()->connect(pool.serverPort(i)));
  }
  std::string error;
  const auto owners = pool.lbOwners(keys, &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(owners.size(), keys.size());
  int mismatches = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    const std::string held = pool.holder(direct, keys[k]);
    if (per_server) ++(*per_server)[held];
    if (held != owners[k] && ++mismatches <= 10)
      ADD_FAILURE() << "key '" << keys[k] << "': nutcracker stored it on '" << held
                    << "', lb says '" << owners[k] << "'";
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(TwemproxyCompatTest, RedisFnv1a64EqualWeights) {
  TwemproxyPool pool(CacheServer::kRedis, "fnv1a_64", {1, 1, 1});
  const std::string error = pool.start();
  ASSERT_TRUE(error.empty()) << error;
  std::map<std::string, int> per_server;
  expectSamePlacement(pool, testKeys(300), &per_server);
  for (size_t i = 0; i < pool.size(); ++i)
    EXPECT_GT(per_server[pool.name(i)], 10) << pool.name(i);
}

TEST(TwemproxyCompatTest, RedisMurmurEqualWeights) {
  TwemproxyPool pool(CacheServer::kRedis, "murmur", {1, 1, 1});
  const std::string error = pool.start();
  ASSERT_TRUE(error.empty()) << error;
  std::map<std::string, int> per_server;
  expectSamePlacement(pool, testKeys(300), &per_server);
  for (size_t i = 0; i < pool.size(); ++i)
    EXPECT_GT(per_server[pool.name(i)], 30) << pool.name(i);
}

// 10 : 21 : 29 of 60 gives s1 80 points, s2 168 and s3 228 in nutcracker's float arithmetic;
// exact arithmetic would give s3 232, and the four extra points (MD5 of "s3-57") would take
// "weight:100", "weight:290", "weight:308" and "weight:461" from s2 (found by searching
// murmur hashes against both continuums).
TEST(TwemproxyCompatTest, RedisMurmurUnequalWeights) {
  TwemproxyPool pool(CacheServer::kRedis, "murmur", {10, 21, 29});
  const std::string error = pool.start();
  ASSERT_TRUE(error.empty()) << error;
  auto keys = testKeys(300);
  keys.insert(keys.end(), {"weight:100", "weight:290", "weight:308", "weight:461"});
  std::map<std::string, int> per_server;
  expectSamePlacement(pool, keys, &per_server);
  EXPECT_LT(per_server["s1"], per_server["s3"]);
}

TEST(TwemproxyCompatTest, MemcachedFnv1a64EqualWeights) {
  TwemproxyPool pool(CacheServer::kMemcached, "fnv1a_64", {1, 1, 1});
  const std::string error = pool.start();
  ASSERT_TRUE(error.empty()) << error;
  expectSamePlacement(pool, testKeys(300));
}

TEST(TwemproxyCompatTest, MemcachedMurmurUnequalWeights) {
  TwemproxyPool pool(CacheServer::kMemcached, "murmur", {1, 3, 7});
  const std::string error = pool.start();
  ASSERT_TRUE(error.empty()) << error;
  expectSamePlacement(pool, testKeys(300));
}

// Every other hash twemproxy offers, on fewer keys, with the empty key (hashed as 0) too.
TEST(TwemproxyCompatTest, RedisEveryOtherHash) {
  auto keys = testKeys(70);
  keys.push_back("");
  for (const char* hash : {"fnv1_64", "fnv1a_32", "fnv1_32", "md5", "crc32a", "crc32", "crc16",
                           "one_at_a_time", "jenkins", "hsieh"}) {
    SCOPED_TRACE(hash);
    TwemproxyPool pool(CacheServer::kRedis, hash, {1, 2, 1});
    const std::string error = pool.start();
    ASSERT_TRUE(error.empty()) << error;
    expectSamePlacement(pool, keys);
  }
}

// What nutcracker wrote, lb reads: every key stored through nutcracker is found through an lb
// listener of the same protocol in front of the same servers.
void expectFoundThroughLb(CacheServer::Kind kind, const char* hash,
                          const char* distribution = "ketama",
                          std::vector<uint32_t> weights = {1, 1, 1},
                          std::vector<std::string> names = {}) {
  SCOPED_TRACE(std::string(hash) + " " + distribution);
  TwemproxyPool pool(kind, hash, std::move(weights), distribution, std::move(names));
  std::string error = pool.start();
  ASSERT_TRUE(error.empty()) << error;
  const auto keys = testKeys(200);
  TcpClient through;
  ASSERT_TRUE(through.connect(pool.port()));
  for (const auto& key : keys) ASSERT_TRUE(pool.store(through, key)) << key;
  LbProcess lb;
  const uint16_t port = pool.startLb(lb, &error);
  ASSERT_NE(port, 0) << error;
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  int missing = 0;
  for (const auto& key : keys)
    if (!pool.found(c, key) && ++missing <= 10) ADD_FAILURE() << "'" << key << "' not found";
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(lb.process().stop(), 0) << lb.output();
}

TEST(TwemproxyCompatTest, RedisKeysWrittenThroughNutcrackerAreFoundThroughLb) {
  expectFoundThroughLb(CacheServer::kRedis, "fnv1a_64");
  expectFoundThroughLb(CacheServer::kRedis, "murmur");
}

TEST(TwemproxyCompatTest, MemcachedKeysWrittenThroughNutcrackerAreFoundThroughLb) {
  expectFoundThroughLb(CacheServer::kMemcached, "fnv1a_64");
  expectFoundThroughLb(CacheServer::kMemcached, "murmur");
}

// distribution: ketama, where two servers' points tie: MD5("t307-30") and MD5("t570-31")
// share the word 3770804139 (found by a birthday search over names tN). nutcracker's sort of
// the servers by name puts t307's point first, whatever the file's order, so keys hashing
// just below it ("tie:44", "tie:182", "tie:348" under murmur) belong to t307.
TEST(TwemproxyCompatTest, RedisKetamaTiedPointsGoToTheServerFirstByName) {
  TwemproxyPool pool(CacheServer::kRedis, "murmur", {1, 1}, "ketama", {"t570", "t307"});
  const std::string error = pool.start();
  ASSERT_TRUE(error.empty()) << error;
  auto keys = testKeys(50);
  keys.insert(keys.end(), {"tie:44", "tie:182", "tie:348"});
  expectSamePlacement(pool, keys);
}

// distribution: modula. The names are out of order on purpose: nutcracker sorts a pool's
// servers by name (conf_validate_server; shorter names first), so its list is b, zeta, zeta,
// alpha here, not the file's zeta, zeta, b, alpha; a modula that kept the file's order would
// put most keys elsewhere.
const std::vector<std::string> kUnsortedNames = {"zeta", "b", "alpha"};

void expectModulaPlacement(CacheServer::Kind kind, const char* hash,
                           const std::vector<std::string>& keys) {
  SCOPED_TRACE(hash);
  TwemproxyPool pool(kind, hash, {2, 1, 1}, "modula", kUnsortedNames);
  const std::string error = pool.start();
  ASSERT_TRUE(error.empty()) << error;
  std::map<std::string, int> per_server;
  expectSamePlacement(pool, keys, &per_server);
  for (size_t i = 0; i < pool.size(); ++i) EXPECT_GT(per_server[pool.name(i)], 20) << pool.name(i);
}

TEST(TwemproxyCompatTest, RedisModulaWeights1And2PlacesAsNutcracker) {
  auto keys = testKeys(300);
  keys.push_back("");   // hashed as 0: the first server of nutcracker's order, b
  expectModulaPlacement(CacheServer::kRedis, "fnv1a_64", keys);
  expectModulaPlacement(CacheServer::kRedis, "murmur", keys);
}

TEST(TwemproxyCompatTest, MemcachedModulaWeights1And2PlacesAsNutcracker) {
  expectModulaPlacement(CacheServer::kMemcached, "fnv1a_64", testKeys(300));
  expectModulaPlacement(CacheServer::kMemcached, "murmur", testKeys(300));
}

TEST(TwemproxyCompatTest, RedisModulaKeysWrittenThroughNutcrackerAreFoundThroughLb) {
  for (const char* hash : {"fnv1a_64", "murmur"})
    expectFoundThroughLb(CacheServer::kRedis, hash, "modula", {2, 1, 1}, kUnsortedNames);
}

TEST(TwemproxyCompatTest, MemcachedModulaKeysWrittenThroughNutcrackerAreFoundThroughLb) {
  for (const char* hash : {"fnv1a_64", "murmur"})
    expectFoundThroughLb(CacheServer::kMemcached, hash, "modula", {2, 1, 1}, kUnsortedNames);
}

}  // namespace
}  // namespace lb::test
