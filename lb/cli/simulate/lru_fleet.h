// The caches of `lb simulate` (docs/analyze.md, "lb simulate"): one LRU per server, counted in
// items, all in one node pool with one open-addressing index keyed by (server, key), so that a
// run over 1000 servers and 10^5 sampled keys allocates once and never per request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lb {

class LruFleet {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // capacities[s]: items server s may hold (0 allowed). Server ids are 0..capacities.size()-1.
  explicit LruFleet(const std::vector<uint32_t>& capacities);

  // Looks the key up on a server; on a hit moves it to the front and returns the version it
  // was filled with, else kNone.
  uint32_t touch(uint32_t server, uint32_t key);
  // Inserts (or refreshes) the key at the front, evicting the server's least recent item
  // when full.
  void fill(uint32_t server, uint32_t key, uint32_t version);
  // Deletes the key from a server, if there (a write's invalidation).
  void erase(uint32_t server, uint32_t key);
  // Empties a server (it restarted, or left the fleet).
  void clear(uint32_t server);

  uint32_t size(uint32_t server) const { return servers_[server].count; }
  uint64_t totalSize() const { return used_; }

 private:
  struct Node {
    uint32_t key, server, version, prev, next;
  };
  struct Server {
    uint32_t head = kNone, tail = kNone, count = 0, capacity = 0;
  };

  uint64_t slotOf(uint32_t server, uint32_t key) const;
  uint32_t find(uint32_t server, uint32_t key) const;   // node index or kNone
  void unlink(uint32_t node);
  void pushFront(uint32_t node);
  void removeNode(uint32_t node);                       // unlink, unindex, free
  void unindex(uint32_t node);

  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> index_;   // node index per slot, kNone when empty
  uint64_t mask_ = 0;
  std::vector<Server> servers_;
  uint64_t used_ = 0;
};

}  // namespace lb
