// Grouping a multi-key command's keys by the server that owns each (twemproxy's fragments,
// src/nc_request.c): redis MGET, DEL, EXISTS, MSET ... and memcached `get k1 k2 ...` become
// one fragment per owner, each over that owner's keys in the client's order, and the merge
// puts the replies back in the client's order by the fragment of each key.
//
// A counting sort, linear in the keys whatever the number of owners: fragments are numbered
// in the order their hosts first appear (a per-host slot, -1 when unused, says which
// fragment a host already has), counted, and the keys laid out fragment by fragment. Walking
// every key once per fragment instead would be O(keys x fragments): a 10,000-key MGET over
// 100 servers, a million steps.
//
// Pure: spans the caller sized, no allocation (groupKeys(CacheScratch&) sizes the worker's
// scratch, which grows to the largest command seen and then stays). Loop thread only for
// the CacheScratch form; the template is any thread's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace lb {

struct CacheScratch;

// Where groupKeys writes. fragment_of_host has a slot per host of the cluster, -1 in every
// one on entry and on return; the others have room for one entry per key (fragment_host and
// fragment_end: one per fragment, at most one per key).
struct KeyGroupSpans {
  std::span<int32_t> fragment_of_host;
  std::span<uint16_t> fragment_of_key;   // out: each key's fragment
  std::span<uint32_t> order;             // out: key indices, fragment 0's, then 1's, ...
  std::span<uint32_t> fragment_host;     // out: each fragment's host
  std::span<uint32_t> fragment_end;      // out: where each fragment's run in `order` ends
};

// Groups `keys` keys whose hosts are host_of_key[0 .. keys) (anything indexable by a key
// index giving a host below fragment_of_host.size(): a span in lb, a counting view in the
// tests); returns the number of fragments. Within a fragment the keys keep their order
// (stable), so a fragment's command asks for them as the client did. Reads each key's host
// once. 0 when the keys have more than 65535 hosts: a command's fragments are counted in
// 16 bits (CacheCommand::fragment_count), so it cannot be split that far.
inline constexpr uint32_t kMaxFragments = 65535;

template <class HostOfKey>
uint16_t groupKeys(const HostOfKey& host_of_key, size_t keys, const KeyGroupSpans& out) noexcept {
  uint32_t fragments = 0;
  // Number each host's fragment on first sight, and count its keys.
  for (size_t k = 0; k < keys; ++k) {
    const uint32_t host = host_of_key[k];
    int32_t& slot = out.fragment_of_host[host];
    if (slot < 0) {
      if (fragments == kMaxFragments) {
        for (uint32_t f = 0; f < fragments; ++f) out.fragment_of_host[out.fragment_host[f]] = -1;
        return 0;
      }
      slot = static_cast<int32_t>(fragments);
      out.fragment_host[fragments] = host;
      out.fragment_end[fragments] = 0;
      ++fragments;
    }
    out.fragment_of_key[k] = static_cast<uint16_t>(slot);
    ++out.fragment_end[static_cast<uint32_t>(slot)];
  }
  // Counts become each run's start (exclusive prefix sums) ...
  uint32_t at = 0;
  for (uint32_t f = 0; f < fragments; ++f) {
    const uint32_t count = out.fragment_end[f];
    out.fragment_end[f] = at;
    at += count;
  }
  // ... and, as each key is placed in client order, its run's end.
  for (size_t k = 0; k < keys; ++k)
    out.order[out.fragment_end[out.fragment_of_key[k]]++] = static_cast<uint32_t>(k);
  for (uint32_t f = 0; f < fragments; ++f) out.fragment_of_host[out.fragment_host[f]] = -1;
  return static_cast<uint16_t>(fragments);
}

// The same over the worker's scratch: the hosts of the first `keys` keys in sc.hosts; the
// results in sc.key_fragments, sc.order, sc.fragment_hosts and sc.cursor (the run ends),
// the last two sized to the fragments. 0 when the scratch could not grow (out of memory).
uint16_t groupKeys(CacheScratch& sc, size_t keys) noexcept;

}  // namespace lb
