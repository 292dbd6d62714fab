// One client connection of a cache protocol (redis, memcached): everything but the protocol.
// A protocol (lb/proxy/redis, lb/proxy/memcached) derives from it, parses commands out of
// the bytes it is given, routes each key with pickHost(), sends fragments to the worker's
// pipelined server connections, and says how backend replies become the client's replies;
// this class does the rest:
//
//   - reads into a pool block, parsed in place; a command larger than a block doubles the
//     buffer up to limits.max_request_bytes (plus framing), and one larger still gets the
//     protocol's "too large" error before the close; nothing is held while the client is
//     idle;
//   - keeps the client's commands in a queue and answers them strictly in order: a reply
//     that arrives before the ones ahead of it waits in the ReplyArena; the one at the head
//     goes straight to the output;
//   - writes once per loop turn (the worker's FlushList), through a ByteChain;
//   - stops reading while limits.max_in_flight commands wait for replies, or while more than
//     kHighWatermark bytes wait for the client to read them, and resumes below;
//   - closes after timeouts.idle with nothing in flight; drain finishes what is in flight.
//
// States:
//   kServing ──QUIT, EOF, a fatal protocol error, drain──> kFinishing ──queue empty and
//   output written──> kClosed, or after a protocol error with the client still sending
//   ──> kLingering (write side shut down, input read and dropped) ──client EOF, 1 s──>
//   kClosed;  any state ──write error, abort──> kClosed.
//   kServing reads and parses; kFinishing reads nothing more and answers what it has.
//
// Access log: one line per connection when it closes (proto=redis|memcached, status = how
// it ended, commands and errors counted); none per command, as twemproxy logs none.
//
// Reading and input buffering are in cache_session_input.cc, the rest in cache_session.cc.
//
// Lifetime: owns the client's Connection (lb/net/connection.h: the socket, its idle
// timer, the lingering close); neither copied nor moved; frees itself when the connection
// reports its last callback (onClosed). Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "lb/core/stats.h"
#include "lb/routing/snapshot.h"
#include "lb/proxy/cache/byte_chain.h"
#include "lb/proxy/cache/command.h"
#include "lb/proxy/cache/wire.h"
#include "lb/runtime/flush_list.h"
#include "lb/proxy/cache/handover_reads.h"
#include "lb/proxy/cache/near_reads.h"
#include "lb/runtime/protocol_table.h"
#include "lb/proxy/cache/reply_arena.h"
#include "lb/net/connection.h"
#include "lb/runtime/session.h"

namespace lb {

class CacheWorker;
class NearCache;
class ServerConnection;
struct ServerTable;
class WorkerEnv;

// How a cache client connection ended; the access log's status.
enum class CacheOutcome : uint8_t {
  kOk,             // the client closed it
  kQuit,           // QUIT / quit
  kIdleTimeout,
  kClientReset,    // a read or write error on the client's socket
  kProtocolError,  // input lb could not resynchronise on
  kOverLimit,      // past limits.max_connections
  kDrained,        // the worker drained; what was in flight was answered
  kAborted,        // the worker stopped
};
const char* cacheOutcomeName(CacheOutcome o) noexcept;

class CacheSession : public Session,
                     public Flushable,
                     public FragmentOwner,
                     private ConnectionOwner {
 public:
  CacheSession(const CacheSession&) = delete;
  CacheSession& operator=(const CacheSession&) = delete;

  // Session.
  void abort() noexcept override;
  void drain() noexcept override;
  // Flushable: emit the replies that are ready, in order, and write.
  void flush() noexcept override;
  // A new snapshot: a serving session routes by it from now (followSnapshot), and releases
  // its old table once what it sent by that one is answered.
  void snapshotChanged() noexcept override;

  // From a ServerConnection, for a fragment still attached to one of this session's commands:
  // its backend's complete reply, or the failure that ends it (the whole command is
  // answered with the protocol's error, its other fragments detached).
  void fragmentReply(CacheFragment* f, const char* p, size_t n) noexcept override;
  void fragmentFailed(CacheFragment* f, CacheErrorReason reason,
                      std::string_view text) noexcept override;

  // Bytes past which the session stops reading a client that does not read its replies.
  static constexpr size_t kHighWatermark = 256 * 1024;
  static constexpr size_t kLowWatermark = 64 * 1024;

 protected:
  // Loop thread. `snapshot`'s listener `listener` has this session's protocol.
  CacheSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot,
               uint32_t listener, const CacheWire& wire) noexcept;
  ~CacheSession() override;

  // The protocol's half. parse: consume complete commands from [p, p + n) while
  // canAccept(), dispatching each; return the bytes consumed. When a command is incomplete,
  // stop there and call needBytes(total). Never keeps pointers into [p, p + n).
  virtual size_t parse(const char* p, size_t n) noexcept = 0;
  // How a backend reply to `cmd` is used (kStore only for commands begun with merge()).
  virtual ReplyUse useReply(const CacheCommand& cmd, const char* p, size_t n) noexcept = 0;
  // A merged command's reply, from cmd.parts, appended to `out`.
  virtual void emitMerged(CacheCommand& cmd, ByteChain& out) noexcept = 0;
  // Answer `cmd` (with answerError) for a failure lb saw: `text` says what happened
  // ("backend s2 timed out after 300ms"), the protocol wraps it.
  virtual void answerFailure(CacheCommand* cmd, CacheErrorReason reason,
                             std::string_view text) noexcept = 0;
  // What a client past limits.max_connections is told before lb closes.
  virtual std::string_view overLimitReply() const noexcept = 0;
  // What a client whose command exceeds limits.max_request_bytes is told before lb closes.
  virtual std::string_view tooLargeReply() const noexcept = 0;

  // The protocol's accept function: acceptFrom takes the pending connection from `server`
  // with the listener's `transport` under it (false when another worker took it or the
  // client is gone: the session then frees itself quietly), start serves it.
  bool acceptFrom(uv_stream_t* server, const AcceptTransport* transport) noexcept;
  void start(Admission admission) noexcept;

  // --- For parse(): commands --------------------------------------------------------
  // A new command at the end of the client's queue. nullptr only when memory is exhausted
  // (the session is then finishing).
  CacheCommand* beginCommand(uint8_t kind) noexcept;
  // Answers a command now: `bytes` are copied (answer) or outlive the session (answerStatic).
  void answer(CacheCommand* cmd, std::string_view bytes) noexcept;
  void answerStatic(CacheCommand* cmd, std::string_view bytes) noexcept;
  // The same for an error lb answers itself, counted in lb_cache_errors_total.
  void answerError(CacheCommand* cmd, CacheErrorReason reason, std::string_view bytes) noexcept;
  // Answers what is queued, then closes (QUIT; input that cannot be resynchronised).
  void finish(CacheOutcome outcome) noexcept;
  // Whether one more command may be taken now (limits.max_in_flight, output watermark).
  bool canAccept() const noexcept;
  bool serving() const noexcept { return state_ == State::kServing; }
  // The command at the start of the input needs `total` bytes (from its start) before it
  // can parse: parse() is not called again until they are here.
  void needBytes(size_t total) noexcept { need_ = total; }
  // Drop the next n bytes of input once what parse() consumed is gone (memcached's data
  // block of a command lb refused).
  void skipInput(size_t n) noexcept { skip_ += n; }

  // --- For parse(): routing -------------------------------------------------------------
  // The host `key` goes to now (the listener's hash tag, the cluster's key hash and
  // selector, bounded loads and health, the pick counted); false when no backend is usable.
  // `read`: a plain read, which any copy of the key may answer (replicas, read = "local").
  bool pickHost(std::string_view key, uint32_t* host, bool read = false) noexcept;
  // The same in two steps, for a read the near cache may answer without a backend: the
  // hash that routes `key` (counted for hot-key detection), then the pick by it.
  uint64_t countKey(std::string_view key) noexcept;
  // The hash that routes `key`, not counted (for a key pickHost counts elsewhere).
  uint64_t routeHash(std::string_view key) const noexcept;
  // Counts `key`, routed by `route_hash` (routeHash's), as countKey does.
  void countHashed(uint64_t route_hash, std::string_view key) noexcept;
  bool pickHashed(uint64_t route_hash, uint32_t* host, bool read = false) noexcept;
  // The same for a command whose key may be read through or deleted at the host that served
  // it before (handover()): *from is that host inside a handover window, else Pick::kNoHost.
  bool pickHashed(uint64_t route_hash, uint32_t* host, uint32_t* from) noexcept;
  // That pick's read reads through: from its previous host (`from`), or from the key's next
  // copy.
  bool readsThrough(uint32_t from) const noexcept {
    return from != Pick::kNoHost || from_copy_;
  }

  // --- For parse(): the handover read-through, through its one handle (handover_reads.h)
  HandoverReads& handover() noexcept { return handover_reads_; }
  // The protocol's hook for it: the client's reply to `cmd` from a hit at the previous host
  // (in the arena, with the command's lifetime); "" when there is no room (the read is then
  // the owner's miss). By default the previous host's reply as it came.
  virtual std::string_view handoverReply(CacheCommand* cmd, const HandoverFound& found,
                                         std::string_view key) noexcept;
  // For a merged read of several keys (handover().readMerged): the places among the
  // client's keys of those its owners' parts miss, in order, into positions[0..cap); how
  // many. None by default, and none when a part is an error (the merge answers that). The
  // merge (emitMerged) then answers each key with a reply (cmd.handover_keys) by that reply:
  // handoverReply's, in the form of that key's element of a part.
  virtual uint32_t handoverMisses(const CacheCommand& cmd, uint32_t* positions,
                                  uint32_t cap) noexcept;
  // For such a read in a cluster with replicas, whose part `fragment` failed at its server:
  // that part's reply had every one of its keys missed (in the arena, or static), so that
  // they are read at their next copies; "" when the protocol cannot say it (the command then
  // fails as any whose server failed).
  virtual std::string_view mergedMissReply(CacheCommand* cmd, uint16_t fragment) noexcept;
  // A read of several keys reads what its owners miss through (merged even with one owner):
  // inside a handover window, or always in a cluster with replicas.
  bool mergedReadsThrough() const noexcept {
    return handover_reads_.enabled() && (cluster_->handoverOpen() || cluster_->replicas > 1);
  }

  // --- For parse(): the near cache, through its one handle (near_reads.h) ---------------
  NearReads& near() noexcept { return near_reads_; }
  // The protocol's hooks for it: whether a backend reply to a plain read may be stored (a
  // value or a miss, never an error), and, for a fragment's reply of a command with
  // near_fills (the protocol knows the elements), each fill whose element may be stored
  // goes to near().store, which stores it if its ticket holds.
  virtual bool nearCacheable(const char* p, size_t n) const noexcept;
  virtual void nearFillsReplied(CacheCommand* cmd, uint16_t fragment, const char* p,
                                size_t n) noexcept;

  // The same for a command without a key, by on_missing_key (random, round_robin); false
  // for reject or when no backend is usable.
  bool pickKeyless(uint32_t* host) noexcept;
  // One fragment of `cmd` to `host`: `write(chain)` appends the fragment's bytes to the
  // server's request chain, and the fragment is queued behind them. One call, so that
  // nothing can be appended to a server between the bytes and their fragment.
  template <class Write>
  void sendFragment(CacheCommand* cmd, uint32_t host, uint8_t reply_kind,
                    Write&& write) noexcept {
    write(openFragment(host));
    queueFragment(cmd, host, reply_kind);
  }
  // Before the fragments of a merged command: room for one stored reply per fragment and
  // `plan_bytes` of the protocol's plan (cmd->plan). False when memory is exhausted.
  bool merge(CacheCommand* cmd, uint16_t fragments, size_t plan_bytes) noexcept;

  // --- For parse(): writes to a key's copies (cache_session_replicas.cc) --------------------
  // The cluster keeps each key on more than one host (replicas): a write goes to all.
  uint32_t replicas() const noexcept { return cluster_->replicas; }
  // Makes `cmd` a write to the copies of the key routed by `route_hash`: their hosts (the
  // key's first `replicas` usable hosts, taken and counted) into hosts[] (kMaxCopies), one
  // stored reply each. Returns how many; 0 when none is usable or memory is exhausted (`cmd`
  // not touched: the caller refuses it). The protocol then sends the same bytes to each host
  // in that order (sendFragment), and the client gets the first copy's reply that came back,
  // in the key's order: the primary's, or the first replica's when the primary failed.
  uint32_t beginReplicated(CacheCommand* cmd, uint64_t route_hash, uint32_t* hosts) noexcept;
  // The same hosts (taken and counted), for a write that goes to one copy and changes the
  // others otherwise (a compare-and-swap: HandoverReads::deleteAt); how many.
  uint32_t copiesOf(uint64_t route_hash, uint32_t* hosts) noexcept;

  // --- For parse(): commands that address every server (the listener's fanout) ---------
  // Makes `cmd` a merged command of `kind` with one fragment for each backend of the
  // cluster, host h being fragment h (the protocol then sends them in host order); each
  // fragment's server name goes in the plan. False when memory is exhausted or the cluster
  // has more backends than a command can have fragments.
  bool beginFanOut(CacheCommand* cmd, uint8_t kind) noexcept;
  // The table's hosts: a leaving backend past them takes no fan-out (lb/routing/handover.h).
  uint32_t hostCount() const noexcept { return cluster_->hostCount(); }
  // The names of the servers whose parts of fan-out `cmd` failed, ", " between them, cut
  // with "..." to fit `cap` bytes (error lines stay short: some clients read them into 80
  // bytes); "" when none failed.
  static std::string_view fanOutFailures(const CacheCommand& cmd, char* buf, size_t cap) noexcept;

  const ListenerSnapshot& listener() const noexcept { return *listener_; }
  const ClusterSnapshot& cluster() const noexcept { return *cluster_; }
  const Limits& limits() const noexcept { return listener_->config->limits; }
  CacheWorker& cache() noexcept { return cache_; }
  WorkerEnv& env() noexcept { return env_; }
  ReplyArena& arena() noexcept { return arena_; }
  ListenerWorkerStats& listenerStats() noexcept { return lstats_; }

 private:
  // sendFragment's two halves: the server's request chain, then the fragment behind it.
  ByteChain& openFragment(uint32_t host) noexcept;
  // `picked`: the command's pick took a unit of live load at `host` for it (a read through
  // sent from a reply took none).
  void queueFragment(CacheCommand* cmd, uint32_t host, uint8_t reply_kind,
                     bool picked = true) noexcept;
  enum class State : uint8_t { kServing, kFinishing, kLingering, kClosed };

  void parseInput() noexcept;
  void followSnapshot() noexcept;
  void releaseHeld() noexcept;
  friend class NearReads;
  // A replicated write's reply or failure (cache_session_replicas.cc), and its end once
  // every copy is in.
  void replicaReplied(CacheCommand* cmd, CacheFragment* f, const char* p, size_t n) noexcept;
  void replicaFailed(CacheCommand* cmd, CacheFragment* f, CacheErrorReason reason,
                     std::string_view text) noexcept;
  void replicasDone(CacheCommand* cmd, CacheErrorReason reason, std::string_view text) noexcept;
  friend class HandoverReads;
  // The near cache a command of this session took its tickets from (near_reads_'s, or a held
  // table's for a command dispatched before the session moved on).
  NearCache* nearOf(const CacheCommand* cmd) const noexcept;
  void readStart() noexcept;
  void readStop() noexcept;
  bool writing() const noexcept { return conn_.writesInFlight() > 0; }
  void emitReady() noexcept;
  void writeOut() noexcept;
  void maybeResume() noexcept;
  void releaseInput() noexcept;
  bool growInput(size_t want) noexcept;
  size_t maxInput() const noexcept;
  void tooLarge() noexcept;
  void endWritten() noexcept;
  void complete(CacheCommand* cmd) noexcept;
  void detach(CacheCommand* cmd) noexcept;
  void closeNow(CacheOutcome outcome) noexcept;
  void logRecord() noexcept;
  void dirty() noexcept;

  // ConnectionOwner: the client's socket, its only one (reads in cache_session_input.cc;
  // the backends' are the ServerConnections').
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept override;
  void onTimer(Connection& c) noexcept override;
  void onLingerDone(Connection& c) noexcept override;
  void onClosed(Connection& c) noexcept override;

  WorkerEnv& env_;
  CacheWorker& cache_;
  // The snapshot commands are routed by: the worker's newest, followed between reads
  // (followSnapshot). The listener's state, and so lstats_, is the same in every snapshot the
  // session follows (kept by name across reloads).
  std::shared_ptr<const Snapshot> snapshot_;
  const ListenerSnapshot* listener_;
  const ClusterSnapshot* cluster_;
  const CacheWire& wire_;
  ListenerWorkerStats& lstats_;
  ServerTable* table_ = nullptr;
  NearReads near_reads_{*this};    // table_'s near cache, while held
  HandoverReads handover_reads_{*this};   // table_'s handover sink, while held
  // The last pickHashed read a key with copies (replicas): HandoverReads::read reads a miss
  // or a failure through from its next copy.
  bool from_copy_ = false;
  // Tables of snapshots the session has moved on from, held (with their near caches) while
  // commands dispatched by them wait for replies: those numbered below `until_seq`. Oldest
  // first; empty but for the moments after a reload with commands in flight.
  struct HeldTable {
    ServerTable* table;
    uint64_t until_seq;
  };
  std::vector<HeldTable> held_;
  uint32_t slot_ = 0;              // which of a group's connections this client uses
  State state_ = State::kServing;
  CacheOutcome outcome_ = CacheOutcome::kOk;

  Connection conn_;                // the client
  ConnectionWrite write_;          // the one write of out_ in flight
  bool eof_ = false;

  char* in_ = nullptr;             // input: [in_pos_, in_len_) not yet parsed
  size_t in_pos_ = 0;
  size_t in_len_ = 0;
  size_t in_cap_ = 0;
  bool in_pooled_ = false;
  size_t need_ = 0;
  size_t skip_ = 0;

  CacheCommand* head_ = nullptr;   // the client's commands, oldest first
  CacheCommand* tail_ = nullptr;
  uint32_t in_flight_ = 0;         // commands in the queue
  uint64_t next_seq_ = 1;
  ByteChain out_;
  ReplyArena arena_;

  uint64_t start_ns_ = 0;
  uint64_t last_activity_ms_ = 0;
  uint64_t commands_ = 0;
  uint64_t errors_ = 0;
};

}  // namespace lb
