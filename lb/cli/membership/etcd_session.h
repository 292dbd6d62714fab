// `lb membership`'s connection to etcd: one EtcdClient (lb/membership/etcd_client.h) on a
// private libuv loop, driven to completion per request. The command line has nothing else to
// do while it waits, and the client keeps the model the membership source uses on lb's main
// loop (one HTTP/1.1 exchange per request, TLS and the token inside the client).
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lb/core/duration.h"
#include "lb/membership/etcd_client.h"

namespace lb {

// One etcd client on a private loop, driven to completion per request: the command line has
// nothing else to do while it waits.
class EtcdSession {
 public:
  EtcdSession(std::vector<EtcdEndpoint> endpoints, Duration timeout,
              EtcdCredentials credentials) {
    uv_loop_init(&loop_);
    client_ = std::make_unique<EtcdClient>(&loop_, std::move(endpoints), timeout,
                                           std::move(credentials));
  }
  ~EtcdSession() {
    bool closed = false;
    client_->close([&closed] { closed = true; });
    runUntil(closed);
    client_.reset();
    uv_run(&loop_, UV_RUN_NOWAIT);
    uv_loop_close(&loop_);
  }
  EtcdSession(const EtcdSession&) = delete;
  EtcdSession& operator=(const EtcdSession&) = delete;

  // Either *reply or *error is filled.
  bool range(const std::string& key, EtcdRangeReply* reply, EtcdError* error) {
    bool done = false, ok = false;
    client_->range(key, [&](const EtcdRangeReply* r, const EtcdError* e) {
      done = true;
      if (r) *reply = *r, ok = true;
      if (e) *error = *e;
    });
    if (!runUntil(done)) *error = stalled();
    return ok;
  }

  bool putIf(const std::string& key, const std::string& value, int64_t expected,
             EtcdTxnReply* reply, EtcdError* error) {
    bool done = false, ok = false;
    client_->putIfModRevision(key, value, expected,
                              [&](const EtcdTxnReply* r, const EtcdError* e) {
                                done = true;
                                if (r) *reply = *r, ok = true;
                                if (e) *error = *e;
                              });
    if (!runUntil(done)) *error = stalled();
    return ok;
  }

 private:
  // False when the loop ran dry before `done` (a bug: every request ends in a callback).
  bool runUntil(const bool& done) {
    while (!done)
      if (uv_run(&loop_, UV_RUN_ONCE) == 0 && !done) return false;
    return true;
  }
  static EtcdError stalled() {
    EtcdError e;
    e.message = "the request ended without an answer";
    return e;
  }

  uv_loop_t loop_;
  std::unique_ptr<EtcdClient> client_;
};

}  // namespace lb
