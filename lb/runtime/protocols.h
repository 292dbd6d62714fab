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

class Worker;
struct Snapshot;

// Loop thread. Accepts one pending connection from `server` for listener `listener` (an index
// into snapshot->listeners) and starts serving it; the session frees itself.
using AcceptFn = void (*)(Worker& worker, uv_stream_t* server,
                          const std::shared_ptr<const Snapshot>& snapshot, uint32_t listener);

// Indexed by Protocol; every entry is set (lb/app/protocols.cc).
using ProtocolTable = std::array<AcceptFn, kProtocolCount>;

}  // namespace lb
