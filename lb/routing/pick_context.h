// The one pick: what a caller of ClusterSnapshot::pick says it needs. Every backend lb
// chooses is chosen there (HTTP requests, TCP connections, each cache command and each part
// of a split one, /ring, /hotkeys, lb analyze, lb simulate); the policies are steps applied
// in one order, written once in lb/routing/pick.cc:
//
//   order      the key's preference order: the table's distinct hosts for the key, or, for a
//              keyless round_robin request, table order from the worker's rotation
//   handover   inside a handover window, a key whose owner changed stays with its previous
//              owner until its moment in the ramp (lb/routing/handover.h), and a key whose
//              owner health brought back stays with the host that served it meanwhile
//              until its moment; first attempts. A caller that reads through (redis,
//              memcached) gets the new owner at once, and the host that served the key
//              before in Pick::from
//   spread     a hot key that may spread: the least loaded of its first `spread` usable
//              hosts (plugins/selectors/hot_spread.h), when one has room
//   replicas   a key kept on its first `replicas` hosts, read by a caller that may read a
//              copy, in a cluster with read = "local": the first of those hosts in lb's
//              own zone that is usable and has room (lb/routing/zone_order.h); first
//              attempts
//   bounded    bounded loads when the cluster has hash_balance_factor (past a host at its
//              cap), else the health-aware walk (past a down host; in panic every host is
//              usable)
//   retry      a later attempt wants an untried usable host: position >= from_attempt
//
// The pick chooses and, with Reserve::kYes under bounded loads, takes the host's unit of
// live load in the same compare-and-swap; ClusterSnapshot::admit then counts the pick and
// takes the unit when the pick did not. Those two are the whole admission, for every
// protocol.
#pragma once

#include <cstdint>

#include "plugins/selectors/bounded_load.h"

namespace lb {

// Which order a pick walks.
enum class PickOrder : uint8_t {
  kKey,     // the key's preference order (SelectorTable::pick(hash, 0), (hash, 1), ...)
  kTable,   // table order from position `hash` (keyless round_robin: the rotation's start)
};

struct PickContext {
  // Positions of the order already tried: a retry starts at the one after its last pick,
  // and is given only an untried usable host (position in [from_attempt, hosts)).
  uint32_t from_attempt = 0;
  // kYes: a request about to go (bounded loads reserve its unit under the cap); kNo: only
  // where the key would go (admin, analysis, simulation).
  Reserve reserve = Reserve::kNo;
  // >= 2: a hot key on a request that may spread (ClusterSnapshot::spreadFor), first
  // attempts only.
  uint32_t spread = 0;
  // The loads and health to weigh; null: the cluster's live ones (ClusterSnapshot::loads).
  // A cache command weighs its own units apart (lb/runtime/backend_attempt.cc), the
  // simulator its model's.
  const LoadView* loads = nullptr;
  PickOrder order = PickOrder::kKey;
  // The caller reads a miss through from the key's previous host (lb/proxy/cache/
  // handover_reads.h) instead of ramping the key over: the pick never holds a key at its
  // previous host, and names that host in Pick::from while a window is open.
  bool read_through = false;
  // The caller may be served by any copy of the key (an HTTP request; a cache protocol's
  // read, not its writes): with replicas and read = "local", the replicas step may choose
  // a copy in lb's own zone over the owner.
  bool replica_read = false;
};

}  // namespace lb
