// One request and its response on an HttpSession (lb/proxy/http/http_session.h): what the
// request's head said, how its backend is chosen and retried, how far the request and the
// response have got, what the request's access-log line will say, and the two parsers and
// header views that read it. Nothing here is needed while the connection waits for a
// request, so the session holds an HttpExchange only from the request's first byte (or from
// an answer lb gives before one, such as a 408) until the exchange ends: it takes one from
// its worker's HttpExchangePool and gives it back, and an idle keep-alive connection costs
// only the session itself. reset() when the next request begins, so nothing of one request
// leaks into the next one's line or metrics.
//
// Progress, while the session is in kConnecting or kExchange:
//
//   RequestPhase (the request's way up to the backend)
//     kHead ──the head is written to this attempt's connection──> kBody
//     kBody ──the parser reaches the end of the request──> kDone
//     A bodiless request goes kHead ──> kDone as soon as its head is written. A retry sends
//     the head again on a new connection: back to kHead. Only a request with nothing of its
//     body sent is ever retried (RequestFacts::retryable, or a connect that failed before
//     anything was written), so a retry starts from kHead or kDone, never from kBody.
//
//   ResponsePhase (the response's way down to the client)
//     kAwaiting ──a byte from the backend──> kHead
//     kHead ──the final head is written (or queued) to the client──> kBody
//     kBody ──the parser reaches the end of the response (or the backend's EOF ends it)──> kDone
//     Interim 1xx heads pass through while in kHead. A 101 sends the session to kTunnel.
//     Retrying is possible only in kAwaiting; once in kBody the client has a head, so any
//     failure can only cut the response short.
#pragma once

#include <cstdint>
#include <memory>

#include "lb/core/http_fields.h"
#include "lb/core/stats.h"
#include "lb/http/parser.h"
#include "lb/routing/snapshot.h"
#include "lb/runtime/object_pool.h"
#include "lb/runtime/worker_env.h"

namespace lb {

enum class RequestPhase : uint8_t { kHead, kBody, kDone };
enum class ResponsePhase : uint8_t { kAwaiting, kHead, kBody, kDone };

// Where the hash that picks the backend came from.
enum class KeySource : uint8_t {
  kNone,         // not derived yet (the head is not complete)
  kKey,          // the listener's hash policies yielded a key
  kRandom,       // no key, on_missing_key = random
  kRoundRobin,   // no key, on_missing_key = round_robin
};

// What the request head said that matters after it: fixed once the head is complete.
struct RequestFacts {
  bool keep_alive = false;    // the client allows keep-alive
  bool head_method = false;   // HEAD: the response has no body whatever its headers say
  bool http10 = false;        // no interim 1xx for it; keep-alive must be explicit
  bool upgrade = false;       // asks for a protocol upgrade
  bool retryable = false;     // idempotent and bodiless: safe to send again
};

// How the backend is chosen for this request.
struct Route {
  // A pooled connection the backend closed under us is retried once on the same host over a
  // fresh connection, without spending one of the cluster's `retries`.
  static constexpr uint8_t kFreshRetries = 1;

  KeySource source = KeySource::kNone;
  uint64_t hash = 0;             // kKey: the key's hash (the access log's key field)
  uint8_t fresh_retries = 0;     // same-host retries used (up to kFreshRetries)
  // The host the session's BackendAttempt picked last (the access log's backend), and its
  // statistics slot for this worker. The attempt walks the preference order and counts the
  // cluster's `retries`.
  const BackendSnapshot* backend = nullptr;
  BackendWorkerStats* stats = nullptr;
};

// The request's access-log line (lb/runtime/access_log.h), gathered as it goes.
struct ExchangeLog {
  uint64_t start_ns = 0;         // uv_hrtime() at the request's first byte; 0 = none yet
  uint64_t bytes_in = 0;         // from the client: the head and body as received
  uint64_t bytes_out = 0;        // to the client
  char method[16] = {};          // the request line, truncated
  uint8_t method_len = 0;
  char path[256] = {};
  uint16_t path_len = 0;
};

struct HttpExchange {
  RequestFacts facts;
  Route route;
  RequestPhase request = RequestPhase::kHead;
  ResponsePhase response = ResponsePhase::kAwaiting;
  int status = 0;                // the final status the backend answered
  // The final response head promised the client keep-alive: after kDone the connection
  // waits for the next request instead of closing.
  bool keep_client = false;
  GeneratedCookie cookie;        // a generated affinity cookie to set on the response
  ExchangeLog log;
  HttpParser req{HTTP_REQUEST};   // the request, parsed in the session's in_ block
  HttpParser resp{HTTP_RESPONSE}; // the response, parsed in its upin_ block
  HttpHeader view_headers[ParsedHead::kMaxHeaders];   // the head as the key policies see it

  // The next request begins. Only the small fields: the log's character arrays are read up
  // to their lengths, the header views up to the head's count, and the parsers are reset
  // where a message begins (the request's by the session, the response's per attempt).
  void reset() noexcept {
    facts = {};
    route = {};
    request = RequestPhase::kHead;
    response = ResponsePhase::kAwaiting;
    status = 0;
    keep_client = false;
    cookie.set = false;
    log.start_ns = log.bytes_in = log.bytes_out = 0;
    log.method_len = 0;
    log.path_len = 0;
  }
  // The client has a response head: from here a failure can only cut the response short.
  bool headSentToClient() const noexcept { return response >= ResponsePhase::kBody; }
};

// A worker's free list of exchanges (lb/runtime/object_pool.h), made on the first HTTP
// request the worker sees. Keeps up to kMaxFree of them: as many as the blocks its buffer pool
// keeps (each exchange in flight holds at least one), about 9 MiB at most. Loop thread only.
class HttpExchangePool final : public WorkerService {
 public:
  static constexpr size_t kMaxFree = 1024;

  explicit HttpExchangePool(WorkerEnv&) {}
  // The worker's pool, made on first use; nullptr only when memory is exhausted.
  static HttpExchangePool* of(WorkerEnv& env) noexcept { return env.service<HttpExchangePool>(); }

  ObjectPool<HttpExchange>& exchanges() noexcept { return pool_; }

 private:
  ObjectPool<HttpExchange> pool_{kMaxFree};
};

}  // namespace lb
