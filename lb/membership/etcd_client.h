// A client of etcd's v3 JSON gateway (grpc-gateway, served on etcd's client port) over
// HTTP/1.1, on a libuv loop with lb's own socket (lb/net/connection.h) and response parser
// (lb/http/parser.h): no gRPC stack, no thread. The membership source runs it on the main
// loop; `lb membership get|put|diff` on a private loop of its own.
//
// What etcd 3.4.23 (Debian 12) answers, as seen with curl against a real server (the shapes
// the parsers hold to; "..." is a header as in the first line). [First commit: written from
// etcd's sources; each line is checked against a running etcd in the commits that follow.]
//   - Every reply carries {"header": {"cluster_id": "...", "member_id": "...",
//     "revision": "12", "raft_term": "2"}}. int64 and uint64 fields are JSON strings; a
//     field at its default value (0, false, empty) is left out altogether, so an absent
//     "kvs" is "no such key", an absent "succeeded" is false, an absent "value" is an empty
//     value, and an absent "type" in a watch event is PUT.
//   - Keys and values are base64 (Go's StdEncoding: padded, standard alphabet) both ways.
//   - POST /v3/kv/range {"key": K} -> {"header": ..., "kvs": [{"key": K,
//     "create_revision": "5", "mod_revision": "7", "version": "3", "value": V}],
//     "count": "1"}; for an absent key {"header": ...} alone.
//   - POST /v3/kv/txn, a compare on MOD that fails -> {"header": ..., "responses":
//     [{"response_range": {"header": ..., "kvs": [...], "count": "1"}}]} (no "succeeded");
//     one that holds -> {"header": ..., "succeeded": true, "responses": [{"response_put":
//     {"header": ...}}]}. A missing key compares as mod_revision 0 (etcd's applyCompare), so
//     "create only" is the same compare with 0.
//   - POST /v3/kv/put -> {"header": ...}; /v3/kv/compaction {"revision": "N", "physical":
//     true} -> {"header": ...}.
//   - An error is a non-200 status with {"error": "...", "message": "...", "code": N}
//     (grpc-gateway's form; code is the gRPC code: 11 OutOfRange for a compaction past the
//     current revision is a 400).
//   - POST /v3/watch {"create_request": {"key": K, "start_revision": "N"}} answers 200 with
//     one chunked response that never ends by itself; each message is one JSON object
//     followed by "\n", split over chunks in any way:
//       {"result": {"header": ..., "created": true}}                    first
//       {"result": {"header": ..., "events": [{"kv": {...}},            a PUT (no "type")
//                                             {"type": "DELETE", "kv": {"key": K,
//                                              "mod_revision": "9"}}]}}
//     All events of one etcd revision (a txn's several puts) come in one message. A
//     start_revision at or below the compacted revision gets the created message and then
//     {"result": {"header": ..., "compact_revision": "7", "canceled": true}}; the stream
//     stays open after it, so the client closes it. (See the Watch* tests, which pin each of
//     these down against a real etcd.)
//
// Rules: loop thread only; neither copied nor moved. Every callback runs from the loop,
// never inline from the call that asked for it, and never after close(); callbacks run from
// noexcept code (a throw from one terminates). Nothing throws out of this class: JSON is
// parsed with nlohmann::json inside a try, and anything it throws is kProtocol.
#pragma once

#include <uv.h>

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lb/core/duration.h"

namespace lb {

// One etcd member's client URL, parsed.
struct EtcdEndpoint {
  std::string host;             // as written: "127.0.0.1", "::1" (no brackets)
  uint16_t port = 0;
  std::string url;              // as written, without a trailing '/': for messages
  sockaddr_storage address{};   // ready for connect()
  socklen_t address_len = 0;
};

// "http://127.0.0.1:2379", "http://[::1]:2379" (a trailing "/" is allowed; no path, query,
// user or fragment) -> *out. The host must be an IP address: names are refused (nothing on
// the main loop resolves them yet; the message says to write an address). The port defaults
// to 2379, etcd's client port, when the URL has none. https is refused ("TLS comes with
// issue 24"). On failure: false, *out untouched, *error a message quoting the URL that says
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

class EtcdExchange;   // one HTTP exchange (etcd_client.cc)

class EtcdClient {
 public:
  // Bytes of one reply body (or one watch message) accepted; more is kProtocol. etcd's own
  // request limit is 1.5 MiB (--max-request-bytes), 2 MiB once base64.
  static constexpr size_t kMaxReplyBytes = 8 * 1024 * 1024;

  // `endpoints`: members of one etcd cluster, tried in this order; at least one.
  // `request_timeout` bounds each attempt of a request: connect plus the whole reply.
  EtcdClient(uv_loop_t* loop, std::vector<EtcdEndpoint> endpoints, Duration request_timeout);
  // close() must have been called and its `closed` callback have run (or never have been
  // needed: nothing was ever started).
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // --- Requests (one HTTP/1.1 connection each, Connection: close) ---------------------
  // Each starts at the current endpoint. On kConnect, kTimeout or a 5xx status (a member
  // without a leader answers 503 or times out) it tries the next endpoint, each at most
  // once per call, and fails with the last error. The endpoint that answered becomes the
  // current one. Exactly one of the two pointers is set, valid during the call only.
  void range(std::string key, std::function<void(const EtcdRangeReply*, const EtcdError*)> done);
  // A txn: put `value` at `key` if the key's mod_revision is `expected` (0: only if the key
  // does not exist); otherwise nothing is written and `current` is the key as it is now.
  // Not retried on another endpoint after a timeout (the txn may have applied): that is
  // kTimeout, and the caller reads the key again to find out.
  void putIfModRevision(std::string key, std::string value, int64_t expected,
                        std::function<void(const EtcdTxnReply*, const EtcdError*)> done);
  // An unconditional put; `revision` is the reply's header revision (0 with an error).
  void put(std::string key, std::string value,
           std::function<void(int64_t revision, const EtcdError*)> done);
  // Compacts the store up to `revision` (physical: etcd answers once it is done). Tests
  // and tools.
  void compact(int64_t revision, std::function<void(const EtcdError*)> done);

  // --- Watch (its own connection, kept) -----------------------------------------------
  // One watch stream at a time, on `key` alone, from `start_revision` (> 0), at the current
  // endpoint; a call while one runs cancels it first (its on_end is not called). The watch
  // is bounded by request_timeout until etcd's created message (connect, response head,
  // created), then by nothing: the membership source's periodic Range catches a stream
  // that died silently.
  //   on_created  once, at etcd's created message.
  //   on_batch    every message that carries events, all events of one message together.
  //   on_end      once, when the stream ends for whatever reason (kClosed, kCompacted with
  //               compact_revision, kCanceled, kConnect, kTimeout, kHttpStatus, kProtocol),
  //               and nothing after it.
  // A watch is never retried here: its owner decides (backoff, useNextEndpoint(), a Range).
  void watch(std::string key, int64_t start_revision, std::function<void()> on_created,
             std::function<void(const EtcdWatchBatch&)> on_batch,
             std::function<void(const EtcdError&)> on_end);
  // Ends the watch; none of its callbacks runs after this. No-op without one.
  void cancelWatch();
  bool watching() const noexcept { return watch_ != nullptr; }

  // --- Endpoints ----------------------------------------------------------------------
  // The next request or watch starts at the next endpoint (wrapping around).
  void useNextEndpoint() noexcept;
  const EtcdEndpoint& currentEndpoint() const noexcept { return endpoints_[current_]; }
  const std::vector<EtcdEndpoint>& endpoints() const noexcept { return endpoints_; }

  // --- Closing ------------------------------------------------------------------------
  // Abandons every request and the watch (no callback of theirs runs) and closes every
  // handle; `closed` runs once nothing of this client's is open, after which deleting it is
  // safe. Call it once; requests and watches asked for after it are dropped, uncalled.
  void close(std::function<void()> closed);

 private:
  friend class EtcdExchange;
  struct Call;   // one request across its attempts

  void start(std::unique_ptr<Call> call) noexcept;
  void attempt(Call* call) noexcept;
  // An exchange of a request ended (status 200 and its body, or an error).
  void exchangeDone(EtcdExchange* x, const EtcdError* error, int status,
                    const std::string& body) noexcept;
  // An exchange's handles are closed: it frees itself right after.
  void exchangeClosed(EtcdExchange* x) noexcept;
  // Runs fn from the loop's next turn (the defer timer), unless close() comes first.
  void post(std::function<void()> fn) noexcept;
  static void onDefer(uv_timer_t* t);
  static void onDeferClosed(uv_handle_t* h);
  void maybeClosed() noexcept;
  EtcdExchange* open(const EtcdEndpoint& ep, std::string request, bool stream) noexcept;

  uv_loop_t* loop_;
  std::vector<EtcdEndpoint> endpoints_;
  Duration timeout_;
  size_t current_ = 0;
  std::vector<std::unique_ptr<Call>> calls_;        // requests in flight
  std::vector<EtcdExchange*> exchanges_;            // open, until their last close callback
  EtcdExchange* watch_ = nullptr;
  std::vector<std::function<void()>> deferred_;
  uv_timer_t defer_;
  bool defer_open_ = true;
  bool closing_ = false;
  std::function<void()> closed_;
};

}  // namespace lb
