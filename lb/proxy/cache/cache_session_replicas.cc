// Replicated writes (docs/architecture.md, "Zones and replicas"): in a cluster with
// `replicas = R`, a command that changes a key goes to each of the key's first R usable hosts,
// the same bytes to each, in parallel, as mcrouter's AllSyncRoute sends a write to every
// destination of a replicated pool. The client gets one reply: the primary's, or, when the
// primary failed (refused, reset, timed out), the first replica's that answered. A copy that
// failed while another answered is counted (lb_replica_write_failures_total) and never shown.
// When every copy failed the command fails as any command whose server failed.
//
// The copies' hosts follow the key's zone-aware preference order (lb/routing/zone_order.h), so
// a cluster that names zones keeps its copies in distinct zones, and a read that walks past
// a down host finds the next copy where the write put it.
#include "lb/proxy/cache/cache_session.h"

#include "lb/proxy/cache/cache_worker.h"
#include "lb/routing/backend_state.h"

namespace lb {

uint32_t CacheSession::beginReplicated(CacheCommand* cmd, uint64_t route_hash,
                                       uint32_t* hosts) noexcept {
  const uint32_t count = cache_.picks().pickReplicas(route_hash, cluster_->replicas, hosts);
  if (count == 0) return 0;
  if (!merge(cmd, static_cast<uint16_t>(count), count * sizeof(uint32_t))) {
    cmd->merged = false;
    cmd->parts = nullptr;
    return 0;
  }
  cmd->merged = false;   // answered with one copy's reply, not merged
  cmd->replicated = true;
  auto* plan = static_cast<uint32_t*>(cmd->plan);
  for (uint32_t i = 0; i < count; ++i) plan[i] = hosts[i];
  return count;
}

uint32_t CacheSession::copiesOf(uint64_t route_hash, uint32_t* hosts) noexcept {
  return cache_.picks().pickReplicas(route_hash, cluster_->replicas, hosts);
}

namespace {

// The reply the client gets once every copy is in: the first copy's, in the key's order, that
// answered. -1 when all failed.
int firstAnswered(const CacheCommand& cmd) noexcept {
  for (uint16_t i = 0; i < cmd.fragment_count; ++i)
    if (!cmd.parts[i].failed && cmd.parts[i].bytes != nullptr) return i;
  return -1;
}

}  // namespace

void CacheSession::replicasDone(CacheCommand* cmd, CacheErrorReason reason,
                                std::string_view text) noexcept {
  const int first = firstAnswered(*cmd);
  if (first < 0) {   // every copy failed: as any command whose server failed
    answerFailure(cmd, reason, text);
    return;
  }
  // Another copy answered: each copy that failed is counted at its backend, unless the
  // session routes by another table by now, whose host numbers name other backends.
  const bool moved_on = !held_.empty() && cmd->seq < held_.back().until_seq;
  const auto* plan = static_cast<const uint32_t*>(cmd->plan);
  for (uint16_t i = 0; i < cmd->fragment_count && !moved_on; ++i)
    if (cmd->parts[i].failed && plan[i] < cluster_->backends.size())
      cluster_->backends[plan[i]].state->per_worker[env_.index()].replica_write_failures.add();
  const FragmentReply& chosen = cmd->parts[first];
  if (useReply(*cmd, chosen.bytes, chosen.len) == ReplyUse::kDrop) {
    cmd->reply = nullptr;
    cmd->reply_len = 0;
  } else {
    cmd->reply = chosen.bytes;
    cmd->reply_len = chosen.len;
  }
  cmd->merged = false;
  complete(cmd);
}

void CacheSession::replicaReplied(CacheCommand* cmd, CacheFragment* f, const char* p,
                                  size_t n) noexcept {
  // A write's near-cache stripes move again when each copy answers (near_reads.h).
  if (cmd->near_writes > 0) near_reads_.replied(cmd, p, n);
  FragmentReply& part = cmd->parts[f->index];
  part.bytes = arena_.copy(p, n, cmd->seq);
  part.len = part.bytes != nullptr ? static_cast<uint32_t>(n) : 0;
  if (part.bytes == nullptr) part.failed = true;   // no room to keep it: as if it failed
  if (cmd->pending == 0) replicasDone(cmd, CacheErrorReason::kBackendFailed, "out of memory for the reply");
}

void CacheSession::replicaFailed(CacheCommand* cmd, CacheFragment* f, CacheErrorReason reason,
                                 std::string_view text) noexcept {
  // A write that failed may still have been applied: its keys' stripes move again.
  if (cmd->near_writes > 0) near_reads_.replied(cmd, nullptr, 0);
  cmd->parts[f->index] = FragmentReply{nullptr, 0, true};
  if (cmd->pending == 0) replicasDone(cmd, reason, text);
}

}  // namespace lb
