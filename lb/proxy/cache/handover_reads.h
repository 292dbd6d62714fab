// Handover reads (docs/architecture.md, "Handover"): inside a cluster's handover window a
// plain read of a key whose owner changed (or each key of a read of several) goes to the
// new owner, and a miss there is read
// from the host that served the key before (its previous owner, or the host that stood in for
// a returned one; the pick names it, Pick::from). A hit there is the client's answer, byte
// for byte, and is copied to the new owner without overwriting anything, with the remaining
// time to live the previous host reports, capped at the cluster's copy_ttl. A write or
// delete of such a key goes to its new owner and is followed by a delete at the previous
// host, so that a later handover read never copies a value older than the last write
// through lb.
//
// This is mcrouter's WarmUpRoute (a miss on the cold pool read from the warm one and `add`ed
// back) and the cold-cluster warm-up of "Scaling Memcache at Facebook" (NSDI 2013, 4.3), with
// the pools named by lb's own membership change instead of by hand. The race they name
// remains for a write that does not pass through lb: a value it changed at the previous host
// after the change can be copied; the copy's time to live, at most copy_ttl, bounds it. So
// does one more: a delete through lb that lands between a handover read at the previous
// host and its copy lets the copy store the deleted value, again for at most copy_ttl
// (Facebook's hold-off on deletes would close it; lb does not keep one).
//
// A command's steps (CacheCommand::handover_stage):
//
//   kAtOwner ──the owner missed──> kAtPrevious ──the previous host's replies──> answered
//   kAtOwner ──a hit, an error──> the owner's reply, as any read's
//   kAtPrevious ──the previous host failed or timed out──> the owner's miss (counted error)
//   kAtPrevious ──a hit, for a read that asks again──> kAskedAgain ──> the owner's reply
//   kAskedAgain ──the owner failed or timed out──> the owner's first miss
//
// A merged read of several keys (a memcached get, a redis MGET, split by owner or not)
// reads through per key, once every owner has answered:
//
//   kMergeAtOwners ──every owner answered, some keys missed──> kMergeReads ──the reads'
//       replies──> merged: each hit answers its key in place of the owner's miss
//   kMergeAtOwners ──no miss has a host to read──> merged as any split read
//   kMergeReads ──a read failed or timed out──> that key's miss
//   kMergeReads ──hits, for a read that asks again──> kMergeAskedAgain ──the owners'
//       replies──> merged: each key asked again answered by its owner's reply
//
// A read that asks again (read()'s `again`: memcached gets, gat, gats, mg) is answered by the
// owner, not by the previous host: the copy goes to the owner and the client's command
// right behind it, on the same connection, so that the owner answers it with the copied item
// (or with what a concurrent write left there), its CAS unique and whatever the command's
// flags ask for, as it would have had the key been there all along.
//
// The protocols say what a miss, a read, a copy and a delete are on their wire (CacheWire);
// the session's protocol half calls read() and wrote(); the rest is in
// cache_session_handover.cc, once. Copies and
// deletes are the worker's HandoverSink's: their replies reach no client, only the counters.
// Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "lb/proxy/cache/command.h"

namespace lb {

class ByteChain;
class CacheSession;
class CacheWire;
struct HandoverFound;
struct ClusterState;
struct HandoverWorkerStats;
enum class ReplicaReadResult : uint8_t;

// The worker's owner of the copies and deletes handover reads send, one per cluster state
// and protocol (CacheWorker::handoverSink): their replies are counted and dropped. Outlives
// every server connection of the worker (a connection that closes fails what it still holds
// here).
class HandoverSink final : public FragmentOwner {
 public:
  HandoverSink(std::shared_ptr<ClusterState> state, const CacheWire& wire,
               unsigned worker) noexcept;
  HandoverSink(const HandoverSink&) = delete;
  HandoverSink& operator=(const HandoverSink&) = delete;

  const ClusterState* state() const noexcept { return state_.get(); }
  const CacheWire& wire() const noexcept { return wire_; }
  HandoverWorkerStats& stats() noexcept { return stats_; }
  // What a copy's and a delete's fragments belong to.
  CacheCommand* copies() noexcept { return &copies_; }
  CacheCommand* deletes() noexcept { return &deletes_; }
  // What the replica copies of a write of several keys belong to: nobody waits for them; an
  // error or a failure is counted at the copy's backend (lb_replica_write_failures_total).
  CacheCommand* replicaWrites() noexcept { return &replica_writes_; }

  void fragmentReply(CacheFragment* f, const char* p, size_t n) noexcept override;
  void fragmentFailed(CacheFragment* f, CacheErrorReason reason,
                      std::string_view text) noexcept override;

 private:
  std::shared_ptr<ClusterState> state_;
  const CacheWire& wire_;
  HandoverWorkerStats& stats_;
  CacheCommand copies_;
  CacheCommand deletes_;
  CacheCommand replica_writes_;
  unsigned worker_;
};

class HandoverReads {
 public:
  enum Stage : uint8_t {
    kNone,         // not a handover read
    kAtOwner,      // sent to the new owner
    kAtPrevious,   // the owner missed: read at the previous host
    kAskedAgain,   // a hit there, copied to the owner: the command asked of it again
    kMergeAtOwners,   // a merged read of several keys, sent to their owners
    kMergeReads,      // its missed keys read at the hosts that served them before
    kMergeAskedAgain,  // the hits copied, each key asked of its owner again
  };

  explicit HandoverReads(CacheSession& session) noexcept : s_(session) {}
  HandoverReads(const HandoverReads&) = delete;
  HandoverReads& operator=(const HandoverReads&) = delete;

  // The session's cluster has a handover and its protocol reads through.
  bool enabled() const noexcept { return sink_ != nullptr; }

  // A plain read of `key` is about to go to `owner`, and the pick named `from`
  // (Pick::kNoHost: nothing to read through): a miss at the owner will be read there. With
  // `again` (the command's bytes as sent, their reply of `again_kind`), a hit there is
  // copied and the command asked of the owner again, whose reply is the answer.
  void read(CacheCommand* cmd, std::string_view key, uint32_t owner, uint32_t from,
            std::string_view again = {}, uint8_t again_kind = 0) noexcept;
  // A merged read of `keys` (in the client's order) is going to their owners: while a
  // window is open in the cluster, once all have answered, each key they missed
  // (CacheSession::handoverMisses names them) is read through. With `again` (the bytes
  // before a key of the command asking for that key alone, "gets "), each hit is asked of
  // its owner again behind its copy, `again`, the key and "\r\n", replied as `again_kind`,
  // and that reply answers the key.
  void readMerged(CacheCommand* cmd, const std::vector<std::string_view>& keys,
                  std::string_view again = {}, uint8_t again_kind = 0) noexcept;
  // A write or delete of `key` has gone to `owner`: the key is deleted at the host that
  // served it before, if any (ClusterSnapshot::handoverFrom).
  void wrote(std::string_view key, uint32_t owner) noexcept;
  // A delete of `key` at `host`, answered to nobody (counted with the handover deletes): a
  // replica's copy that a compare-and-swap at the primary made stale.
  void deleteAt(std::string_view key, uint32_t host) noexcept;
  // A write's copy to `host` that nobody waits for (the replicas of a write of several keys,
  // past each key's first host): the command's bytes go in the chain openCopy returns (null:
  // no sink, or no memory: send nothing), then copyWritten queues its reply's fragment,
  // framed as `reply_kind`.
  ByteChain* openCopy(uint32_t host) noexcept;
  void copyWritten(uint32_t host, uint8_t reply_kind) noexcept;

 private:
  friend class CacheSession;
  // From the session, for a reply or failure of a handover read's fragment: true when this
  // took it (the command waits for the previous host, or was answered here).
  bool replied(CacheCommand* cmd, CacheFragment* f, const char* p, size_t n) noexcept;
  bool failed(CacheCommand* cmd, CacheFragment* f) noexcept;
  void answered(CacheCommand* cmd) noexcept;
  // From the session, when every owner of a kMergeAtOwners read has answered: true when
  // reads went out (the command waits for them), false to merge now.
  bool readMisses(CacheCommand* cmd) noexcept;
  // The reads of a kMergeReads command are all answered (or failed): copies out, hits in
  // the merge (or asked again), the command complete.
  void mergeReadsDone(CacheCommand* cmd) noexcept;
  // The owners asked again by a kMergeAskedAgain command have all answered (or failed).
  void mergeAskedDone(CacheCommand* cmd) noexcept;
  // The owners' parts only, for the merge, and the command complete.
  void mergeComplete(CacheCommand* cmd) noexcept;
  // Keeps `again` (in the arena) as what `cmd` asks of the owner again; false without room.
  bool askAgainWith(CacheCommand* cmd, std::string_view again, uint8_t again_kind) noexcept;
  // The session routes by another table than the one that named `cmd`'s hosts.
  bool movedOn(const CacheCommand* cmd) const noexcept;
  // A hit's copy to `owner`, its TTL capped at copy_ttl (none when it has no time left);
  // true when it was sent.
  bool copyTo(uint32_t owner, std::string_view key, const HandoverFound& found,
              bool replica = false) noexcept;
  // Reads the command's key at its handover_from host; `miss` (n bytes) answers it should
  // that miss or fail.
  void readAtFrom(CacheCommand* cmd, const char* miss, size_t n) noexcept;
  void countReplica(ReplicaReadResult r) noexcept;
  // The host a miss or a failure of `cmd` is read at: its handover_from, or, for a key with
  // copies, its next copy, found now and kept there (the session has not moved on). False
  // when there is none.
  bool resolveFrom(CacheCommand* cmd) noexcept;

  CacheSession& s_;
  HandoverSink* sink_ = nullptr;   // the session's table's, while held; null: off
  CacheFragment* open_copy_ = nullptr;   // between openCopy and copyWritten
};

}  // namespace lb
