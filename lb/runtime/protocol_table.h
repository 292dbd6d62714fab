// How a listener hands an accepted connection to its protocol. The runtime never includes a
// protocol (lb/proxy/* stand on the runtime, not the other way round): lb/app fills this
// table with each protocol's accept function and gives it to every worker.
#pragma once

#include <uv.h>

#include <array>
#include <cstdint>
#include <memory>

#include "lb/config/config.h"

namespace lb {

class WorkerEnv;
struct AcceptTransport;
struct Snapshot;

// What the listener decided before handing a connection over.
enum class Admission : uint8_t {
  kAdmit,
  // The listener is at limits.max_connections on this worker (each worker enforces
  // ceil(max / workers)). Already counted (lb_downstream_connections_over_limit_total); the
  // protocol accepts the connection and turns it away at once in its own terms: HTTP answers
  // 503, TCP closes it without connecting to a backend.
  kOverLimit,
};

// Loop thread. Accepts one pending connection from `server` for listener `listener` (an index
// into snapshot->listeners) and starts serving it on `env`'s worker; the session links itself
// into env, counts itself in env.noteAccepted() and frees itself. `transport` is what the
// listener puts under the connection (a TLS listener's; null: plain): the session hands it
// to Connection::accept and never looks inside, so no protocol names TLS.
using AcceptFn = void (*)(WorkerEnv& env, uv_stream_t* server, const AcceptTransport* transport,
                          const std::shared_ptr<const Snapshot>& snapshot, uint32_t listener,
                          Admission admission);

// Indexed by Protocol; every entry is set (lb/app/builtin_protocols.cc).
using ProtocolTable = std::array<AcceptFn, kProtocolCount>;

}  // namespace lb
