// NearReads (near_reads.h), the session's handle on its near cache: beside the session, whose
// state it reads, and apart from the header the session includes.
#include "lb/proxy/cache/near_reads.h"

#include <cstring>

#include "lb/proxy/cache/cache_session.h"
#include "lb/proxy/cache/cache_worker.h"
#include "lb/proxy/cache/near_cache.h"
#include "lb/proxy/cache/near_tracker.h"
#include "lb/proxy/cache/server_connection.h"
#include "lb/runtime/worker_env.h"

namespace lb {

// Only keys in the cluster's hot set use the near cache (docs/config.md "near_cache"): a cold key's
// reads go to its backend, and a cache of a few items stays with the keys that load one
// server. The hot set is the one this worker adopted last (HotKeyState::isHot: a pointer
// load and a probe), by the hash that routes the key.
bool NearReads::hot(uint64_t route_hash) const noexcept {
  return near_ != nullptr && s_.cluster_->state != nullptr &&
         s_.cluster_->state->hot_keys.isHot(s_.env_.index(), route_hash);
}

// `look` is what nearAnswerNow found for this read just before (nothing ran in between that
// could change the hot set or the cache: both change only between reads of the loop).
bool NearReads::read(CacheCommand* cmd, std::string_view key, uint64_t route_hash,
                            NearLook look) noexcept {
  using State = NearLook::State;
  if (look.state == State::kCold) return false;
  if (look.state == State::kUnknown && !hot(route_hash)) return false;
  NearCacheWorkerStats& st = near_->stats();
  const uint64_t h = look.state == State::kMissed ? look.hash : NearCache::hashOf(key);
  if (look.state != State::kMissed) {
    const std::string_view hit = near_->find(h, key, uv_now(s_.env_.loop()));
    if (!hit.empty()) {
      st.paths[static_cast<int>(NearPath::kHit)].add();
      s_.answer(cmd, hit);   // a copy: the entry may go before the reply is written
      return true;
    }
  }
  st.paths[static_cast<int>(NearPath::kMiss)].add();
  // The ticket before the read is sent: a write bumped after this drops the fill.
  const NearTicket t = near_->ticket(h);
  const char* copy = s_.arena_.copy(key.data(), key.size(), cmd->seq);
  if (copy == nullptr) return false;   // no fill this time; the read goes on as ever
  cmd->near_fill = true;
  cmd->near_key = copy;
  cmd->near_key_len = static_cast<uint32_t>(key.size());
  cmd->near_hash = h;
  cmd->near_stripe = t.stripe;
  cmd->near_flushes = t.flushes;
  return false;
}

// With a command queued, a hit must wait for the replies ahead of it (in the arena, as any
// early reply): only an empty queue lets it go to the output at once, behind what is there
// already, which is every earlier reply. A miss, a cold key or a queue goes the way of
// nearRead, told through *look what was found here so that it does not look again.
bool NearReads::answerNow(std::string_view key, uint64_t route_hash,
                                 NearLook* look) noexcept {
  if (s_.head_ != nullptr) return false;
  if (!hot(route_hash)) {
    look->state = NearLook::State::kCold;
    return false;
  }
  const uint64_t h = NearCache::hashOf(key);
  const std::string_view hit = near_->find(h, key, uv_now(s_.env_.loop()));
  if (hit.empty()) {
    *look = NearLook{NearLook::State::kMissed, h};
    return false;
  }
  s_.cluster_->countKey(s_.env_.index(), route_hash, key);
  near_->stats().paths[static_cast<int>(NearPath::kHit)].add();
  s_.out_.append(hit.data(), hit.size());
  ++s_.commands_;
  s_.dirty();
  return true;
}

// Before the read's bytes go to `host`: where its fill comes from, and, for a protocol with
// a tracker, whether it may fill at all. With the tracker down nothing fills (a write that
// bypasses lb would go unseen); a server connection not yet enabled in the tracker's epoch
// sends the enable command first, in the same pipeline, so the server tracks this read.
void NearReads::sent(CacheCommand* cmd, uint32_t host) noexcept {
  if (!cmd->near_fill) return;
  if (!fillSent(host, &cmd->near_source)) cmd->near_fill = false;
}

bool NearReads::fillSent(uint32_t host, uint32_t* source) noexcept {
  ServerGroup* g = s_.table_->hosts[host];
  *source = g->id;
  NearTracker* t = g->tracker;
  if (t == nullptr) return true;   // memcached: the ttl is the bound
  if (!t->up()) return false;
  ServerConnection* s = g->servers[s_.slot_ % g->servers.size()];
  if (s->trackingEpoch() == t->epoch()) return true;
  CacheFragment* f = s_.cache_.newFragment();
  if (f == nullptr) return false;
  const auto connect_ms = static_cast<uint64_t>(s_.listener_->config->timeouts.connect.count());
  ByteChain& out = s->open(connect_ms);
  out.append(t->enableCommand().data(), t->enableCommand().size());
  f->command = nullptr;   // lb's own: its reply is dropped
  f->reply_kind = t->enableReplyKind();
  f->timeout_ms = static_cast<uint32_t>(s_.listener_->config->timeouts.response.count());
  f->sent_ns = uv_hrtime();
  g->state->addLive();    // every queued fragment holds a unit; its reply gives it back
  s->push(f);
  s->setTrackingEpoch(t->epoch());
  return true;
}

// One key of a multi-key read: its stored reply, the hit or the miss counted. The bytes are
// valid until the cache changes (the next find may drop an expired entry): copy them first.
std::string_view NearReads::find(std::string_view key, uint64_t* hash) noexcept {
  NearCacheWorkerStats& st = near_->stats();
  *hash = NearCache::hashOf(key);
  const std::string_view hit = near_->find(*hash, key, uv_now(s_.env_.loop()));
  st.paths[static_cast<int>(hit.empty() ? NearPath::kMiss : NearPath::kHit)].add();
  return hit;
}

bool NearReads::ticket(CacheCommand* cmd, std::string_view key, uint64_t hash,
                              NearFill* fill) noexcept {
  const NearTicket t = near_->ticket(hash);   // before the read is sent
  const char* copy = s_.arena_.copy(key.data(), key.size(), cmd->seq);
  if (copy == nullptr) return false;
  *fill = NearFill{copy, hash, static_cast<uint32_t>(key.size()), t.stripe, t.flushes, 0, 0, 0,
                   true};
  return true;
}

void NearReads::store(const CacheCommand* cmd, const NearFill& fill,
                             std::string_view reply) noexcept {
  NearCache* near = s_.nearOf(cmd);
  if (near == nullptr || !fill.live) return;
  near->fill(fill.hash, {fill.key, fill.key_len}, reply, NearTicket{fill.stripe, fill.flushes},
              uv_now(s_.env_.loop()), fill.source);
}

void NearReads::flush() noexcept {
  if (near_ != nullptr) near_->flushAll();
}

void NearReads::bypass(uint64_t route_hash) noexcept {
  if (hot(route_hash)) near_->stats().paths[static_cast<int>(NearPath::kBypass)].add();
}

void NearReads::writeBegin(CacheCommand* cmd, size_t keys) noexcept {
  if (near_ == nullptr || keys == 0) return;
  cmd->near_write_hashes = s_.arena_.allocate(keys * sizeof(uint64_t), cmd->seq);
  cmd->near_writes = 0;
}

// Before the write goes out: every worker's entry of the key is stale from now (the shared
// stripe), and this worker's goes now. The hash is kept so the stripe moves again when the
// backend answers (nearReplied).
void NearReads::write(CacheCommand* cmd, std::string_view key) noexcept {
  if (near_ == nullptr) return;
  const uint64_t h = NearCache::hashOf(key);
  near_->invalidateWrite(h, key);
  if (cmd->near_write_hashes == nullptr) return;
  memcpy(cmd->near_write_hashes + sizeof(uint64_t) * cmd->near_writes, &h, sizeof h);
  ++cmd->near_writes;
}

// A backend answered a command of this session that uses the near cache (`p` null: it
// failed). A write's stripes move again: a read sent while the write was on its way could
// have been answered with the old value by then (another server connection, another
// worker), and its fill, ticketed after the first bump, would otherwise keep that value
// past the write's acknowledgement. A read's reply fills the cache if its ticket holds.
void NearReads::replied(CacheCommand* cmd, const char* p, size_t n) noexcept {
  NearCache* near = s_.nearOf(cmd);
  if (near == nullptr) return;
  for (uint32_t i = 0; i < cmd->near_writes; ++i) {
    uint64_t h;
    memcpy(&h, cmd->near_write_hashes + sizeof(uint64_t) * i, sizeof h);
    near->shared().bump(h);
  }
  if (!cmd->near_fill || p == nullptr) return;
  cmd->near_fill = false;
  if (!s_.nearCacheable(p, n)) return;
  near->fill(cmd->near_hash, {cmd->near_key, cmd->near_key_len}, {p, n},
              NearTicket{cmd->near_stripe, cmd->near_flushes}, uv_now(s_.env_.loop()),
              cmd->near_source);
}

}  // namespace lb
