// The values lb::EtcdClient (lb/membership/etcd_client.h) hands out and takes, apart from the
// client, so that the JSON readers (etcd_json.h) and the exchange (etcd_exchange.h) need not
// include it.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lb {

// One etcd member's client URL, parsed.
struct EtcdEndpoint {
  std::string host;             // as written: "127.0.0.1", "::1" (no brackets)
  uint16_t port = 0;
  std::string url;              // as written, without a trailing '/': for messages
  bool tls = false;             // https://: TLS with the client's context
  sockaddr_storage address{};   // ready for connect()
  socklen_t address_len = 0;
};

// "http://127.0.0.1:2379", "https://[::1]:2379" (a trailing "/" is allowed; no path, query,
// user or fragment) -> *out. The host must be an IP address: names are refused (nothing on
// the main loop resolves them yet; the message says to write an address). The port defaults
// to 2379, etcd's client port, when the URL has none. https:// sets out->tls. On failure: false, *out untouched, *error a message quoting the URL that says
// what to write instead. Pure; any thread (the config validation calls it).
bool parseEtcdUrl(std::string_view url, EtcdEndpoint* out, std::string* error);

struct EtcdKv {
  std::string key;      // decoded bytes
  std::string value;    // decoded bytes (empty for a DELETE event)
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
};

struct EtcdRangeReply {
  int64_t revision = 0;          // header.revision: the store's revision the read saw
  std::optional<EtcdKv> kv;      // absent: no such key
};

struct EtcdWatchEvent {
  bool deleted = false;          // "type": "DELETE"; false for PUT
  EtcdKv kv;
};

// One watch message: every event of it (all of one etcd revision, or several), in order.
struct EtcdWatchBatch {
  int64_t revision = 0;          // header.revision of the message
  std::vector<EtcdWatchEvent> events;   // never empty
};

struct EtcdTxnReply {
  bool succeeded = false;
  int64_t revision = 0;          // header.revision: on success the key's new mod_revision
  std::optional<EtcdKv> current; // on failure: the key as it is now (absent: no such key)
};

enum class EtcdFailure {
  kConnect,      // refused, reset, unreachable, or the connection closed before the reply
  kTimeout,      // no whole reply within request_timeout (or no watch created within it)
  kHttpStatus,   // a status other than 200; message holds etcd's error text
  kProtocol,     // not HTTP, not JSON, or JSON without what the reply must hold
  kCompacted,    // watch: the start revision was compacted; compact_revision is set
  kCanceled,     // watch: etcd canceled it (another reason than compaction)
  kClosed,       // watch: the stream ended (etcd went away, or ended the response)
};

// "connect", "timeout", ...: for logs and metrics labels.
const char* etcdFailureName(EtcdFailure f) noexcept;

struct EtcdError {
  EtcdFailure kind = EtcdFailure::kProtocol;
  std::string message;           // one line, for a log: "connect: Connection refused"
  int64_t compact_revision = 0;  // kCompacted
  int http_status = 0;           // kHttpStatus
  std::string endpoint;          // the URL of the member that failed (the last one tried)
};

}  // namespace lb
