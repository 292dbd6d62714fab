#include "lb/proxy/cache/cache_session.h"

#include <cstring>
#include <new>

#include "lb/core/hash.h"
#include "lb/core/log.h"
#include "lb/runtime/access_log.h"
#include "lb/runtime/backend_attempt.h"
#include "lb/proxy/cache/server_connection.h"
#include "lb/proxy/cache/cache_worker.h"
#include "lb/runtime/worker_env.h"

namespace lb {

namespace {
constexpr int kMaxWriteBuffers = 32;
// How long a connection closed for bad input keeps reading (and dropping) what the client
// still sends after lb's error, so that closing with unread input does not reset the
// connection before the client has read the error (nginx's lingering_close, HttpSession's).
constexpr uint64_t kLingerMs = 1000;
// How long a connection must be quiet before a drain closes it (CacheSession::drain).
constexpr uint64_t kDrainQuietMs = 1000;
}  // namespace

const char* cacheOutcomeName(CacheOutcome o) noexcept {
  switch (o) {
    case CacheOutcome::kOk: return "ok";
    case CacheOutcome::kQuit: return "quit";
    case CacheOutcome::kIdleTimeout: return "idle_timeout";
    case CacheOutcome::kClientReset: return "client_reset";
    case CacheOutcome::kProtocolError: return "protocol_error";
    case CacheOutcome::kOverLimit: return "over_limit";
    case CacheOutcome::kDrained: return "drained";
    case CacheOutcome::kAborted: return "aborted";
  }
  return "?";
}

CacheSession::CacheSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot,
                           uint32_t listener, const CacheWire& wire) noexcept
    : env_(env),
      cache_(CacheWorker::of(env)),
      snapshot_(snapshot),
      listener_(&snapshot_->listeners[listener]),
      cluster_(&snapshot_->clusters[listener_->cluster]),
      wire_(wire),
      lstats_(listener_->state->per_worker[env.index()]),
      conn_(*this, env.loop()),
      out_(env.buffers()),
      arena_(env.buffers()) {
  env_.link(this);
  start_ns_ = uv_hrtime();
}

CacheSession::~CacheSession() { env_.unlink(this); }

bool CacheSession::acceptFrom(uv_stream_t* server, const AcceptTransport* transport) noexcept {
  if (conn_.accept(server, transport) == 0) return true;
  state_ = State::kClosed;
  conn_.close();
  return false;
}

void CacheSession::start(Admission admission) noexcept {
  env_.noteAccepted();
  lstats_.connections_active.add(1);
  conn_.setNoDelay();
  slot_ = static_cast<uint32_t>(env_.nextRandom());
  table_ = cache_.holdTable(*snapshot_, listener_->cluster, wire_);
  if (table_ != nullptr) {
    near_reads_.near_ = table_->near.get();
    handover_reads_.sink_ = table_->handover;
  }
  last_activity_ms_ = uv_now(env_.loop());
  const uint64_t idle = static_cast<uint64_t>(listener_->config->timeouts.idle.count());
  conn_.startTimer(idle);
  if (admission == Admission::kOverLimit || table_ == nullptr) {
    if (CacheCommand* cmd = beginCommand(0)) answerStatic(cmd, overLimitReply());
    finish(CacheOutcome::kOverLimit);
    return;
  }
  readStart();
}

// --- Commands ----------------------------------------------------------------------------

CacheCommand* CacheSession::beginCommand(uint8_t kind) noexcept {
  CacheCommand* cmd = cache_.newCommand();
  if (cmd == nullptr) {
    finish(CacheOutcome::kProtocolError);
    return nullptr;
  }
  cmd->session = this;
  cmd->seq = next_seq_++;
  cmd->kind = kind;
  if (tail_ != nullptr)
    tail_->next = cmd;
  else
    head_ = cmd;
  tail_ = cmd;
  ++in_flight_;
  ++commands_;
  cache_.picks().begin(env_, *listener_->config, *cluster_);
  return cmd;
}

void CacheSession::answerStatic(CacheCommand* cmd, std::string_view bytes) noexcept {
  cmd->reply = bytes.data();
  cmd->reply_len = static_cast<uint32_t>(bytes.size());
  cmd->merged = false;
  complete(cmd);
}

void CacheSession::answer(CacheCommand* cmd, std::string_view bytes) noexcept {
  const char* copy = arena_.copy(bytes.data(), bytes.size(), cmd->seq);
  if (copy == nullptr) {
    answerStatic(cmd, {});
    finish(CacheOutcome::kProtocolError);
    return;
  }
  answerStatic(cmd, {copy, bytes.size()});
}

void CacheSession::answerError(CacheCommand* cmd, CacheErrorReason reason,
                               std::string_view bytes) noexcept {
  ++errors_;
  lstats_.cache_errors[static_cast<int>(reason)].add();
  answer(cmd, bytes);
}

void CacheSession::complete(CacheCommand* cmd) noexcept {
  cmd->state = CacheCommand::State::kDone;
  if (cmd == head_) dirty();
}

void CacheSession::finish(CacheOutcome outcome) noexcept {
  if (state_ != State::kServing) return;
  state_ = State::kFinishing;
  outcome_ = outcome;
  readStop();
  dirty();
}

// Each command is routed by the membership current when lb reads it, as a new connection
// would be: a client keeps its connection for hours across reloads and etcd revisions, and
// one lb must not send a key to two servers by the age of the connection asking. Called
// before every parse; the check is one pointer compare. Commands already sent finish where
// they went: their table stays held (held_) until they are answered. A listener that is gone,
// or now speaks another protocol, keeps its sessions on the snapshot they have (the worker
// closes that listener; these connections end as they will).
void CacheSession::followSnapshot() noexcept {
  const std::shared_ptr<const Snapshot>& current = env_.snapshot();
  if (current == nullptr || current.get() == snapshot_.get()) return;
  const ListenerSnapshot* ls = current->findListener(listener_->config->name);
  if (ls == nullptr || ls->config->protocol != listener_->config->protocol ||
      ls->state != listener_->state)
    return;
  ServerTable* table = cache_.holdTable(*current, ls->cluster, wire_);
  if (table == nullptr) return;   // out of memory: stay on the old one
  if (head_ == nullptr) {
    cache_.releaseTable(table_);
  } else {
    try {
      held_.push_back({table_, next_seq_});
    } catch (...) {
      cache_.releaseTable(table);
      return;
    }
  }
  snapshot_ = current;
  listener_ = ls;
  cluster_ = &snapshot_->clusters[ls->cluster];
  table_ = table;
  near_reads_.near_ = table_->near.get();
  handover_reads_.sink_ = table_->handover;
}

void CacheSession::snapshotChanged() noexcept {
  if (state_ != State::kServing || table_ == nullptr) return;
  followSnapshot();
  releaseHeld();
}

// The held tables whose commands have all been answered and emitted go back.
void CacheSession::releaseHeld() noexcept {
  size_t done = 0;
  while (done < held_.size() && (head_ == nullptr || head_->seq >= held_[done].until_seq))
    cache_.releaseTable(held_[done++].table);
  if (done > 0) held_.erase(held_.begin(), held_.begin() + static_cast<ptrdiff_t>(done));
}

NearCache* CacheSession::nearOf(const CacheCommand* cmd) const noexcept {
  for (const HeldTable& h : held_)
    if (cmd->seq < h.until_seq) return h.table->near.get();
  return near_reads_.near_;
}

bool CacheSession::nearCacheable(const char*, size_t) const noexcept { return false; }

void CacheSession::nearFillsReplied(CacheCommand*, uint16_t, const char*, size_t) noexcept {}

// Through the worker's CommandPicks, the one admission every protocol shares: the unit of
// live load is taken at the pick (a compare-and-swap under the bounded-load cap), so the cap
// holds across workers for cache commands as for HTTP.
bool CacheSession::pickHost(std::string_view key, uint32_t* host, bool read) noexcept {
  return pickHashed(countKey(key), host, read);
}

uint64_t CacheSession::routeHash(std::string_view key) const noexcept {
  return hashKeyBytes(cluster_->selector->key_hash,
                      keyWithinHashTag(key, listener_->config->hash_tag));
}

uint64_t CacheSession::countKey(std::string_view key) noexcept {
  const uint64_t hash = routeHash(key);
  // Counted on the hash that routes it (with a hash_tag, every key of one tag is one entry,
  // shown by the first of its keys the summary tracked): what loads one backend. A read the
  // near cache answers is counted too, or a key would stop being hot by being cached.
  cluster_->countKey(env_.index(), hash, key);
  return hash;
}

void CacheSession::countHashed(uint64_t route_hash, std::string_view key) noexcept {
  cluster_->countKey(env_.index(), route_hash, key);
}

bool CacheSession::pickHashed(uint64_t route_hash, uint32_t* host, bool read) noexcept {
  return cache_.picks().pickForKey(route_hash, host, nullptr, read);
}

bool CacheSession::pickHashed(uint64_t route_hash, uint32_t* host, uint32_t* from) noexcept {
  *from = Pick::kNoHost;
  from_copy_ = false;
  return cache_.picks().pickForKey(route_hash, host, handover_reads_.enabled() ? from : nullptr,
                                   true, &from_copy_);
}

bool CacheSession::pickKeyless(uint32_t* host) noexcept {
  return cache_.picks().pickWithoutKey(host);
}

ByteChain& CacheSession::openFragment(uint32_t host) noexcept {
  ServerGroup* g = table_->hosts[host];
  ServerConnection* s = g->servers[slot_ % g->servers.size()];
  return s->open(static_cast<uint64_t>(listener_->config->timeouts.connect.count()));
}

void CacheSession::queueFragment(CacheCommand* cmd, uint32_t host, uint8_t reply_kind,
                                 bool picked) noexcept {
  ServerGroup* g = table_->hosts[host];
  ServerConnection* s = g->servers[slot_ % g->servers.size()];
  CacheFragment* f = cache_.newFragment();
  if (f == nullptr) {
    // The bytes are in the server's chain already and will be answered: a detached
    // fragment would be needed to drop that answer, and there is no memory for one. The
    // connection cannot stay aligned; this client goes.
    finish(CacheOutcome::kProtocolError);
    return;
  }
  f->command = cmd;
  f->index = cmd->fragment_count++;
  f->reply_kind = reply_kind;
  f->timeout_ms = static_cast<uint32_t>(listener_->config->timeouts.response.count());
  f->sent_ns = uv_hrtime();
  f->next_in_command = cmd->fragments;
  cmd->fragments = f;
  ++cmd->pending;
  // The fragment carries the unit its host's pick took until it leaves the server's queue.
  // A host this command never picked has none to hand over (no caller does that): add one,
  // so that the server connection's release stays matched.
  if (!picked || !cache_.picks().handOver(host)) g->state->addLive();
  s->push(f);
}

bool CacheSession::merge(CacheCommand* cmd, uint16_t fragments, size_t plan_bytes) noexcept {
  cmd->merged = true;
  cmd->parts = reinterpret_cast<FragmentReply*>(
      arena_.allocate(sizeof(FragmentReply) * fragments, cmd->seq));
  cmd->plan = plan_bytes > 0 ? arena_.allocate(plan_bytes, cmd->seq) : nullptr;
  if (cmd->parts == nullptr || (plan_bytes > 0 && cmd->plan == nullptr)) return false;
  for (uint16_t i = 0; i < fragments; ++i) cmd->parts[i] = {nullptr, 0};
  return true;
}

bool CacheSession::beginFanOut(CacheCommand* cmd, uint8_t kind) noexcept {
  const size_t hosts = table_->hosts.size();
  if (hosts == 0 || hosts > UINT16_MAX) return false;
  cmd->kind = kind;
  cmd->fan_out = true;
  if (!merge(cmd, static_cast<uint16_t>(hosts), hosts * sizeof(const std::string*))) {
    cmd->merged = false;
    return false;
  }
  auto* names = static_cast<const std::string**>(cmd->plan);
  for (size_t h = 0; h < hosts; ++h) names[h] = &table_->hosts[h]->state->name;
  return true;
}

std::string_view CacheSession::fanOutFailures(const CacheCommand& cmd, char* buf,
                                              size_t cap) noexcept {
  const auto* names = static_cast<const std::string* const*>(cmd.plan);
  size_t len = 0;
  for (uint16_t i = 0; i < cmd.fragment_count; ++i) {
    if (!cmd.parts[i].failed) continue;
    const std::string& name = *names[i];
    const size_t sep = len > 0 ? 2 : 0;
    if (len + sep + name.size() + 3 > cap) {
      if (len + 3 <= cap) {
        memcpy(buf + len, "...", 3);
        len += 3;
      }
      break;
    }
    if (sep > 0) memcpy(buf + len, ", ", 2);
    memcpy(buf + len + sep, name.data(), name.size());
    len += sep + name.size();
  }
  return {buf, len};
}

// Takes `f` off its command's list of unanswered fragments.
static void unlinkFragment(CacheCommand* cmd, CacheFragment* f) noexcept {
  for (CacheFragment** p = &cmd->fragments; *p != nullptr; p = &(*p)->next_in_command) {
    if (*p == f) {
      *p = f->next_in_command;
      break;
    }
  }
  f->next_in_command = nullptr;
  f->command = nullptr;
  --cmd->pending;
}

void CacheSession::fragmentReply(CacheFragment* f, const char* p, size_t n) noexcept {
  CacheCommand* cmd = f->command;
  unlinkFragment(cmd, f);
  if (cmd->replicated) {
    replicaReplied(cmd, f, p, n);
    return;
  }
  if (cmd->handover_stage != HandoverReads::kNone && handover_reads_.replied(cmd, f, p, n))
    return;
  if (cmd->near_fill || cmd->near_writes > 0) near_reads_.replied(cmd, p, n);
  if (cmd->near_fill_count > 0) nearFillsReplied(cmd, f->index, p, n);
  switch (useReply(*cmd, p, n)) {
    case ReplyUse::kPass:
      if (cmd == head_ && cmd->pending == 0 && state_ != State::kClosed) {
        // Nothing ahead of it: straight to the output, no copy in between.
        out_.append(p, n);
        answerStatic(cmd, {});
        return;
      }
      cmd->merged = false;
      cmd->reply = arena_.copy(p, n, cmd->seq);
      cmd->reply_len = cmd->reply != nullptr ? static_cast<uint32_t>(n) : 0;
      break;
    case ReplyUse::kDrop:
      cmd->merged = false;
      cmd->reply = nullptr;
      cmd->reply_len = 0;
      break;
    case ReplyUse::kStore:
      cmd->parts[f->index].bytes = arena_.copy(p, n, cmd->seq);
      cmd->parts[f->index].len = static_cast<uint32_t>(n);
      break;
  }
  if (cmd->pending > 0) return;
  // A merged read in a handover window reads the keys its owners missed through first.
  if (cmd->handover_stage == HandoverReads::kMergeAtOwners && handover_reads_.readMisses(cmd))
    return;
  complete(cmd);
}

// Every fragment of `cmd` still out is left to its server as a tombstone.
void CacheSession::detach(CacheCommand* cmd) noexcept {
  for (CacheFragment* f = cmd->fragments; f != nullptr;) {
    CacheFragment* next = f->next_in_command;
    f->next_in_command = nullptr;
    f->command = nullptr;
    f = next;
  }
  cmd->fragments = nullptr;
  cmd->pending = 0;
}

void CacheSession::fragmentFailed(CacheFragment* f, CacheErrorReason reason,
                                  std::string_view text) noexcept {
  CacheCommand* cmd = f->command;
  unlinkFragment(cmd, f);
  if (cmd->replicated) {
    replicaFailed(cmd, f, reason, text);
    return;
  }
  if (cmd->handover_stage != HandoverReads::kNone && handover_reads_.failed(cmd, f)) return;
  // A write that failed may still have been applied: its keys' stripes move again.
  if (cmd->near_writes > 0) near_reads_.replied(cmd, nullptr, 0);
  if (cmd->fan_out) {
    // One server's part failed: the others are waited for, and the merge names them all.
    cmd->parts[f->index] = FragmentReply{nullptr, 0, true};
    if (cmd->pending == 0) complete(cmd);
    return;
  }
  detach(cmd);
  cmd->merged = false;
  answerFailure(cmd, reason, text);
}

// --- Writing -----------------------------------------------------------------------------

void CacheSession::dirty() noexcept {
  if (state_ != State::kClosed) cache_.flushes().add(this);
}

void CacheSession::emitReady() noexcept {
  uint64_t emitted = 0;
  while (head_ != nullptr && head_->state == CacheCommand::State::kDone) {
    CacheCommand* cmd = head_;
    if (cmd->merged)
      emitMerged(*cmd, out_);
    else if (cmd->reply_len > 0)
      out_.append(cmd->reply, cmd->reply_len);
    emitted = cmd->seq;
    head_ = cmd->next;
    if (head_ == nullptr) tail_ = nullptr;
    --in_flight_;
    cache_.freeCommand(cmd);
  }
  if (emitted == 0) return;
  if (!held_.empty()) releaseHeld();
  if (head_ == nullptr)
    arena_.clear();
  else
    arena_.release(emitted);
}

void CacheSession::flush() noexcept {
  if (state_ == State::kClosed) return;
  emitReady();
  writeOut();
  if (state_ == State::kClosed) return;
  if (state_ == State::kFinishing) {
    if (head_ == nullptr && out_.empty() && !writing()) endWritten();
    return;
  }
  maybeResume();
}

// kMaxWriteBuffers blocks per write, as much as the socket takes now and the rest queued
// (bytes stay in out_ until written), until a remainder is queued (onWritten goes on) or
// nothing is left: a reply longer than one writev goes on without waiting for a callback.
void CacheSession::writeOut() noexcept {
  while (!writing() && !out_.empty()) {
    uv_buf_t bufs[kMaxWriteBuffers];
    const int n = out_.buffers(bufs, kMaxWriteBuffers);
    const ssize_t w = conn_.write(&write_, bufs, static_cast<unsigned>(n));
    if (w < 0) {
      closeNow(CacheOutcome::kClientReset);
      return;
    }
    out_.consume(static_cast<size_t>(w));
  }
}

void CacheSession::onWritten(Connection&, ConnectionWrite* w, int status) noexcept {
  if (state_ == State::kClosed) return;
  if (status < 0) {
    closeNow(CacheOutcome::kClientReset);
    return;
  }
  out_.consume(w->bytes);
  dirty();
}

// Everything is answered and written. A client that may still be sending (lb stopped at
// input it could not parse, or a drain ends a quiet connection) is lingered on: the write side shuts down, so the client reads
// lb's last answer and then EOF, and what it still sends is dropped until it closes or
// kLingerMs pass. Otherwise the connection closes now.
void CacheSession::endWritten() noexcept {
  if ((outcome_ != CacheOutcome::kProtocolError && outcome_ != CacheOutcome::kDrained) || eof_) {
    closeNow(outcome_);
    return;
  }
  state_ = State::kLingering;
  releaseInput();
  if (!conn_.lingerClose(kLingerMs)) closeNow(outcome_);
}

// The client closed after reading lb's last answer, or the linger time passed.
void CacheSession::onLingerDone(Connection&) noexcept { closeNow(outcome_); }

// Reading stopped at a limit: with room again, parse what is buffered, then read more.
void CacheSession::maybeResume() noexcept {
  if (state_ != State::kServing || conn_.reading() || eof_ || !canAccept()) return;
  if (out_.size() > kLowWatermark) return;
  parseInput();
  if (state_ == State::kServing && canAccept()) readStart();
}

// --- Timer, close ------------------------------------------------------------------------

// timeouts.idle: a client with nothing in flight and nothing read for that long is closed.
// The timer runs once per idle period rather than being restarted on every read.
// While the worker drains, kDrainQuietMs (when shorter) ends a quiet connection instead.
void CacheSession::onTimer(Connection&) noexcept {
  if (state_ == State::kClosed || state_ == State::kLingering) return;
  uint64_t idle = static_cast<uint64_t>(listener_->config->timeouts.idle.count());
  if (env_.draining() && idle > kDrainQuietMs) idle = kDrainQuietMs;
  const uint64_t now = uv_now(env_.loop());
  const uint64_t quiet = now - last_activity_ms_;
  if (head_ == nullptr && out_.empty() && quiet >= idle) {
    if (env_.draining() && state_ == State::kServing) {
      finish(CacheOutcome::kDrained);   // a lingering close: FIN, never a reset
      return;
    }
    closeNow(state_ == State::kServing ? CacheOutcome::kIdleTimeout : outcome_);
    return;
  }
  conn_.startTimer(quiet >= idle ? idle : idle - quiet);
}

// A cache protocol has no "close after this reply", and a client pipelines: commands may be
// on the wire at any moment of a busy connection, and closing it would leave them without an
// answer. So a drain does not end a connection in use: it goes on being served until it has
// been quiet (nothing in flight, nothing read) for kDrainQuietMs, or the drain's deadline
// stops the worker.
void CacheSession::drain() noexcept {
  if (state_ != State::kServing) return;
  const uint64_t quiet = uv_now(env_.loop()) - last_activity_ms_;
  if (head_ == nullptr && out_.empty() && quiet >= kDrainQuietMs) {
    finish(CacheOutcome::kDrained);   // quiet for long enough already
    return;
  }
  conn_.startTimer(quiet >= kDrainQuietMs ? kDrainQuietMs : kDrainQuietMs - quiet);
}

void CacheSession::abort() noexcept { closeNow(CacheOutcome::kAborted); }

void CacheSession::closeNow(CacheOutcome outcome) noexcept {
  if (state_ == State::kClosed) return;
  if (state_ == State::kServing || outcome != CacheOutcome::kOk) outcome_ = outcome;
  state_ = State::kClosed;
  cache_.flushes().remove(this);
  logRecord();
  lstats_.connections_active.add(-1);
  readStop();
  while (head_ != nullptr) {
    CacheCommand* cmd = head_;
    head_ = cmd->next;
    detach(cmd);
    cache_.freeCommand(cmd);
  }
  tail_ = nullptr;
  in_flight_ = 0;
  out_.clear();   // a write still queued comes back cancelled; libuv reads its bytes no more
  arena_.clear();
  releaseInput();
  near_reads_.near_ = nullptr;
  handover_reads_.sink_ = nullptr;
  for (const HeldTable& h : held_) cache_.releaseTable(h.table);
  held_.clear();
  cache_.releaseTable(table_);
  table_ = nullptr;
  conn_.close();
}

// The connection's last callback is back: nothing of libuv's refers to this session now.
void CacheSession::onClosed(Connection&) noexcept { delete this; }

void CacheSession::logRecord() noexcept {
  AccessLog* log = env_.accessLog();
  if (log == nullptr || !log->enabled()) return;
  AccessRecord r;
  r.listener = listener_->config->name;
  r.proto = wire_.name();
  r.client = conn_.peer();
  r.outcome = cacheOutcomeName(outcome_);
  r.bytes_in = conn_.bytesRead();
  r.bytes_out = conn_.bytesWritten();
  r.duration_us = (uv_hrtime() - start_ns_) / 1000;
  r.commands = commands_;
  r.errors = errors_;
  r.has_counts = true;
  log->write(r);
}

}  // namespace lb
