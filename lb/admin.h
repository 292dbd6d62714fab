// The admin listener (design.md: /metrics /ready /backends /ring?cluster=C&key=K), on the
// main thread's loop. The metrics and admin work lives behind this small entry point so the
// server wires it in one place.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string>

#include "lb/snapshot.h"

namespace lb {

struct AdminHooks {
  std::function<std::shared_ptr<const Snapshot>()> snapshot;   // the live snapshot
  std::function<bool()> draining;                              // /ready answers 503 when true
};

class Admin;

// Main thread only. Starts listening on `listen` ("127.0.0.1:9901"); nullptr with *error set
// when it cannot bind.
Admin* startAdmin(uv_loop_t* loop, const std::string& listen, AdminHooks hooks,
                  std::string* error);
// Main thread only. Closes the listener and every admin connection; frees itself after the
// last close callback. Null is allowed.
void stopAdmin(Admin* admin);
// Main thread only. Records a reload attempt (lb_config_reloads_total{result},
// lb_config_last_reload_success_timestamp_seconds). Null is allowed.
void noteReload(Admin* admin, bool ok);

}  // namespace lb
