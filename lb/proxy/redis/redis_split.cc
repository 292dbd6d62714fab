// RedisSession's commands of several keys that a cluster splits by owner (MGET, DEL, UNLINK,
// EXISTS, TOUCH, MSET): one fragment per owner, merged back in the client's key order, and,
// for the ones that write, what a handover and replicas add after them (a delete where each
// key was served before; the same command to each key's other copies).
#include <algorithm>
#include <cstring>

#include "lb/proxy/redis/redis_replies.h"
#include "lb/proxy/redis/redis_session.h"
#include "lb/proxy/redis/resp.h"

namespace lb {

using redis::CommandSpec;
using redis::kAllOk;
using redis::kMget;
using redis::kSum;
using redis::Route;

// MGET, DEL, UNLINK, EXISTS, TOUCH, MSET: one fragment per owner, each a command of the
// same name over that owner's keys (in their order), merged when every fragment is back.
void RedisSession::splitByOwner(CacheCommand* cmd, const CommandSpec& spec,
                                std::string_view raw) noexcept {
  CacheScratch& sc = cache().scratch();
  const std::vector<std::string_view>& args = sc.args;
  const bool pairs = spec.route == Route::kMset;
  const size_t per_key = pairs ? 2 : 1;
  if (args.size() < 2 || (args.size() - 1) % per_key != 0) {
    wrongArity(cmd);
    return;
  }
  const size_t keys = (args.size() - 1) / per_key;
  if (spec.route == Route::kMget && near().enabled()) {
    nearMget(cmd, raw, keys);
    return;
  }
  const uint8_t reply_kind = spec.route == Route::kMget   ? redis::kArrayReply
                             : spec.route == Route::kMset ? redis::kOkReply
                                                          : redis::kIntegerReply;
  const Owners owners = pickOwners(cmd, 1, per_key, keys, "no backend is available for these keys",
                                   spec.route == Route::kMget);
  if (owners == Owners::kAnswered) return;
  // An MGET inside a handover window reads the keys its owners miss through
  // (handover_reads.h), which the merge does: it is merged even with one owner.
  const bool reads_through = spec.route == Route::kMget && mergedReadsThrough();
  if (owners == Owners::kOne && !reads_through) {
    sendRaw(cmd, sc.hosts[0], raw, reply_kind);
    handoverWrote(spec, per_key, keys);
    replicateSplit(spec, per_key, keys, reply_kind);
    return;
  }
  const uint8_t kind = spec.route == Route::kMget   ? kMget
                       : spec.route == Route::kMset ? kAllOk
                                                    : kSum;
  // Every kind keeps the plan, each key's fragment: the merge checks each fragment's reply
  // against its key count.
  if (!beginSplit(cmd, kind, keys, keys * sizeof(uint16_t))) return;
  memcpy(cmd->plan, sc.key_fragments.data(), keys * sizeof(uint16_t));
  if (reads_through) {
    try {
      sc.keys.assign(args.begin() + 1, args.end());
      handover().readMerged(cmd, sc.keys);
    } catch (...) {   // out of memory: merged as outside a window
    }
  }
  sendSplit(cmd, reply_kind, [&](ByteChain& out, const uint32_t* key, uint32_t count) {
    resp::appendArrayHeader(out, 1 + count * per_key);
    resp::appendBulk(out, args[0]);
    for (uint32_t i = 0; i < count; ++i) {
      resp::appendBulk(out, args[1 + key[i] * per_key]);
      if (pairs) resp::appendBulk(out, args[2 + key[i] * per_key]);
    }
  });
  handoverWrote(spec, per_key, keys);
  replicateSplit(spec, per_key, keys, reply_kind);
}

// A split command that writes (MSET, DEL, UNLINK, TOUCH) in a cluster with replicas has gone
// to its keys' first hosts (scratch().hosts), whose replies are the client's: the same
// command, over the keys each other copy holds, goes to each of those copies with nobody
// waiting for it (a copy's error or failure is counted at its backend).
void RedisSession::replicateSplit(const CommandSpec& spec, size_t per_key, size_t keys,
                                  uint8_t reply_kind) noexcept {
  if (spec.read_only || replicas() < 2 || !handover().enabled()) return;
  CacheScratch& sc = cache().scratch();
  const std::vector<std::string_view>& args = sc.args;
  std::vector<uint64_t>& copies = sc.copies;
  try {
    copies.clear();
    Pick picks[kMaxCopies];
    for (size_t k = 0; k < keys; ++k) {
      const uint64_t hash = routeHash(args[1 + k * per_key]);
      const uint32_t n = cluster().pickReplicas(hash, replicas(), picks);
      for (uint32_t i = 0; i < n; ++i)
        if (picks[i].host != sc.hosts[k]) copies.push_back(uint64_t{picks[i].host} << 32 | k);
    }
  } catch (...) {   // out of memory: the first hosts have the keys, the copies not
    return;
  }
  std::sort(copies.begin(), copies.end());
  for (size_t at = 0; at < copies.size();) {
    const auto host = static_cast<uint32_t>(copies[at] >> 32);
    size_t end = at;
    while (end < copies.size() && copies[end] >> 32 == host) ++end;
    if (ByteChain* out = handover().openCopy(host)) {
      resp::appendArrayHeader(*out, 1 + (end - at) * per_key);
      resp::appendBulk(*out, args[0]);
      for (size_t i = at; i < end; ++i) {
        const size_t k = static_cast<uint32_t>(copies[i]);
        resp::appendBulk(*out, args[1 + k * per_key]);
        if (per_key == 2) resp::appendBulk(*out, args[2 + k * per_key]);
      }
      handover().copyWritten(host, reply_kind);
    }
    at = end;
  }
}

// A split command that writes (DEL, UNLINK, MSET) has gone to its keys' owners
// (scratch().hosts): each key is deleted where it was served before, if anywhere.
void RedisSession::handoverWrote(const CommandSpec& spec, size_t per_key, size_t keys) noexcept {
  if (spec.read_only || !handover().enabled()) return;
  const CacheScratch& sc = cache().scratch();
  for (size_t k = 0; k < keys; ++k) handover().wrote(sc.args[1 + k * per_key], sc.hosts[k]);
}

}  // namespace lb
