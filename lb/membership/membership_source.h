// One cluster's membership from etcd (docs/config.md, "membership"), on the main loop: reads
// the cluster's key, watches it, and hands each revision worth judging to its owner (lb/app/
// memberships.h), which validates it, builds the table and puts it live.
//
//   starting ──► ranging ──► watching ──(watch ends)──► ranging ...
//                  │  ▲          │
//                  ▼  │          └─(error)──► reconnecting ──(backoff)──► ranging
//              reconnecting                                         stop() ──► stopped
//
//   - Range, then watch from the Range's header revision + 1 (not the key's mod_revision:
//     every revision after the read is seen once). The membership is named by the key's
//     mod_revision.
//   - Every watch message's events are judged together: the last event of the key in the
//     message wins; if it is a DELETE, that is a rejection ("key deleted") and the cluster
//     keeps serving.
//   - A watch that ends (etcd went away, the stream closed, etcd canceled it, or its start
//     revision was compacted, etcd's compact_revision) is followed by a Range and a new
//     watch, so a break never loses an update: the Range sees the key as it is. A
//     compaction Ranges at once; any other end waits a backoff first and moves to the next
//     endpoint.
//   - Failures back off exponentially with jitter, 100 ms doubling up to 5 s (each wait a
//     random point in its upper half, so a fleet that lost etcd together does not come back
//     in step), and move to the next endpoint (EtcdClient tries the others within one Range).
//   - Every reconcile_interval (30 s) a Range besides the watch, for a stream that died
//     silently; if the Range was answered by another member than the watch's, the watch moves
//     there too.
//   - Never a revision at or below one already seen (lb/membership/apply_plan.h), and at most
//     one build per min_apply_interval, always of the latest document.
// Loop thread only. Nothing throws out of a libuv or client callback.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "lb/config/config.h"
#include "lb/membership/apply_plan.h"
#include "lb/tls/tls_client_context.h"

namespace lb {

class EtcdClient;
struct EtcdError;
struct EtcdRangeReply;
struct EtcdWatchBatch;

enum class SourceState : uint8_t { kStarting, kRanging, kWatching, kReconnecting, kStopped };
// "starting", "ranging", "watching", "reconnecting", "stopped": /backends' membership.state.
const char* sourceStateName(SourceState s) noexcept;

// What the source is doing, for /backends and the metrics (its owner copies it on change).
struct SourceStatus {
  SourceState state = SourceState::kStarting;
  std::string endpoint;      // the member it talks to (the last one tried)
  bool watch_up = false;     // etcd confirmed the watch (its created message) and it runs
  double last_sync = 0;      // epoch seconds of etcd's last answer (a Range or a watch message)
};

class MembershipSource {
 public:
  struct Hooks {
    // Judge this update: validate, build and apply it, or reject it; then call done() (now or
    // later, from the loop). Never two at a time.
    std::function<void(const MembershipUpdate&)> build;
    // Something of status() changed.
    std::function<void()> changed;
    // etcd holds the revision served now (a start on the state file, then etcd answers with
    // the same revision): nothing to build, but it now comes from etcd. May be empty.
    std::function<void(int64_t revision)> confirmed;
    // etcd answered with a revision older than the newest one seen (`newest`): revisions
    // never go back in one etcd cluster, so it was restored from a backup or rebuilt. The
    // update is not judged; the owner tells the operator. May be empty.
    std::function<void(int64_t revision, int64_t newest)> older;
  };

  // Starts at once (a Range). `served` is the revision the cluster serves now (0: none).
  // `tls`: the client context for https:// members (membership_tls.h builds it from
  // config.tls); config.user and config.password authenticate to etcd when set.
  // Returns null with *error when the etcd URLs do not parse (validation has refused them).
  static MembershipSource* start(uv_loop_t* loop, std::string cluster, MembershipConfig config,
                                 int64_t served, Hooks hooks,
                                 std::shared_ptr<const TlsClientContext> tls, std::string* error);

  // The build the owner was asked for ended: `applied` (the cluster serves update.revision)
  // or rejected. The next waiting update, if any, follows after min_apply_interval.
  void done(bool applied);
  // A membership the owner serves from elsewhere (the state file at start).
  void setServed(int64_t revision) { plan_.setServed(revision); }
  // A reload's new max_remove_percent, min_apply_interval or reconcile_interval (the same
  // endpoints and key: otherwise the owner starts a new source).
  void reconfigure(const MembershipConfig& config);
  // True once the first Range answered or every endpoint failed it: lb's start waits for
  // this (bounded), so that an instance with etcd up starts on etcd's membership.
  bool settled() const { return settled_; }
  const SourceStatus& status() const { return status_; }
  const MembershipConfig& config() const { return config_; }
  const std::string& cluster() const { return cluster_; }
  int64_t served() const { return plan_.served(); }
  uint64_t builds() const { return plan_.builds(); }

  // Stops everything (no hook runs after this) and frees itself once its handles are closed.
  void stop();

 private:
  MembershipSource(uv_loop_t* loop, std::string cluster, MembershipConfig config, int64_t served,
                   Hooks hooks, std::unique_ptr<EtcdClient> client);
  ~MembershipSource();

  void range(bool reconciling);
  void onRange(const EtcdRangeReply* reply, const EtcdError* error, bool reconciling);
  void watchFrom(int64_t revision);
  void onBatch(const EtcdWatchBatch& batch);
  void onWatchEnd(const EtcdError& error);
  void failed(const std::string& what, const EtcdError& error);
  void offer(MembershipUpdate u);
  void pump();
  void setState(SourceState s);
  void synced();
  static void onRetry(uv_timer_t* t);
  static void onApply(uv_timer_t* t);
  static void onReconcile(uv_timer_t* t);
  static void onClosed(uv_handle_t* h);

  uv_loop_t* loop_;
  std::string cluster_;
  MembershipConfig config_;
  Hooks hooks_;
  std::unique_ptr<EtcdClient> client_;
  ApplyPlan plan_;
  SourceStatus status_;
  uv_timer_t retry_;        // the backoff before the next Range
  uv_timer_t apply_;        // the next build, once min_apply_interval has passed
  uv_timer_t reconcile_;    // the periodic Range
  int open_handles_ = 0;
  uint32_t failures_ = 0;   // in a row: the backoff's exponent
  bool ranging_ = false;    // a Range in flight
  bool settled_ = false;
  bool stopped_ = false;
  bool building_ = false;   // hooks_.build was called, done() not yet
  std::string watch_endpoint_;   // the member the watch runs on ("" when none)
};

}  // namespace lb
