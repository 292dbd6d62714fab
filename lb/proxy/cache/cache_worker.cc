#include "lb/proxy/cache/cache_worker.h"

#include <cstring>
#include <exception>
#include <new>

#include "lb/proxy/cache/near_tracker.h"
#include "lb/proxy/cache/server_connection.h"
#include "lb/runtime/worker_env.h"

namespace lb {

namespace {
// Objects kept for reuse; beyond, a returned one is freed (a burst does not pin its peak).
constexpr size_t kMaxFree = 1 << 16;
}  // namespace

CacheWorker& CacheWorker::of(WorkerEnv& env) noexcept {
  CacheWorker* w = env.service<CacheWorker>();
  // Out of memory before the worker's first cache client could be served: nothing to fall
  // back to (the session that asks is being constructed).
  if (w == nullptr) std::terminate();
  return *w;
}

CacheWorker::CacheWorker(WorkerEnv& env) : env_(env), flushes_(env.loop()) {
  free_commands_.reserve(1024);
  free_fragments_.reserve(1024);
}

CacheWorker::~CacheWorker() {
  for (CacheCommand* c : free_commands_) delete c;
  for (CacheFragment* f : free_fragments_) delete f;
  for (ServerTable* t : tables_) delete t;
  // Groups whose servers are all gone; any other would be a server still open, which
  // close() and the loop's last turn rule out.
  for (ServerGroup* g : groups_) delete g;
}

CacheCommand* CacheWorker::newCommand() noexcept {
  CacheCommand* c;
  if (!free_commands_.empty()) {
    c = free_commands_.back();
    free_commands_.pop_back();
    *c = CacheCommand{};
  } else {
    c = new (std::nothrow) CacheCommand();
    if (c == nullptr) return nullptr;
  }
  ++commands_out_;
  return c;
}

void CacheWorker::freeCommand(CacheCommand* c) noexcept {
  --commands_out_;
  if (free_commands_.size() < kMaxFree) {
    try {
      free_commands_.push_back(c);
      return;
    } catch (...) {
    }
  }
  delete c;
}

CacheFragment* CacheWorker::newFragment() noexcept {
  CacheFragment* f;
  if (!free_fragments_.empty()) {
    f = free_fragments_.back();
    free_fragments_.pop_back();
    *f = CacheFragment{};
  } else {
    f = new (std::nothrow) CacheFragment();
    if (f == nullptr) return nullptr;
  }
  ++fragments_out_;
  return f;
}

void CacheWorker::freeFragment(CacheFragment* f) noexcept {
  --fragments_out_;
  if (free_fragments_.size() < kMaxFree) {
    try {
      free_fragments_.push_back(f);
      return;
    } catch (...) {
    }
  }
  delete f;
}

ServerGroup* CacheWorker::group(const BackendSnapshot& backend, const CacheWire& wire,
                                     const ClusterConfig& cluster) {
  for (ServerGroup* g : groups_) {
    if (g->state != backend.state || g->wire != &wire || g->password != cluster.password ||
        g->servers.size() != cluster.server_connections ||
        g->target.tls != backend.tls || g->target.address_len != backend.address_len ||
        memcmp(&g->target.address, &backend.address, backend.address_len) != 0)
      continue;
    // A retired group whose servers are still finishing is not reused: it is on its way out.
    if (g->tables == 0) continue;
    return g;
  }
  auto* g = new ServerGroup();
  g->state = backend.state;
  g->target.state = backend.state;
  g->target.address = backend.address;
  g->target.address_len = backend.address_len;
  // A reload builds a new TLS context (new trust, new client certificate): a new group, so
  // the servers reconnect with it while the old group's finish what they hold.
  g->target.tls = backend.tls;
  g->wire = &wire;
  g->id = next_group_id_++;
  g->password = cluster.password;
  g->handshake = wire.handshake(cluster.password);
  g->servers.resize(cluster.server_connections, nullptr);
  for (auto& s : g->servers) {
    s = new ServerConnection(*this, *g);
    ++g->open;
  }
  groups_.push_back(g);
  return g;
}

ServerTable* CacheWorker::holdTable(const Snapshot& snapshot, uint32_t cluster,
                                         const CacheWire& wire) noexcept {
  if (snapshot.generation > generation_) generation_ = snapshot.generation;
  for (ServerTable* t : tables_) {
    if (t->generation == snapshot.generation && t->cluster == cluster && t->wire == &wire) {
      ++t->sessions;
      return t;
    }
  }
  try {
    const ClusterSnapshot& c = snapshot.clusters[cluster];
    auto table = std::make_unique<ServerTable>();
    table->generation = snapshot.generation;
    table->cluster = cluster;
    table->wire = &wire;
    table->hosts.reserve(c.backends.size());
    for (const BackendSnapshot& b : c.backends) {
      ServerGroup* g = group(b, wire, *c.config);
      ++g->tables;
      table->hosts.push_back(g);
    }
    if (scratch_.fragment_of_host.size() < c.backends.size())
      scratch_.fragment_of_host.resize(c.backends.size(), -1);
    picks_.reserveHosts(c.backends.size());
    table->near = nearCacheOf(c);
    if (table->near)
      for (ServerGroup* g : table->hosts) {
        if (g->tracker == nullptr) g->tracker = wire.newTracker(env_, *g);
        if (g->tracker != nullptr) g->tracker->attach(table->near);
      }
    table->handover = handoverSinkOf(c, wire);
    table->sessions = 1;
    tables_.push_back(table.get());
    return table.release();
  } catch (...) {
    return nullptr;
  }
}

HandoverSink* CacheWorker::handoverSinkOf(const ClusterSnapshot& c, const CacheWire& wire) {
  // Replicas read through the same way: a miss or a failure at one copy is read at the next.
  const bool hands_over = c.config->handover && c.handover_window_ms > 0;
  if ((!hands_over && c.replicas < 2) || !c.state || !wire.handsOver()) return nullptr;
  for (const auto& s : sinks_)
    if (s->state() == c.state.get() && &s->wire() == &wire) return s.get();
  sinks_.push_back(std::make_unique<HandoverSink>(c.state, wire, env_.index()));
  return sinks_.back().get();
}

// One cache per cluster state and bounds on this worker, whichever snapshot's table asks: a
// reload that keeps hot_keys.near_cache as it was keeps the cached items; one that changes
// the bounds starts a new, empty cache (the old one goes with the last table holding it).
std::shared_ptr<NearCache> CacheWorker::nearCacheOf(const ClusterSnapshot& c) {
  const auto& cfg = c.config->hot_keys.near_cache;
  if (!cfg || !c.state) return nullptr;
  NearCacheLimits limits;
  limits.items = cfg->items;
  limits.bytes = cfg->bytes;
  limits.ttl_ms = static_cast<uint64_t>(cfg->ttl.count());
  for (size_t i = near_.size(); i-- > 0;) {
    std::shared_ptr<NearCache> live = near_[i].cache.lock();
    if (!live) {
      near_.erase(near_.begin() + static_cast<ptrdiff_t>(i));
      continue;
    }
    if (near_[i].state == c.state.get() && near_[i].limits.items == limits.items &&
        near_[i].limits.bytes == limits.bytes && near_[i].limits.ttl_ms == limits.ttl_ms)
      return live;
  }
  auto cache = std::make_shared<NearCache>(c.state->near_cache, env_.index(), limits, c.state);
  near_.push_back({c.state.get(), limits, cache});
  return cache;
}

void CacheWorker::releaseTable(ServerTable* table) noexcept {
  if (table == nullptr || --table->sessions > 0) return;
  if (table->generation == generation_ && !closed_) return;   // kept for the next client
  for (size_t i = 0; i < tables_.size(); ++i)
    if (tables_[i] == table) {
      dropTable(i);
      return;
    }
}

void CacheWorker::snapshotChanged(uint64_t generation) noexcept {
  if (generation > generation_) generation_ = generation;
  for (size_t i = tables_.size(); i-- > 0;)
    if (tables_[i]->sessions == 0 && tables_[i]->generation != generation_) dropTable(i);
}

void CacheWorker::dropTable(size_t index) noexcept {
  ServerTable* t = tables_[index];
  tables_.erase(tables_.begin() + static_cast<ptrdiff_t>(index));
  for (ServerGroup* g : t->hosts)
    if (--g->tables == 0) retireGroup(g);
  delete t;
}

void CacheWorker::retireGroup(ServerGroup* g) noexcept {
  if (g->tracker != nullptr) {
    g->tracker->close();
    g->tracker = nullptr;
  }
  for (ServerConnection* s : g->servers)
    if (s != nullptr) s->retire();
}

void CacheWorker::serverGone(ServerGroup* g, ServerConnection* s) noexcept {
  for (auto& slot : g->servers)
    if (slot == s) slot = nullptr;
  if (--g->open > 0) return;
  for (size_t i = 0; i < groups_.size(); ++i)
    if (groups_[i] == g) {
      groups_.erase(groups_.begin() + static_cast<ptrdiff_t>(i));
      break;
    }
  delete g;
}

void CacheWorker::close() noexcept {
  if (closed_) return;
  closed_ = true;
  for (size_t i = tables_.size(); i-- > 0;) {
    tables_[i]->sessions = 0;
    dropTable(i);
  }
  // Copies: a server's close may free its group (serverGone) once its handles are closed,
  // which is later, in the loop's closing phase; the list itself does not change here.
  std::vector<ServerGroup*> groups = groups_;
  for (ServerGroup* g : groups)
    if (g->tracker != nullptr) {
      g->tracker->close();
      g->tracker = nullptr;
    }
  for (ServerGroup* g : groups)
    for (ServerConnection* s : g->servers)
      if (s != nullptr) s->close();
  flushes_.close();
}

size_t CacheWorker::serverCount() const noexcept {
  size_t n = 0;
  for (const ServerGroup* g : groups_)
    for (const ServerConnection* s : g->servers)
      if (s != nullptr && s->connected()) ++n;
  return n;
}

}  // namespace lb
