// MGET with the near cache (docs/config.md "near_cache"): the hot keys of an MGET that the
// near cache holds are answered from it, the rest go to their owners split by owner as ever
// (key_groups.h), and the near-cache values join the merge as one more fragment, already
// answered: an array of those keys' values in their order. The merge (redis_replies.cc)
// checks it like any other, and every element is what the server's MGET would say:
//   - an entry is a GET's reply, `$N\r\nvalue\r\n` or `$-1\r\n`: a string value, or no key.
//     MGET answers a string key with the same bulk and a missing key with the same nil;
//   - a key that is not a string is WRONGTYPE to GET (never stored) and nil to MGET, so a
//     nil element of an MGET reply says nothing a GET would: it never fills. Only bulk
//     strings fill, with the GET discipline (a ticket taken before the read is sent; no fill
//     while the backend's tracker is down; tracking enabled on the server connection first).
// When every key is answered locally no backend is touched.
#include <cstdio>
#include <cstring>

#include "lb/proxy/redis/redis_replies.h"
#include "lb/proxy/redis/redis_session.h"
#include "lb/proxy/redis/resp.h"

namespace lb {

namespace {

// "*count\r\n" into `out` (room for 24 bytes); its length.
size_t writeArrayHeader(char* out, size_t count) noexcept {
  return static_cast<size_t>(snprintf(out, 24, "*%zu\r\n", count));
}

}  // namespace

void RedisSession::nearMget(CacheCommand* cmd, std::string_view raw, size_t keys) noexcept {
  CacheScratch& sc = cache().scratch();
  const std::vector<std::string_view>& args = sc.args;
  try {
    sc.hosts.resize(keys);
    sc.near_remote.resize(keys);
    sc.near_element.resize(keys);
    sc.near_hits.assign(keys, FragmentReply{nullptr, 0});
  } catch (...) {
    answerStatic(cmd, kOutOfMemory);
    return;
  }
  NearFill* fills = nullptr;
  uint32_t fill_count = 0;
  size_t remote = 0;
  size_t hits = 0;
  size_t hit_bytes = 0;
  for (size_t k = 0; k < keys; ++k) {
    const std::string_view key = args[1 + k];
    const uint64_t route_hash = countKey(key);
    if (near().hot(route_hash)) {
      uint64_t h = 0;
      const std::string_view hit = near().find(key, &h);
      if (!hit.empty()) {
        // A copy now: the next find may drop an expired entry, and the entry its bytes.
        const char* copy = arena().copy(hit.data(), hit.size(), cmd->seq);
        if (copy != nullptr) {
          sc.near_hits[k] = {copy, static_cast<uint32_t>(hit.size())};
          hit_bytes += hit.size();
          ++hits;
          continue;
        }
      } else {
        if (fills == nullptr)
          fills = reinterpret_cast<NearFill*>(arena().allocate(keys * sizeof(NearFill), cmd->seq));
        // The fill's element is its remote index until the fragments are known.
        if (fills != nullptr && near().ticket(cmd, key, h, &fills[fill_count])) {
          fills[fill_count].element = static_cast<uint32_t>(remote);
          ++fill_count;
        }
      }
    }
    if (!pickHashed(route_hash, &sc.hosts[remote])) {
      refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for these keys");
      return;
    }
    sc.near_remote[remote++] = static_cast<uint32_t>(k);
  }

  if (remote == 0) {   // every key from the near cache: the reply is whole now
    char* out = arena().allocate(24 + hit_bytes, cmd->seq);
    if (out == nullptr) {
      answerStatic(cmd, kOutOfMemory);
      return;
    }
    size_t len = writeArrayHeader(out, keys);
    for (size_t k = 0; k < keys; ++k) {
      memcpy(out + len, sc.near_hits[k].bytes, sc.near_hits[k].len);
      len += sc.near_hits[k].len;
    }
    answerStatic(cmd, {out, len});
    return;
  }

  // Before any byte of the read goes out: where each fill comes from, whether it may fill,
  // and tracking enabled on its server connection ahead of the read.
  for (uint32_t i = 0; i < fill_count; ++i)
    fills[i].live = near().fillSent(sc.hosts[fills[i].element], &fills[i].source);

  bool one = hits == 0;
  for (size_t j = 1; one && j < remote; ++j) one = sc.hosts[j] == sc.hosts[0];
  if (one) {   // nothing local, one owner: the client's command as it came
    cmd->near_fills = fills;
    cmd->near_fill_count = fill_count;   // fragment 0, element its key's place
    sendRaw(cmd, sc.hosts[0], raw, redis::kArrayReply);
    return;
  }

  const uint16_t fragments = groupKeys(sc, remote);
  const uint16_t total = static_cast<uint16_t>(fragments + (hits > 0 ? 1 : 0));
  cmd->kind = redis::kMget;
  cmd->keys = static_cast<uint32_t>(keys);
  if (fragments == 0 || fragments == kMaxFragments ||
      !merge(cmd, total, keys * sizeof(uint16_t))) {
    cmd->merged = false;
    answerStatic(cmd, kOutOfMemory);
    return;
  }
  auto* plan = static_cast<uint16_t*>(cmd->plan);
  for (size_t k = 0; k < keys; ++k) plan[k] = fragments;   // the local fragment, unless sent
  uint32_t begin = 0;
  for (uint16_t f = 0; f < fragments; ++f) {
    for (uint32_t at = begin; at < sc.cursor[f]; ++at) {
      const uint32_t j = sc.order[at];
      plan[sc.near_remote[j]] = f;
      sc.near_element[j] = at - begin;
    }
    begin = sc.cursor[f];
  }
  for (uint32_t i = 0; i < fill_count; ++i) {
    const uint32_t j = fills[i].element;
    fills[i].fragment = sc.key_fragments[j];
    fills[i].element = sc.near_element[j];
  }
  if (hits > 0) {
    char* local = arena().allocate(24 + hit_bytes, cmd->seq);
    if (local == nullptr) {
      cmd->merged = false;
      answerStatic(cmd, kOutOfMemory);
      return;
    }
    size_t len = writeArrayHeader(local, hits);
    for (size_t k = 0; k < keys; ++k) {
      if (sc.near_hits[k].bytes == nullptr) continue;
      memcpy(local + len, sc.near_hits[k].bytes, sc.near_hits[k].len);
      len += sc.near_hits[k].len;
    }
    cmd->parts[fragments] = {local, static_cast<uint32_t>(len)};
  }
  cmd->near_fills = fills;
  cmd->near_fill_count = fill_count;
  sendSplit(cmd, redis::kArrayReply, [&](ByteChain& out, const uint32_t* key, uint32_t count) {
    resp::appendArrayHeader(out, 1 + count);
    resp::appendBulk(out, args[0]);
    for (uint32_t i = 0; i < count; ++i) resp::appendBulk(out, args[1 + sc.near_remote[key[i]]]);
  });
  // The local fragment is answered already: counted in the merge, never pending.
  cmd->fragment_count = total;
}

// A fragment of a near-cached MGET answered: its fills, in key order and so in element order
// within the fragment, each from its element when that is a bulk string (never a nil: see
// above; never anything from an error reply or one that is not an array).
void RedisSession::nearFillsReplied(CacheCommand* cmd, uint16_t fragment, const char* p,
                                    size_t n) noexcept {
  redis::ArrayCursor elements;
  if (!elements.open(p, n)) return;
  for (uint32_t i = 0; i < cmd->near_fill_count; ++i) {
    const NearFill& fill = cmd->near_fills[i];
    if (fill.fragment != fragment) continue;
    std::string_view element;
    if (!elements.seek(fill.element, &element)) return;
    if (redis::mgetElementFills(element)) near().store(cmd, fill, element);
  }
}

}  // namespace lb
