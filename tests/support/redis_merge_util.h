// What redis::mergeReplies (lb/proxy/redis/redis_replies.h) makes of a split command's
// stored replies, as one string, for the tests of merging.
#pragma once

#include <uv.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lb/proxy/cache/byte_chain.h"
#include "lb/proxy/cache/cache_worker.h"
#include "lb/proxy/redis/redis_replies.h"
#include "lb/net/buffer_pool.h"

namespace lb {

// replies[f] is fragment f's reply; plan[k] the fragment of key k; `overrides` the keys
// read through (handover), in order.
inline std::string mergeRedis(uint8_t kind, const std::vector<std::string>& replies,
                              const std::vector<uint16_t>& plan,
                              const std::vector<HandoverKeyRead>& overrides = {}) {
  std::vector<FragmentReply> parts;
  for (const auto& r : replies) parts.push_back({r.data(), static_cast<uint32_t>(r.size())});
  redis::MergeInput in;
  in.kind = kind;
  in.parts = parts.data();
  in.fragment_count = static_cast<uint16_t>(parts.size());
  in.plan = plan.data();
  in.keys = static_cast<uint32_t>(plan.size());
  in.overrides = overrides.data();
  in.override_count = static_cast<uint32_t>(overrides.size());
  CacheScratch scratch;
  BufferPool pool;
  ByteChain out(pool);
  redis::mergeReplies(in, scratch, out);
  uv_buf_t bufs[16];
  const int n = out.buffers(bufs, 16);
  std::string s;
  for (int i = 0; i < n; ++i) s.append(bufs[i].base, bufs[i].len);
  return s;
}

// The places of the MGET keys redis::missedKeys finds nil.
inline std::vector<uint32_t> missedRedis(const std::vector<std::string>& replies,
                                         const std::vector<uint16_t>& plan) {
  std::vector<FragmentReply> parts;
  for (const auto& r : replies) parts.push_back({r.data(), static_cast<uint32_t>(r.size())});
  redis::MergeInput in;
  in.kind = redis::kMget;
  in.parts = parts.data();
  in.fragment_count = static_cast<uint16_t>(parts.size());
  in.plan = plan.data();
  in.keys = static_cast<uint32_t>(plan.size());
  CacheScratch scratch;
  std::vector<uint32_t> positions(plan.size());
  positions.resize(redis::missedKeys(in, scratch, positions.data(),
                                     static_cast<uint32_t>(positions.size())));
  return positions;
}

}  // namespace lb
