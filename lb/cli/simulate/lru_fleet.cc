#include "lb/cli/simulate/lru_fleet.h"

namespace lb {

namespace {

// SplitMix64's finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a cheap, well-mixed hash of the (server, key) pair.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

LruFleet::LruFleet(const std::vector<uint32_t>& capacities) {
  uint64_t total = 0;
  servers_.resize(capacities.size());
  for (size_t s = 0; s < capacities.size(); ++s) {
    servers_[s].capacity = capacities[s];
    total += capacities[s];
  }
  nodes_.resize(total);
  free_.reserve(total);
  for (uint64_t i = total; i > 0; --i) free_.push_back(static_cast<uint32_t>(i - 1));
  // Load factor at most one half keeps linear probes short.
  uint64_t slots = 16;
  while (slots < 2 * total) slots <<= 1;
  index_.assign(slots, kNone);
  mask_ = slots - 1;
}

uint64_t LruFleet::slotOf(uint32_t server, uint32_t key) const {
  return mix((uint64_t{server} << 32) | key) & mask_;
}

uint32_t LruFleet::find(uint32_t server, uint32_t key) const {
  for (uint64_t i = slotOf(server, key);; i = (i + 1) & mask_) {
    const uint32_t n = index_[i];
    if (n == kNone) return kNone;
    if (nodes_[n].key == key && nodes_[n].server == server) return n;
  }
}

void LruFleet::unlink(uint32_t n) {
  Node& node = nodes_[n];
  Server& s = servers_[node.server];
  if (node.prev != kNone) nodes_[node.prev].next = node.next; else s.head = node.next;
  if (node.next != kNone) nodes_[node.next].prev = node.prev; else s.tail = node.prev;
}

void LruFleet::pushFront(uint32_t n) {
  Node& node = nodes_[n];
  Server& s = servers_[node.server];
  node.prev = kNone;
  node.next = s.head;
  if (s.head != kNone) nodes_[s.head].prev = n;
  s.head = n;
  if (s.tail == kNone) s.tail = n;
}

// Backward-shift deletion (Knuth, TAOCP vol. 3, 6.4, Algorithm R): no tombstones, so probe
// lengths do not grow over a long run of evictions.
void LruFleet::unindex(uint32_t n) {
  uint64_t hole = slotOf(nodes_[n].server, nodes_[n].key);
  while (index_[hole] != n) hole = (hole + 1) & mask_;
  uint64_t i = hole;
  for (;;) {
    i = (i + 1) & mask_;
    const uint32_t m = index_[i];
    if (m == kNone) break;
    const uint64_t home = slotOf(nodes_[m].server, nodes_[m].key);
    // m may move into the hole only if its home is not cyclically within (hole, i].
    const bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (stays) continue;
    index_[hole] = m;
    hole = i;
  }
  index_[hole] = kNone;
}

void LruFleet::removeNode(uint32_t n) {
  unlink(n);
  unindex(n);
  --servers_[nodes_[n].server].count;
  --used_;
  free_.push_back(n);
}

uint32_t LruFleet::touch(uint32_t server, uint32_t key) {
  const uint32_t n = find(server, key);
  if (n == kNone) return kNone;
  if (servers_[server].head != n) {
    unlink(n);
    pushFront(n);
  }
  return nodes_[n].version;
}

void LruFleet::fill(uint32_t server, uint32_t key, uint32_t version) {
  Server& s = servers_[server];
  if (s.capacity == 0) return;
  if (const uint32_t n = find(server, key); n != kNone) {
    nodes_[n].version = version;
    unlink(n);
    pushFront(n);
    return;
  }
  if (s.count == s.capacity) removeNode(s.tail);
  const uint32_t n = free_.back();
  free_.pop_back();
  nodes_[n] = {key, server, version, kNone, kNone};
  uint64_t i = slotOf(server, key);
  while (index_[i] != kNone) i = (i + 1) & mask_;
  index_[i] = n;
  pushFront(n);
  ++s.count;
  ++used_;
}

void LruFleet::erase(uint32_t server, uint32_t key) {
  if (const uint32_t n = find(server, key); n != kNone) removeNode(n);
}

void LruFleet::clear(uint32_t server) {
  while (servers_[server].head != kNone) removeNode(servers_[server].head);
}

}  // namespace lb
