// A client of etcd's v3 JSON gateway (grpc-gateway, served on etcd's client port) over
// HTTP/1.1, on a libuv loop with lb's own socket (lb/net/connection.h) and response parser
// (lb/http/parser.h): no gRPC stack, no thread. The membership source runs it on the main
// loop; `lb membership get|put|diff` on a private loop of its own.
//
// What etcd 3.4.23 (Debian 12) answers, as seen with curl against a real server; the readers
// (etcd_json.h) hold to these shapes and the EtcdClientTest/EtcdJsonTest cases pin them down.
// "H" stands for a header {"cluster_id": "15118495548433857066", "member_id": "...",
// "revision": "3", "raft_term": "2"}.
//   - int64 and uint64 fields are JSON strings. A field at its default (0, false, empty) is
//     left out altogether: no "kvs" is no such key, no "succeeded" is false, no "value" is
//     an empty value, no "type" in a watch event is PUT. Keys and values are base64 (Go's
//     StdEncoding: padded, standard alphabet). Replies are Content-Type: application/json,
//     with a Content-Length when they succeed.
//   - /v3/kv/range {"key": K}: {"header": H, "kvs": [{"key": K, "create_revision": "2",
//     "mod_revision": "3", "version": "2", "value": V}], "count": "1"}; an absent key:
//     {"header": H} alone. header.revision is the store's, not the key's.
//   - /v3/kv/txn, compare {"key": K, "target": "MOD", "result": "EQUAL", "mod_revision":
//     "N"}: when it holds, {"header": H, "succeeded": true, "responses": [{"response_put":
//     {"header": {"revision": "4"}}}]}; when not, no "succeeded" and [{"response_range":
//     {"header": {"revision": "3"}, "kvs": [...], "count": "1"}}], whose range of an absent
//     key has its header only. An absent key compares as mod_revision "0", so that is the
//     create-only compare.
//   - /v3/kv/put: {"header": H}. /v3/kv/compaction {"revision": "N", "physical": true}:
//     {"header": H}.
//   - Errors: a 4xx/5xx, chunked with a Grpc-Trailer-Content-Type trailer, body
//     {"error": T, "message": T, "code": gRPC code}: a compaction past the store's revision
//     is 400 "etcdserver: mvcc: required revision is a future revision" (code 11), one at or
//     below the compacted revision 400 "... has been compacted"; a body that is not JSON is
//     400 code 3 ("unexpected EOF"), on /v3/watch 500 code 2.
//   - /v3/watch {"create_request": {"key": K, "start_revision": "N"}}: 200, Transfer-Encoding:
//     chunked, never ending by itself; each message one JSON object and "\n" (3.4 writes one
//     chunk per message; the client does not count on it):
//       {"result": {"header": H, "created": true}}      first; H's revision: the store's now
//       {"result": {"header": H, "events": [{"kv": {"key": K, "create_revision": "7",
//         "mod_revision": "7", "version": "1", "value": V}}]}}                    a PUT
//       {"result": {"header": H, "events": [{"type": "DELETE", "kv": {"key": K,
//         "mod_revision": "9"}}]}}                                               a DELETE
//     Every event of one revision comes in one message (a txn's puts to several watched
//     keys: one "events" array), one message per revision. A start_revision at or below the
//     compacted revision: the created message, then
//       {"result": {"header": {"cluster_id": ..., "member_id": ..., "raft_term": "2"},
//        "canceled": true, "compact_revision": "3"}}
//     (no header revision), and the stream stays open: the client closes it.
//
// Security, as etcd's own clients do it:
//   - https:// members are spoken to through lb's TLS transport with the client context
//     given (lb/tls/tls_client_context.h: the CA, the name checked, a client certificate);
//     the same context serves every member.
//   - With a user, the first request trades user and password for a token
//     (/v3/auth/authenticate {"name", "password"} → {"header": H, "token": T}), and every
//     request and the watch send it as "Authorization: T" (etcd reads the gateway's
//     authorization metadata as the token). A request that etcd answers with "invalid auth
//     token" (401: the token expired, or the member restarted and forgot it) authenticates
//     again and is sent again, once. Requests asked for while a token is on its way wait
//     for it. A failed authentication fails them all, with etcd's reason. The password and
//     the token never go into an error message.
//
// Rules: loop thread only; neither copied nor moved. Every callback runs from the loop,
// never inline from the call that asked for it, and never after close(); each must be set
// and must not throw (they run from noexcept code: a throw terminates). A callback may call
// anything here, close() included. Nothing throws out of this class: JSON is
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
#include "lb/membership/etcd_exchange.h"
#include "lb/membership/etcd_types.h"
#include "lb/tls/tls_client_context.h"

namespace lb {

// How the client checks etcd and proves itself to it. Both parts are optional.
struct EtcdCredentials {
  std::shared_ptr<const TlsClientContext> tls;   // for https:// members (required by them)
  std::string user;                              // "" = etcd's authentication is off
  std::string password;
};

class EtcdClient final : private EtcdExchangeOwner {
 public:
  // Bytes of one reply body (or one watch message) accepted; more is kProtocol. etcd's own
  // request limit is 1.5 MiB (--max-request-bytes), 2 MiB once base64.
  static constexpr size_t kMaxReplyBytes = EtcdExchange::kMaxBodyBytes;

  // `endpoints`: members of one etcd cluster, tried in this order; at least one.
  // `request_timeout` bounds each attempt of a request: connect plus the whole reply.
  // An https:// endpoint without credentials.tls fails as kConnect, never in plaintext.
  EtcdClient(uv_loop_t* loop, std::vector<EtcdEndpoint> endpoints, Duration request_timeout,
             EtcdCredentials credentials = {});
  // Only after close()'s `closed` callback has run: the client holds a handle from the start.
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // --- Requests (one HTTP/1.1 connection each, Connection: close) ---------------------
  // Each starts at the current endpoint. A read (range, compact) that meets kConnect,
  // kTimeout or a 5xx status (a member without a leader answers 503 or times out) goes on
  // to the next endpoint, each at most once per call, and fails with the last error; a
  // write (put, putIfModRevision) goes on only from an endpoint it could not connect to,
  // since anywhere else it may have been applied. The endpoint that answered becomes the
  // current one. Exactly one of the two pointers is set, valid during the call only.
  void range(std::string key, std::function<void(const EtcdRangeReply*, const EtcdError*)> done);
  // A txn: put `value` at `key` if the key's mod_revision is `expected` (0: only if the key
  // does not exist); otherwise nothing is written and `current` is the key as it is now.
  // After a timeout the txn may or may not have applied: the caller reads the key again.
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
  using Call = EtcdCall;   // one request across its attempts
  struct Watch;            // the watch's key and callbacks

  // `token`: with the Authorization header (when there is a token).
  std::string httpRequest(size_t endpoint, const std::string& path, const std::string& body,
                          bool keep, bool token) const;
  // Whether requests need a token that is not there yet.
  bool needsToken() const noexcept { return !credentials_.user.empty() && token_.empty(); }
  // Asks etcd for a token (one request at a time); the calls in waiting_ and a waiting watch
  // go on when it comes, or fail with its error.
  void authenticate() noexcept;
  void authenticated(const std::string* body, const EtcdError* error) noexcept;
  void openWatch() noexcept;
  EtcdExchange* open(size_t endpoint, std::string request, bool stream) noexcept;
  void start(std::unique_ptr<Call> call) noexcept;
  void attempt(Call* call) noexcept;
  void finish(Call* call, const std::string* body, const EtcdError* error) noexcept;
  // What an exchange reports: a whole response (any status), a failure, one watch message,
  // and (always, last) that its handles are closed and it is about to free itself.
  void exchangeReplied(EtcdExchange* x, int status, const std::string& body) noexcept override;
  void exchangeFailed(EtcdExchange* x, EtcdError error) noexcept override;
  void watchLine(EtcdExchange* x, std::string_view line) noexcept override;
  void exchangeClosed(EtcdExchange* x) noexcept override;
  void endWatch(const EtcdError& error) noexcept;
  static void onTimerClosed(uv_handle_t* h);
  void maybeClosed() noexcept;

  uv_loop_t* loop_;
  std::vector<EtcdEndpoint> endpoints_;
  Duration timeout_;
  size_t current_ = 0;
  EtcdCredentials credentials_;
  std::string token_;                          // etcd's, once authenticated; a secret
  bool authenticating_ = false;
  std::vector<std::unique_ptr<Call>> waiting_; // requests waiting for a token
  bool watch_waiting_ = false;                 // the watch waits for a token
  std::vector<std::unique_ptr<Call>> calls_;   // requests in flight
  std::vector<EtcdExchange*> exchanges_;       // open, until their last close callback
  EtcdExchange* watch_ = nullptr;
  std::shared_ptr<Watch> watch_state_;
  // A handle of the client's own, never started: closing it is what makes `closed` come
  // from the loop even when nothing else was open.
  uv_timer_t close_timer_;
  bool timer_open_ = true;
  bool closing_ = false;
  std::function<void()> closed_;
};

}  // namespace lb
