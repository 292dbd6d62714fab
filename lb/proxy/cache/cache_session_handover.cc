// HandoverReads and HandoverSink (handover_reads.h): the session's handle on the read-through,
// beside the session, whose state it reads, as cache_session_near.cc is for NearReads.
#include "lb/proxy/cache/handover_reads.h"

#include <algorithm>

#include "lb/proxy/cache/cache_session.h"
#include "lb/proxy/cache/cache_worker.h"
#include "lb/proxy/cache/server_connection.h"
#include "lb/routing/backend_state.h"

namespace lb {

HandoverSink::HandoverSink(std::shared_ptr<ClusterState> state, const CacheWire& wire,
                           unsigned worker) noexcept
    : state_(std::move(state)), wire_(wire), stats_(state_->handover.worker(worker)),
      worker_(worker) {
  copies_.session = this;
  deletes_.session = this;
  replica_writes_.session = this;
}

void HandoverSink::fragmentReply(CacheFragment* f, const char* p, size_t n) noexcept {
  if (f->command == &replica_writes_) {
    if (wire_.isError(p, n) && f->copy_of != nullptr)
      f->copy_of->per_worker[worker_].replica_write_failures.add();
    f->command = nullptr;
    return;
  }
  const HandoverWrite w = wire_.handoverWritten(p, n);
  if (f->command == &copies_) {
    const HandoverCopy c = w == HandoverWrite::kDone      ? HandoverCopy::kStored
                           : w == HandoverWrite::kNotDone ? HandoverCopy::kNotStored
                                                          : HandoverCopy::kError;
    stats_.copies[static_cast<int>(c)].add();
  } else {
    const HandoverDelete d = w == HandoverWrite::kError ? HandoverDelete::kError
                                                        : HandoverDelete::kOk;
    stats_.deletes[static_cast<int>(d)].add();
  }
  f->command = nullptr;
}

void HandoverSink::fragmentFailed(CacheFragment* f, CacheErrorReason, std::string_view) noexcept {
  if (f->command == &replica_writes_) {
    if (f->copy_of != nullptr) f->copy_of->per_worker[worker_].replica_write_failures.add();
  } else if (f->command == &copies_)
    stats_.copies[static_cast<int>(HandoverCopy::kError)].add();
  else
    stats_.deletes[static_cast<int>(HandoverDelete::kError)].add();
  // Detached: a timed-out one's late reply, or none, is dropped by its server connection.
  f->command = nullptr;
}

namespace {

// A copy or a delete to `host` of the session's table: the bytes, then a fragment of the
// sink's behind them. Nothing waits for it; its host carries it as a unit of live load until
// it is answered, added here since no pick took one for it.
// Behind the bytes just written to `host`'s connection: `f` (taken before they were
// written, so that no byte goes out without its fragment) queued for their reply.
void queueUnanswered(ServerTable& table, uint32_t slot, uint32_t response_timeout_ms,
                     CacheFragment* f, CacheCommand* owner, uint32_t host,
                     uint8_t reply_kind) noexcept {
  ServerGroup* g = table.hosts[host];
  ServerConnection* s = g->servers[slot % g->servers.size()];
  f->command = owner;
  f->reply_kind = reply_kind;
  f->timeout_ms = response_timeout_ms;
  f->sent_ns = uv_hrtime();
  g->state->addLive();
  s->push(f);
}

template <class Write>
void sendUnanswered(ServerTable& table, uint32_t slot, uint64_t connect_timeout_ms,
                    uint32_t response_timeout_ms, CacheWorker& worker, CacheCommand* owner,
                    uint32_t host, uint8_t reply_kind, Write&& write) noexcept {
  ServerGroup* g = table.hosts[host];
  CacheFragment* f = worker.newFragment();
  if (f == nullptr) return;   // out of memory: no copy, no delete, nothing sent
  write(g->servers[slot % g->servers.size()]->open(connect_timeout_ms));
  queueUnanswered(table, slot, response_timeout_ms, f, owner, host, reply_kind);
}

}  // namespace

bool HandoverReads::askAgainWith(CacheCommand* cmd, std::string_view again,
                                 uint8_t again_kind) noexcept {
  const char* bytes = s_.arena_.copy(again.data(), again.size(), cmd->seq);
  if (bytes == nullptr) return false;
  cmd->handover_reask = bytes;
  cmd->handover_reask_len = static_cast<uint32_t>(again.size());
  cmd->handover_reask_kind = again_kind;
  return true;
}

void HandoverReads::read(CacheCommand* cmd, std::string_view key, uint32_t owner,
                         uint32_t from, std::string_view again, uint8_t again_kind) noexcept {
  if (sink_ == nullptr || !s_.readsThrough(from)) return;
  const char* copy = s_.arena_.copy(key.data(), key.size(), cmd->seq);
  if (copy == nullptr) return;   // read as outside a window
  if (!again.empty() && !askAgainWith(cmd, again, again_kind)) return;
  cmd->handover_key = copy;
  cmd->handover_key_len = static_cast<uint32_t>(key.size());
  cmd->handover_owner = owner;
  cmd->handover_from = from;
  cmd->handover_copy = s_.from_copy_;
  cmd->handover_stage = kAtOwner;
}

void HandoverReads::countReplica(ReplicaReadResult r) noexcept {
  if (sink_ != nullptr) sink_->stats().replica_reads[static_cast<int>(r)].add();
}

void HandoverReads::wrote(std::string_view key, uint32_t owner) noexcept {
  if (sink_ == nullptr) return;
  const uint32_t from = s_.cluster_->handoverFrom(s_.routeHash(key), owner);
  if (from != Pick::kNoHost) deleteAt(key, from);
}

void HandoverReads::deleteAt(std::string_view key, uint32_t from) noexcept {
  if (sink_ == nullptr) return;
  const CacheWire& wire = sink_->wire();
  const auto& t = s_.listener_->config->timeouts;
  sendUnanswered(*s_.table_, s_.slot_, static_cast<uint64_t>(t.connect.count()),
                 static_cast<uint32_t>(t.response.count()), s_.cache_, sink_->deletes(), from,
                 wire.handoverKind(HandoverOp::kDelete),
                 [&](ByteChain& out) { wire.appendDelete(out, key); });
}

// The read goes to the previous host (or the next copy); `miss` (in the arena, or static) is
// kept as the answer should that fail or miss too. parts: [0] that answer, [1..] the other
// host's replies.
void HandoverReads::readAtFrom(CacheCommand* cmd, const char* miss, size_t n) noexcept {
  const CacheWire& wire = s_.wire_;
  const std::string_view key{cmd->handover_key, cmd->handover_key_len};
  ByteChain& out = s_.openFragment(cmd->handover_from);
  const uint32_t replies = wire.appendHandoverRead(out, key);
  auto* parts = reinterpret_cast<FragmentReply*>(
      s_.arena_.allocate(sizeof(FragmentReply) * (1 + replies), cmd->seq));
  if (parts != nullptr && miss != nullptr) {
    for (uint32_t i = 0; i <= replies; ++i) parts[i] = {nullptr, 0};
    parts[0] = {miss, static_cast<uint32_t>(n)};
    cmd->parts = parts;
  }
  // The bytes are in the server's chain: their fragments go behind them whatever happens,
  // so that the connection stays aligned; without room for the replies they are dropped.
  cmd->handover_stage = kAtPrevious;
  for (uint32_t i = 0; i < replies; ++i)
    s_.queueFragment(cmd, cmd->handover_from, wire.handoverKind(HandoverOp::kRead), false);
  if (cmd->parts == nullptr) {
    s_.detach(cmd);
    cmd->handover_stage = kNone;
    s_.answerStatic(cmd, {});
    s_.finish(CacheOutcome::kProtocolError);
  }
}

bool HandoverReads::resolveFrom(CacheCommand* cmd) noexcept {
  if (cmd->handover_from != Pick::kNoHost) return true;
  if (!cmd->handover_copy) return false;
  const std::string_view key{cmd->handover_key, cmd->handover_key_len};
  cmd->handover_from = s_.cluster_->nextCopyOf(s_.routeHash(key), cmd->handover_owner);
  return cmd->handover_from != Pick::kNoHost;
}

ByteChain* HandoverReads::openCopy(uint32_t host) noexcept {
  if (sink_ == nullptr || open_copy_ != nullptr) return nullptr;
  open_copy_ = s_.cache_.newFragment();
  if (open_copy_ == nullptr) return nullptr;
  open_copy_->copy_of = s_.table_->hosts[host]->state.get();
  return &s_.openFragment(host);
}

void HandoverReads::copyWritten(uint32_t host, uint8_t reply_kind) noexcept {
  CacheFragment* f = open_copy_;
  open_copy_ = nullptr;
  if (f == nullptr) return;
  queueUnanswered(*s_.table_, s_.slot_,
                  static_cast<uint32_t>(s_.listener_->config->timeouts.response.count()), f,
                  sink_->replicaWrites(), host, reply_kind);
}

bool HandoverReads::movedOn(const CacheCommand* cmd) const noexcept {
  // Its hosts' numbers may mean other servers in the table the session routes by now.
  return !s_.held_.empty() && cmd->seq < s_.held_.back().until_seq;
}

bool HandoverReads::copyTo(uint32_t owner, std::string_view key, const HandoverFound& found,
                           bool replica) noexcept {
  // A replica's copy keeps the item's own time to live, none included: it is the same item.
  // A handover's is capped at copy_ttl, which bounds the race with writes that bypass lb.
  int64_t ttl = found.ttl_ms;
  if (!replica) {
    const int64_t cap = s_.cluster_->config->handover->copy_ttl.count();
    ttl = found.ttl_ms == HandoverFound::kNoTtl ? cap : std::min(found.ttl_ms, cap);
  }
  const bool expired = ttl != HandoverFound::kNoTtl && ttl <= 0;   // gone since: copy nothing
  if (expired || sink_ == nullptr) return false;
  const CacheWire& wire = sink_->wire();
  const auto& t = s_.listener_->config->timeouts;
  sendUnanswered(*s_.table_, s_.slot_, static_cast<uint64_t>(t.connect.count()),
                 static_cast<uint32_t>(t.response.count()), s_.cache_, sink_->copies(), owner,
                 wire.handoverKind(HandoverOp::kCopy),
                 [&](ByteChain& out) { wire.appendCopy(out, key, found, ttl); });
  return true;
}

bool HandoverReads::replied(CacheCommand* cmd, CacheFragment* f, const char* p,
                            size_t n) noexcept {
  const bool moved_on = movedOn(cmd);
  const CacheWire& wire = s_.wire_;
  ReplyArena& arena = s_.arena_;
  if (cmd->handover_stage == kMergeAtOwners) return false;   // stored as any split read's
  if (cmd->handover_stage == kMergeReads || cmd->handover_stage == kMergeAskedAgain) {
    FragmentReply& slot = cmd->parts[f->index];
    slot.bytes = arena.copy(p, n, cmd->seq);
    slot.len = slot.bytes != nullptr ? static_cast<uint32_t>(n) : 0;
    if (cmd->pending > 0) return true;
    if (cmd->handover_stage == kMergeReads)
      mergeReadsDone(cmd);
    else
      mergeAskedDone(cmd);
    return true;
  }
  if (cmd->handover_stage == kAtOwner) {
    // A hit or an error at the owner is its answer; so is a miss once the session moved on,
    // or a miss of a key that has no other copy to read.
    const bool miss = sink_ != nullptr && !moved_on && wire.isMiss(p, n);
    if (!miss || !resolveFrom(cmd)) {
      if (cmd->handover_copy)
        countReplica(miss ? ReplicaReadResult::kMiss : ReplicaReadResult::kPrimary);
      cmd->handover_stage = kNone;
      return false;
    }
    readAtFrom(cmd, arena.copy(p, n, cmd->seq), n);
    return true;
  }
  if (cmd->handover_stage == kAskedAgain) {
    // The owner's answer to the command asked again: the client's reply, as any read's.
    cmd->handover_stage = kNone;
    cmd->merged = false;
    return false;
  }
  // kAtPrevious: one of the previous host's replies (fragments 1.., after the owner's 0).
  const uint32_t replies = cmd->fragment_count - 1u;
  FragmentReply& slot = cmd->parts[f->index];
  slot.bytes = arena.copy(p, n, cmd->seq);
  slot.len = slot.bytes != nullptr ? static_cast<uint32_t>(n) : 0;
  if (cmd->pending > 0) return true;
  HandoverFound found;
  bool complete = true;
  for (uint32_t i = 1; i <= replies; ++i) complete = complete && cmd->parts[i].bytes != nullptr;
  if (complete) found = wire.handoverFound(cmd->parts + 1, replies);
  else found.result = HandoverRead::kError;
  if (cmd->handover_copy)
    countReplica(found.result == HandoverRead::kHit    ? ReplicaReadResult::kReplica
                 : found.result == HandoverRead::kMiss ? ReplicaReadResult::kMiss
                                                       : ReplicaReadResult::kError);
  else if (sink_ != nullptr)
    sink_->stats().reads[static_cast<int>(found.result)].add();
  if (found.result != HandoverRead::kHit) {
    answered(cmd);
    return true;
  }
  const std::string_view key{cmd->handover_key, cmd->handover_key_len};
  // The copy back goes to the copy read first, where the key was missing (a failed one
  // would only fail it again).
  const bool copied = !moved_on && !cmd->handover_owner_failed &&
                      copyTo(cmd->handover_owner, key, found, cmd->handover_copy);
  if (cmd->handover_reask != nullptr) {
    // Asked again behind the copy, on the same connection: the owner answers with the item.
    // Without a copy it would only miss again: the owner's miss is the answer.
    if (!copied) {
      answered(cmd);
      return true;
    }
    ByteChain& out = s_.openFragment(cmd->handover_owner);
    out.append({cmd->handover_reask, cmd->handover_reask_len});
    cmd->handover_stage = kAskedAgain;
    s_.queueFragment(cmd, cmd->handover_owner, cmd->handover_reask_kind, false);
    return true;
  }
  const std::string_view reply = s_.handoverReply(cmd, found, key);
  if (reply.empty()) {
    answered(cmd);
    return true;
  }
  cmd->handover_stage = kNone;
  cmd->merged = false;
  s_.answerStatic(cmd, reply);   // in the arena, with the command's lifetime
  return true;
}

// The previous host failed or timed out: the read is the owner's miss. The owner asked
// again failed: its first miss is the answer (the read was a hit, counted). A merged read's
// key read failed: that key is a miss (counted when all are in).
bool HandoverReads::failed(CacheCommand* cmd, CacheFragment* f) noexcept {
  // A part of a merged read of keys with copies failed before health noticed: its keys
  // read as missed there, and are read at their next copies with the other misses.
  if (cmd->handover_stage == kMergeAtOwners && cmd->handover_copy && !movedOn(cmd)) {
    const std::string_view miss = s_.mergedMissReply(cmd, f->index);
    if (!miss.empty()) {
      cmd->parts[f->index] = {miss.data(), static_cast<uint32_t>(miss.size())};
      if (cmd->pending > 0) return true;
      if (!readMisses(cmd)) s_.complete(cmd);
      return true;
    }
  }
  if (cmd->handover_stage == kMergeReads || cmd->handover_stage == kMergeAskedAgain) {
    cmd->parts[f->index] = {nullptr, 0};
    if (cmd->pending > 0) return true;
    if (cmd->handover_stage == kMergeReads)
      mergeReadsDone(cmd);
    else
      mergeAskedDone(cmd);
    return true;
  }
  // A key's copy failed before health noticed: the read goes to its next copy, within the
  // same command. A command asked of its owner (gets, mg) is asked of the next copy as it
  // is, and its reply is the answer; a plain read reads the value there.
  if (cmd->handover_stage == kAtOwner && cmd->handover_copy && sink_ != nullptr &&
      !movedOn(cmd) && resolveFrom(cmd)) {
    cmd->handover_owner_failed = true;
    if (cmd->handover_reask != nullptr) {
      ByteChain& out = s_.openFragment(cmd->handover_from);
      out.append({cmd->handover_reask, cmd->handover_reask_len});
      cmd->handover_stage = kAskedAgain;
      s_.queueFragment(cmd, cmd->handover_from, cmd->handover_reask_kind, false);
      return true;
    }
    const std::string_view miss = s_.wire_.missReply();
    readAtFrom(cmd, miss.data(), miss.size());
    return true;
  }
  // The next copy failed too: the command fails as any whose server failed.
  if (cmd->handover_owner_failed) {
    if (cmd->handover_stage == kAtPrevious) countReplica(ReplicaReadResult::kError);
    cmd->handover_stage = kNone;
    return false;
  }
  if (cmd->handover_stage != kAtPrevious && cmd->handover_stage != kAskedAgain) {
    cmd->handover_stage = kNone;
    return false;
  }
  s_.detach(cmd);
  if (cmd->handover_copy && cmd->handover_stage == kAtPrevious)
    countReplica(ReplicaReadResult::kError);
  else if (sink_ != nullptr && cmd->handover_stage == kAtPrevious)
    sink_->stats().reads[static_cast<int>(HandoverRead::kError)].add();
  answered(cmd);
  return true;
}

void HandoverReads::answered(CacheCommand* cmd) noexcept {
  cmd->handover_stage = kNone;
  cmd->merged = false;
  s_.answerStatic(cmd, {cmd->parts[0].bytes, cmd->parts[0].len});
}

void HandoverReads::readMerged(CacheCommand* cmd, const std::vector<std::string_view>& keys,
                               std::string_view again, uint8_t again_kind) noexcept {
  if (sink_ == nullptr || !s_.mergedReadsThrough() || keys.empty()) return;
  if (!again.empty() && !askAgainWith(cmd, again, again_kind)) return;
  // Outside a handover window, the keys' misses are read at their next copies (replicas).
  cmd->handover_copy = !s_.cluster_->handoverOpen();
  auto* reads = reinterpret_cast<HandoverKeyRead*>(
      s_.arena_.allocate(sizeof(HandoverKeyRead) * keys.size(), cmd->seq));
  if (reads == nullptr) return;   // merged as outside a window
  for (size_t i = 0; i < keys.size(); ++i) {
    const char* copy = s_.arena_.copy(keys[i].data(), keys[i].size(), cmd->seq);
    if (copy == nullptr) return;
    reads[i] = HandoverKeyRead{};
    reads[i].key = copy;
    reads[i].key_len = static_cast<uint32_t>(keys[i].size());
    reads[i].position = static_cast<uint32_t>(i);
  }
  cmd->handover_keys = reads;
  cmd->handover_key_count = static_cast<uint32_t>(keys.size());
  cmd->handover_stage = kMergeAtOwners;
}

bool HandoverReads::readMisses(CacheCommand* cmd) noexcept {
  cmd->handover_stage = kNone;
  HandoverKeyRead* keys = cmd->handover_keys;
  const uint32_t all = cmd->handover_key_count;
  cmd->handover_key_count = 0;   // none read through, unless below
  if (sink_ == nullptr || movedOn(cmd) || keys == nullptr) return false;
  auto* positions = reinterpret_cast<uint32_t*>(
      s_.arena_.allocate(sizeof(uint32_t) * all, cmd->seq));
  if (positions == nullptr) return false;
  const uint32_t missed = s_.handoverMisses(*cmd, positions, all);
  // Those with a host to read from, in order; their owner is the table's, where a copy
  // belongs.
  const ClusterSnapshot& c = *s_.cluster_;
  uint32_t count = 0;
  for (uint32_t i = 0; i < missed; ++i) {
    if (positions[i] >= all) continue;
    HandoverKeyRead k = keys[positions[i]];
    const uint64_t hash = s_.routeHash({k.key, k.key_len});
    if (cmd->handover_copy) {
      // The copy it was read at, as the pick chose it, and the next one; a hit there is
      // copied back to the first.
      k.owner = c.readCopyOf(hash);
      k.from = c.nextCopyOf(hash, k.owner);
    } else {
      k.owner = c.hostAt(hash, 0);
      k.from = c.handoverFrom(hash, k.owner);
    }
    if (k.from != Pick::kNoHost) keys[count++] = k;
  }
  if (count == 0) return false;
  // Room for every read's replies after the owners' parts, and for each key's owner asked
  // again.
  const CacheWire& wire = s_.wire_;
  const uint32_t per_key = wire.handoverReadReplies() + (cmd->handover_reask != nullptr ? 1 : 0);
  const uint32_t total = cmd->fragment_count + count * per_key;
  if (total > UINT16_MAX) return false;
  auto* parts = reinterpret_cast<FragmentReply*>(
      s_.arena_.allocate(sizeof(FragmentReply) * total, cmd->seq));
  if (parts == nullptr) return false;
  for (uint32_t i = 0; i < total; ++i)
    parts[i] = i < cmd->fragment_count ? cmd->parts[i] : FragmentReply{nullptr, 0};
  cmd->parts = parts;
  cmd->handover_key_count = count;
  cmd->handover_stage = kMergeReads;
  for (uint32_t i = 0; i < count; ++i) {
    keys[i].first_fragment = cmd->fragment_count;
    ByteChain& out = s_.openFragment(keys[i].from);
    const uint32_t replies = wire.appendHandoverRead(out, {keys[i].key, keys[i].key_len});
    for (uint32_t r = 0; r < replies; ++r)
      s_.queueFragment(cmd, keys[i].from, wire.handoverKind(HandoverOp::kRead), false);
  }
  return true;
}

void HandoverReads::mergeReadsDone(CacheCommand* cmd) noexcept {
  const CacheWire& wire = s_.wire_;
  const uint32_t per_key = wire.handoverReadReplies();
  const bool moved_on = movedOn(cmd);
  bool asked = false;
  for (uint32_t i = 0; i < cmd->handover_key_count; ++i) {
    HandoverKeyRead& k = cmd->handover_keys[i];
    const std::string_view key{k.key, k.key_len};
    HandoverFound found;
    bool complete = true;
    for (uint32_t r = 0; r < per_key; ++r)
      complete = complete && cmd->parts[k.first_fragment + r].bytes != nullptr;
    if (complete) found = wire.handoverFound(cmd->parts + k.first_fragment, per_key);
    else found.result = HandoverRead::kError;
    if (cmd->handover_copy)
      countReplica(found.result == HandoverRead::kHit    ? ReplicaReadResult::kReplica
                   : found.result == HandoverRead::kMiss ? ReplicaReadResult::kMiss
                                                         : ReplicaReadResult::kError);
    else if (sink_ != nullptr)
      sink_->stats().reads[static_cast<int>(found.result)].add();
    if (found.result != HandoverRead::kHit) continue;
    const bool copied = !moved_on && copyTo(k.owner, key, found, cmd->handover_copy);
    if (cmd->handover_reask != nullptr) {
      // Its owner answers it, asked again behind the copy on the same connection; without a
      // copy it would only miss again.
      if (!copied) continue;
      ByteChain& out = s_.openFragment(k.owner);
      out.append({cmd->handover_reask, cmd->handover_reask_len});
      out.append(key);
      out.append("\r\n");
      k.asked_fragment = cmd->fragment_count;
      s_.queueFragment(cmd, k.owner, cmd->handover_reask_kind, false);
      asked = true;
      continue;
    }
    const std::string_view reply = s_.handoverReply(cmd, found, key);
    k.reply = reply.empty() ? nullptr : reply.data();   // no room: that key's miss
    k.reply_len = static_cast<uint32_t>(reply.size());
  }
  if (asked) {
    cmd->handover_stage = kMergeAskedAgain;
    return;
  }
  mergeComplete(cmd);
}

void HandoverReads::mergeAskedDone(CacheCommand* cmd) noexcept {
  for (uint32_t i = 0; i < cmd->handover_key_count; ++i) {
    HandoverKeyRead& k = cmd->handover_keys[i];
    if (k.asked_fragment == 0) continue;
    // The owner's reply, whatever it is (a hit, or a miss if the key went meanwhile); a
    // failure is the key's miss, as its owner first said.
    const FragmentReply& r = cmd->parts[k.asked_fragment];
    if (r.bytes != nullptr && !s_.wire_.isMiss(r.bytes, r.len) && !s_.wire_.isError(r.bytes, r.len)) {
      k.reply = r.bytes;
      k.reply_len = r.len;
    }
  }
  mergeComplete(cmd);
}

void HandoverReads::mergeComplete(CacheCommand* cmd) noexcept {
  // The merge sees the owners' parts, and the answers in cmd->handover_keys.
  if (cmd->handover_key_count > 0) cmd->fragment_count = cmd->handover_keys[0].first_fragment;
  cmd->handover_stage = kNone;
  s_.complete(cmd);
}

std::string_view CacheSession::handoverReply(CacheCommand*, const HandoverFound& found,
                                            std::string_view) noexcept {
  return found.reply;
}

std::string_view CacheSession::mergedMissReply(CacheCommand*, uint16_t) noexcept { return {}; }

uint32_t CacheSession::handoverMisses(const CacheCommand&, uint32_t*, uint32_t) noexcept {
  return 0;
}

}  // namespace lb
