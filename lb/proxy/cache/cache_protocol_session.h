// What every cache protocol's session (RedisSession, MemcachedSession) does the same way on
// top of CacheSession, written once: the ProtocolTable accept function, the parse loop, the
// split of a multi-key command by owner (key_groups.h) into fragments and a merge, and the
// hooks that are only texts.
//
//   class RedisSession final : public CacheProtocolSession<RedisSession> { ... };
//
// The protocol gives:
//   - a constructor (WorkerEnv&, const std::shared_ptr<const Snapshot>&, uint32_t listener),
//     private, with this class a friend: sessions are made only by accept and free themselves;
//   - ParseStep parseOne(const char* p, size_t n): reads the one command at the start of
//     [p, p + n), answers or dispatches it, and says what the loop does next (ParseStep).
//     It may throw when the worker's scratch cannot grow (parse() catches it);
//   - refuse(CacheCommand*, CacheErrorReason, std::string_view what): answers a command lb
//     turns down in the protocol's words ("-ERR lb: what"); lb's own failures (a backend
//     timed out, went away) are answered through it too (CacheSession::answerFailure);
//   - static constexpr std::string_view kOverLimit, kTooLarge (CacheSession::overLimitReply,
//     tooLargeReply) and kOutOfMemory: its reply when lb itself runs out of memory.
//
// The loop is one for both protocols; what differs is inside a step. Redis closes on every
// framing error (networking.c, setProtocolError); memcached answers most errors and reads on,
// after dropping a refused command's data block (proto_text.c, conn_swallow), and refuses the
// binary protocol: those are the step's kNext, kPause and kClose.
//
// Loop thread only.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>

#include "lb/proxy/cache/cache_session.h"
#include "lb/proxy/cache/cache_worker.h"
#include "lb/proxy/cache/key_groups.h"

namespace lb {

// What the parse loop does after one step.
struct ParseStep {
  enum class Then : uint8_t {
    kNext,    // `bytes` were consumed; read the next command
    kWait,    // the command is incomplete: it needs `bytes` in all (CacheSession::needBytes)
    kPause,   // `bytes` were consumed and parsing stops here for now (memcached's data block
              // of a refused command, to be skipped first: CacheSession::skipInput)
    kClose,   // input lb cannot resynchronise on: the step has answered; finish and close
  };
  Then then;
  size_t bytes;

  static ParseStep next(size_t consumed) noexcept { return {Then::kNext, consumed}; }
  static ParseStep wait(size_t total) noexcept { return {Then::kWait, total}; }
  static ParseStep pause(size_t consumed) noexcept { return {Then::kPause, consumed}; }
  static ParseStep close() noexcept { return {Then::kClose, 0}; }
};

template <class Protocol>
class CacheProtocolSession : public CacheSession {
 public:
  // A ProtocolTable accept function.
  static void accept(WorkerEnv& env, uv_stream_t* server, const AcceptTransport* transport,
                     const std::shared_ptr<const Snapshot>& snapshot, uint32_t listener,
                     Admission admission) noexcept {
    auto* s = new (std::nothrow) Protocol(env, snapshot, listener);
    if (s == nullptr) return;
    if (s->acceptFrom(server, transport)) s->start(admission);
  }

 protected:
  using CacheSession::CacheSession;

  std::string_view overLimitReply() const noexcept final { return Protocol::kOverLimit; }
  std::string_view tooLargeReply() const noexcept final { return Protocol::kTooLarge; }

  // How many owners a command's keys have (pickOwners).
  enum class Owners : uint8_t {
    kOne,
    kMany,
    kAnswered,   // none: `cmd` has been answered
  };

  // Routes keys scratch().args[first + k * step], k < keys (keys >= 1), their hosts in
  // scratch().hosts. kAnswered when a key has no usable backend (`cmd` is refused with
  // `no_backend`, counted as kNoBackend) or the scratch cannot grow (kOutOfMemory).
  // `read`: the command only reads its keys (MGET, get k1 k2): any copy may answer each.
  Owners pickOwners(CacheCommand* cmd, size_t first, size_t step, size_t keys,
                    std::string_view no_backend, bool read = false) noexcept {
    CacheScratch& sc = cache().scratch();
    try {
      sc.hosts.resize(keys);
    } catch (...) {
      answerStatic(cmd, Protocol::kOutOfMemory);
      return Owners::kAnswered;
    }
    bool one = true;
    for (size_t k = 0; k < keys; ++k) {
      if (!pickHost(sc.args[first + k * step], &sc.hosts[k], read)) {
        self().refuse(cmd, CacheErrorReason::kNoBackend, no_backend);
        return Owners::kAnswered;
      }
      one = one && sc.hosts[k] == sc.hosts[0];
    }
    return one ? Owners::kOne : Owners::kMany;
  }

  // A command whose `keys` keys have several owners (pickOwners said kMany): groups them
  // (key_groups.h) and makes `cmd` a merged command of `kind` with `plan_bytes` of plan
  // (CacheSession::merge). The protocol then writes its plan into cmd->plan, from
  // scratch().key_fragments, and calls sendSplit. False when that cannot be done (out of
  // memory, or more owners than a command can have fragments): `cmd` has been answered with
  // the protocol's kOutOfMemory.
  bool beginSplit(CacheCommand* cmd, uint8_t kind, size_t keys, size_t plan_bytes) noexcept {
    const uint16_t fragments = groupKeys(cache().scratch(), keys);
    cmd->kind = kind;
    cmd->keys = static_cast<uint32_t>(keys);
    if (fragments == 0 || !merge(cmd, fragments, plan_bytes)) {
      cmd->merged = false;
      answerStatic(cmd, Protocol::kOutOfMemory);
      return false;
    }
    return true;
  }

  // Sends each fragment of the command beginSplit grouped, in fragment order:
  // write(chain, key_index, count) appends the fragment's command for its keys (indices into
  // the client's keys, in the client's order) to its server's request chain.
  template <class Write>
  void sendSplit(CacheCommand* cmd, uint8_t reply_kind, Write&& write) noexcept {
    const CacheScratch& sc = cache().scratch();
    uint32_t begin = 0;
    for (size_t f = 0; f < sc.fragment_hosts.size(); ++f) {
      const uint32_t host = sc.fragment_hosts[f];
      const uint32_t end = sc.cursor[f];
      sendFragment(cmd, host, reply_kind, [&](ByteChain& chain) {
        write(chain, sc.order.data() + begin, end - begin);
      });
      begin = end;
    }
  }

  // A command that addresses every server (the listener's fanout on): one fragment to each
  // backend of the cluster, in host order, `write(chain)` appending its bytes; merged as
  // `kind` (CacheSession::beginFanOut). Out of memory: answered with kOutOfMemory.
  template <class Write>
  void fanOut(CacheCommand* cmd, uint8_t kind, uint8_t reply_kind, Write&& write) noexcept {
    if (hostCount() == 0) {
      self().refuse(cmd, CacheErrorReason::kNoBackend, "the cluster has no backends");
      return;
    }
    if (!beginFanOut(cmd, kind)) {
      answerStatic(cmd, Protocol::kOutOfMemory);
      return;
    }
    const uint32_t hosts = hostCount();
    for (uint32_t h = 0; h < hosts; ++h) {
      sendFragment(cmd, h, reply_kind, write);
    }
  }

 private:
  Protocol& self() noexcept { return static_cast<Protocol&>(*this); }

  void answerFailure(CacheCommand* cmd, CacheErrorReason reason,
                     std::string_view text) noexcept final {
    self().refuse(cmd, reason, text);
  }

  size_t parse(const char* p, size_t n) noexcept final {
    size_t used = 0;
    try {
      while (used < n && serving() && canAccept()) {
        const ParseStep step = self().parseOne(p + used, n - used);
        switch (step.then) {
          case ParseStep::Then::kNext:
            used += step.bytes;
            continue;
          case ParseStep::Then::kWait:
            needBytes(step.bytes);
            return used;
          case ParseStep::Then::kPause:
            return used + step.bytes;
          case ParseStep::Then::kClose:
            finish(CacheOutcome::kProtocolError);
            return n;
        }
      }
    } catch (...) {   // scratch growth failed: out of memory
      finish(CacheOutcome::kProtocolError);
      return n;
    }
    return used;
  }
};

}  // namespace lb
