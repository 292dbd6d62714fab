#include "lb/proxy/cache/key_groups.h"

#include <algorithm>

#include "lb/proxy/cache/cache_worker.h"

namespace lb {

uint16_t groupKeys(CacheScratch& sc, size_t keys) noexcept {
  // Room for one fragment per key or per host, whichever is fewer; trimmed to the count
  // after, which never frees (the vectors keep their capacity for the next command).
  const size_t most = std::min(keys, sc.fragment_of_host.size());
  try {
    sc.key_fragments.resize(keys);
    sc.order.resize(keys);
    sc.fragment_hosts.resize(most);
    sc.cursor.resize(most);
  } catch (...) {   // the scratch could not grow
    return 0;
  }
  const uint16_t fragments =
      groupKeys(std::span<const uint32_t>(sc.hosts.data(), keys), keys,
                {sc.fragment_of_host, sc.key_fragments, sc.order, sc.fragment_hosts, sc.cursor});
  sc.fragment_hosts.resize(fragments);
  sc.cursor.resize(fragments);
  return fragments;
}

}  // namespace lb
