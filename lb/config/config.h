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

enum class Protocol { kHttp, kTcp, kRedis, kMemcached };
inline constexpr size_t kProtocolCount = 4;
// As the config spells it: "http", "tcp", "redis", "memcached".
inline const char* protocolName(Protocol p) noexcept {
  switch (p) {
    case Protocol::kHttp: return "http";
    case Protocol::kTcp: return "tcp";
    case Protocol::kRedis: return "redis";
    case Protocol::kMemcached: return "memcached";
  }
  return "?";
}
// The cache protocols parse every command and route it by its own key (lb/proxy/cache/).
inline bool isCacheProtocol(Protocol p) noexcept {
  return p == Protocol::kRedis || p == Protocol::kMemcached;
}
enum class OnMissingKey { kRandom, kRoundRobin, kReject };

struct Timeouts {
  Duration connect{1000};
  Duration header{10000};
  Duration idle{60000};
  Duration response{1000};   // redis, memcached: each command's answer from its backend
};

struct Limits {
  uint32_t max_header_bytes = 65536;
  uint32_t max_connections = 100000;
  // redis, memcached: the most one command may hold (its bytes: bulk strings, a data block;
  // its arguments or keys), and the most commands one client may have unanswered.
  uint32_t max_request_bytes = 16 << 20;
  uint32_t max_arguments = 65536;
  uint32_t max_in_flight = 1024;
};

// `h2 = { max_concurrent_streams, initial_window, max_header_list }` on an http listener:
// HTTP/2 from clients (h2 by ALPN on TLS, h2c with prior knowledge on plain), docs/config.md
// "HTTP/2". The defaults are the SETTINGS lb sends; each bounds what one connection may hold.
// How a plain connection is told to speak HTTP/2.
enum class H2Cleartext : uint8_t {
  kDetect,   // by its first bytes: the h2c preface, else HTTP/1.1
  kOnly,     // always (HAProxy's `proto h2`, nginx's plain `listen ... http2`)
};
struct H2Config {
  uint32_t max_concurrent_streams = 100;   // SETTINGS_MAX_CONCURRENT_STREAMS
  uint32_t initial_window = 1 << 20;       // SETTINGS_INITIAL_WINDOW_SIZE: a stream's unread body
  uint32_t max_header_list = 64 << 10;     // SETTINGS_MAX_HEADER_LIST_SIZE, decoded
  H2Cleartext cleartext = H2Cleartext::kDetect;
  SourcePos pos;
};

// `tls = { certificates = [{ cert, key }, ...], min_version, alpn }` on a listener
// (docs/config.md, "TLS"). Paths as written, relative ones made relative to the config
// file's folder by the loader; the files themselves are read when the snapshot is built.
struct TlsCertificateConfig {
  std::string cert;
  std::string key;
  SourcePos cert_pos;
  SourcePos key_pos;
};
struct ListenerTlsConfig {
  bool enabled = false;
  std::vector<TlsCertificateConfig> certificates;
  std::string min_version = "1.2";
  std::vector<std::string> alpn;   // unless written: ["http/1.1"] on http listeners, else none
  SourcePos pos;
};

// `tls = { ca, verify, server_name, cert, key, min_version }` on a cluster: lb speaks TLS to
// every backend of it, data connections and health checks alike (docs/config.md, "tls
// (clusters)"). Paths as the listener's; the files are read when the snapshot is built.
struct ClusterTlsConfig {
  bool enabled = false;
  std::string ca;                  // "" = the system's trust store
  bool verify = true;
  std::string server_name;         // SNI and the name checked; "" = the backend's address
  std::string cert;                // mutual TLS: lb's client certificate and key, or neither
  std::string key;
  std::string min_version = "1.2";
  SourcePos ca_pos;
  SourcePos cert_pos;
  SourcePos key_pos;
  SourcePos pos;
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
  ListenerTlsConfig tls;
  H2Config h2;             // http only
  // redis, memcached: hash only the part of a key inside the first pair of these two
  // characters ("{}"), as twemproxy and Redis Cluster do; "" = the whole key.
  std::string hash_tag;
  // redis: clients must AUTH with this before anything else; "" = no AUTH.
  std::string password;
  // redis, memcached: the commands that address every server (memcached flush_all; Redis
  // FLUSHDB, FLUSHALL, DBSIZE, SCRIPT LOAD|EXISTS|FLUSH) go to every backend of the cluster
  // and their replies are merged; false: they are refused, naming this setting.
  bool fanout = false;
  SourcePos pos;
};

struct BackendConfig {
  std::string name;
  std::string address;     // "host:port": numeric, or a host name resolved by lb/app
  uint32_t weight = 1;
  std::string hash_key;    // defaults to name
  // The failure domain it stands in (an availability zone, a rack): the key's preference
  // order takes one host of each zone first (lb/routing/zone_order.h). "": none written.
  std::string zone;
  SourcePos pos;
};

// `health = { ... }`: active checks, one checker per backend on the main thread
// (docs/config.md, "health"; lb/health/health_manager.h).
enum class HealthCheckType { kHttp, kTcp, kRedis, kMemcached };
// As the config spells it: "http", "tcp", "redis", "memcached".
const char* healthCheckTypeName(HealthCheckType t) noexcept;

struct HealthConfig {
  // Unless written: http when every listener in front of the cluster is http, else tcp (the
  // loader fills it in once it has read the listeners).
  HealthCheckType type = HealthCheckType::kTcp;
  std::string path = "/";             // http: the request target
  uint32_t expect = 200;              // http: the status that passes
  Duration interval{2000};            // from one check's start to the next one's
  Duration timeout{1000};             // connect, request and reply; <= interval
  uint32_t rise = 2;                  // passes in a row that bring a down backend up
  uint32_t fall = 3;                  // failures in a row that take an up backend down
};

// `outlier = { ... }`: passive ejection on the failures workers see.
struct OutlierConfig {
  uint32_t consecutive_failures = 5;
  Duration base_ejection{30000};      // the first ejection; each repeat doubles it
  Duration max_ejection{300000};      // the longest one
  uint32_t max_ejected_percent = 50;  // never more of the cluster ejected at once
};

// `membership = { ... }`: the cluster's backends come from one etcd key instead of the file
// (docs/config.md, "membership"; lb/membership/membership_source.h). `backends`, if written,
// are only the fallback when neither etcd nor the state file answers at start.
struct MembershipConfig {
  std::vector<std::string> etcd;      // "http://host:port" client URLs of one etcd cluster
  std::string key;                    // the key whose value is the membership document
  uint32_t max_remove_percent = 50;   // a document removing more of the hosts is refused
  Duration min_apply_interval{100};   // at most one table build per interval
  Duration reconcile_interval{30000}; // a Range this often, besides the watch
  std::string state_file;             // the last applied document; "" = none
  // TLS towards https:// members: a cluster `tls` table's settings (enabled when written).
  ClusterTlsConfig tls;
  // etcd's authentication: user and password, traded for a token; "" = none. Secrets: never
  // logged, shown or exported.
  std::string user;
  std::string password;
  SourcePos pos;
};

// hot_keys = { threshold, hold, ... }: detection is always on with these defaults; the table
// only tunes it (and, later, turns on spread and the near cache).
// hot_keys.near_cache = { items, bytes, ttl }: redis and memcached clusters answer plain
// reads of hot keys from each worker's memory (lb/proxy/cache/near_cache.h). Both bounds are
// per worker.
struct NearCacheConfig {
  uint32_t items = 1024;                   // entries at most
  uint64_t bytes = uint64_t{64} << 20;     // key and reply bytes at most
  Duration ttl{1000};                      // an entry's life at most (memcached's staleness bound)
  SourcePos pos;
};

struct HotKeysConfig {
  double threshold = 0.02;            // a key's share of the cluster's requests to become hot
  Duration hold{10000};               // how long it stays hot after falling below
  // HTTP GET and HEAD of a hot key go to the least loaded of the first `spread` distinct
  // hosts of its preference order; 0 = off (every request keeps the owner), else 2..16.
  uint32_t spread = 0;
  std::optional<NearCacheConfig> near_cache;   // absent: off
  SourcePos pos;
};

// handover = { window, copy_ttl }: after a change of owners the previous table keeps serving
// moved keys for `window` (lb/routing/handover.h). HTTP and TCP ramp each moved key over to
// its new owner at its own moment of the window. copy_ttl is the read-through copies' TTL cap
// (redis, memcached), which this version refuses by name until it is built.
struct HandoverConfig {
  Duration window{0};                 // 0: off
  Duration copy_ttl{600000};
  SourcePos pos;
};

// `read = ...` on a cluster with replicas: which of a key's replicas a read goes to first.
enum class ReplicaRead {
  kPrimary,   // the key's first host; a miss or failure there is read from the next replica
  kLocal,     // the first of the key's replicas in lb's own zone ([lb] zone), else the primary
};

struct ClusterConfig {
  std::string name;
  std::string selector = "ring_hash";
  uint32_t hash_balance_factor = 0;   // 0 = bounded loads off; else percent > 100
  uint32_t retries = 2;
  uint32_t vnodes = 160;              // ring_hash.vnodes
  uint64_t table_size = 65537;        // maglev.table_size
  std::string twemproxy_hash = "fnv1a_64";   // twemproxy.hash: the key hash of selector twemproxy
  std::string twemproxy_distribution = "ketama";   // twemproxy.distribution: ketama or modula
  uint32_t panic_threshold = 50;      // percent healthy under which health is ignored; 0 = off
  std::optional<HealthConfig> health;     // absent: no active checks
  std::optional<OutlierConfig> outlier;   // absent: no passive ejection
  Duration resolve_interval{0};       // re-resolve backend host names this often; 0 = never
  // redis listeners: lb AUTHs with this on every connection it opens to a backend.
  std::string password;
  // redis, memcached listeners: pipelined connections each worker keeps to each backend.
  uint32_t server_connections = 1;
  std::vector<BackendConfig> backends;
  std::optional<MembershipConfig> membership;   // absent: the backends above are the cluster's
  HotKeysConfig hot_keys;
  std::optional<HandoverConfig> handover;   // absent: moved keys move at once
  // Each key lives on its first `replicas` hosts of the preference order (redis, memcached:
  // writes go to all of them; HTTP: any of them may serve it). 1: no replicas.
  uint32_t replicas = 1;
  ReplicaRead read = ReplicaRead::kPrimary;
  ClusterTlsConfig tls;
  SourcePos pos;
};

struct Config {
  std::string file;                   // path it was loaded from ("" for in-memory)
  uint32_t workers = 0;               // 0 = one per core
  LogLevel log_level = LogLevel::kInfo;
  std::string access_log = "-";
  std::string admin_listen = "127.0.0.1:9901";
  Duration drain_timeout{30000};
  // This instance's zone ([lb] zone, else LB_ZONE in the environment); "": none. Reads with
  // read = "local" go to a replica in it first.
  std::string zone;
  std::vector<ListenerConfig> listeners;   // in file order
  std::vector<ClusterConfig> clusters;     // in file order

  const ClusterConfig* findCluster(const std::string& name) const;
  const ListenerConfig* findListener(const std::string& name) const;
  // The first redis or memcached listener (in file order) in front of `cluster`: whose
  // hash_tag /ring and `lb analyze --key` apply to that cluster's keys by default. nullptr
  // when none.
  const ListenerConfig* cacheListenerOf(const std::string& cluster) const;
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
// The bytes of a config file, or why they cannot be read (as loadConfigFile reports it).
Result<std::string> readConfigFile(const std::string& path);
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
