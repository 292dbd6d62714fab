// The TOML configuration (docs/config.md) as plain typed structs. config_loader.cc fills them
// from a file and validates the whole file before anything starts; everything else in lb
// reads these structs and never touches TOML.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lb/core/duration.h"
#include "lb/core/log.h"
#include "lb/core/result.h"
#include "plugins/key.h"

namespace lb {

enum class Protocol { kHttp, kTcp };
inline constexpr size_t kProtocolCount = 2;
// As the config spells it: "http", "tcp".
inline const char* protocolName(Protocol p) noexcept { return p == Protocol::kHttp ? "http" : "tcp"; }
enum class OnMissingKey { kRandom, kRoundRobin, kReject };

struct Timeouts {
  Duration connect{1000};
  Duration header{10000};
  Duration idle{60000};
};

struct Limits {
  uint32_t max_header_bytes = 65536;
  uint32_t max_connections = 100000;
};

struct ListenerConfig {
  std::string name;
  std::string listen;      // "host:port" or "[v6]:port", validated by the loader
  Protocol protocol = Protocol::kHttp;
  std::string cluster;
  std::vector<HashPolicy> hash;
  // false: the hash entries are alternatives, the first that yields a key wins; true: they
  // are combined into one hash as Envoy combines hash policies (plugins/keys/key_chain.h).
  bool combine = false;
  OnMissingKey on_missing_key = OnMissingKey::kRandom;
  Timeouts timeouts;
  Limits limits;
  SourcePos pos;
};

struct BackendConfig {
  std::string name;
  std::string address;     // "host:port": numeric, or a host name resolved by lb/app
  uint32_t weight = 1;
  std::string hash_key;    // defaults to name
  SourcePos pos;
};

struct ClusterConfig {
  std::string name;
  std::string selector = "ring_hash";
  uint32_t hash_balance_factor = 0;   // 0 = bounded loads off; else percent > 100
  uint32_t retries = 2;
  uint32_t vnodes = 160;              // ring_hash.vnodes
  uint64_t table_size = 65537;        // maglev.table_size
  std::string twemproxy_hash = "fnv1a_64";   // twemproxy.hash: the key hash of selector twemproxy
  Duration resolve_interval{0};       // re-resolve backend host names this often; 0 = never
  std::vector<BackendConfig> backends;
  SourcePos pos;
};

struct Config {
  std::string file;                   // path it was loaded from ("" for in-memory)
  uint32_t workers = 0;               // 0 = one per core
  LogLevel log_level = LogLevel::kInfo;
  std::string access_log = "-";
  std::string admin_listen = "127.0.0.1:9901";
  Duration drain_timeout{30000};
  std::vector<ListenerConfig> listeners;   // in file order
  std::vector<ClusterConfig> clusters;     // in file order

  const ClusterConfig* findCluster(const std::string& name) const;
};

// Looks up the host names of backend addresses for the loader, so that a name that does not
// resolve is reported like any other mistake: at its position, with the others, in file order.
// The loader stays free of I/O; lb/app/resolver.h implements this with uv_getaddrinfo on the
// main thread and keeps the answers for the snapshot.
class NameResolver {
 public:
  virtual ~NameResolver() = default;
  // Every distinct host name the file's backends use, in file order. Returns one entry per
  // name, in the same order: "" when it resolved, else why not ("Name or service not known").
  virtual std::vector<std::string> resolve(const std::vector<std::string>& names) = 0;
};

// Loads and validates a whole file. On failure the errors are all of them, in file order.
// With a resolver, every backend host name is looked up too (even when other keys are wrong,
// so that one run reports everything); without one, names are only checked for syntax
// (`lb analyze`, tests).
Result<Config> loadConfigFile(const std::string& path, NameResolver* resolver = nullptr);
// Same for text already in memory; `file` is the name used in error messages.
Result<Config> loadConfigString(const std::string& text, const std::string& file,
                                NameResolver* resolver = nullptr);

// What a config that loads may still lack to run as a proxy; `lb --check`, the start and every
// reload ask, `lb analyze` (which reads only clusters) does not. An error when the file has
// neither a listener nor a cluster (an empty file: lb would start and serve nothing); a
// warning in *warnings (message starting "warning: ") when it has clusters but no listener
// (lb would accept no connection until a reload adds one). Both at file:line:col.
Errors checkServes(const Config& config, Errors* warnings);

}  // namespace lb
