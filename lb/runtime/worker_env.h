// What every TCP session on one worker shares. Lives as long as the worker's loop.
#pragma once

#include <uv.h>

#include <cstdint>

#include "lb/runtime/access_log.h"
#include "lb/runtime/buffer_source.h"
#include "lb/runtime/session.h"

namespace lb {

struct TcpWorkerEnv {
  uv_loop_t* loop = nullptr;
  unsigned worker = 0;                 // index into the per-worker statistics slots
  BufferSource* buffers = nullptr;
  AccessLog* access_log = nullptr;     // nullptr = access log off
  // TCP sessions alive on this worker; the main thread reads their count while it drains.
  SessionList sessions;
  uint64_t round_robin = 0;            // on_missing_key = "round_robin" sequence
  uint64_t random_state = 0x9E3779B97F4A7C15ull;   // on_missing_key = "random" (xorshift64)
};

}  // namespace lb
