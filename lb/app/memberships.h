// How a cluster's membership from etcd goes live (docs/config.md, "membership"), on the main
// thread: one MembershipSource per membership cluster (lb/membership/membership_source.h)
// reads and watches the key; this judges each revision it hands over and puts the good ones
// live.
//
//   - Judging: the document parses and passes the checks TOML backends pass, for this
//     cluster's selector (lb/membership/document.h); it removes at most max_remove_percent of
//     the backends of the membership served now (a cluster still on its file's fallback has
//     none to lose); its host names resolve (libuv's thread pool, as a reload's do). A
//     deletion of the key is a rejection. A rejection changes nothing: it is logged with
//     the revision and the reason ("membership: cluster cache: rejected revision 42: ..."),
//     counted (lb_membership_updates_total{result="rejected"}) and shown in /backends.
//   - Applying: the running config with that cluster's backends replaced, built as a reload
//     builds (Lifecycle::applyConfig: one generation more, backends that stay keep their
//     state), then the state file written (temp file + rename). Logged "membership: cluster
//     cache: applied revision 42 (3 backends, fingerprint 0000a1b2c3d4e5f6)".
//   - Start: the sources Range first, and lb waits up to kStartWait for every first answer
//     before the workers start, so an instance with etcd up starts on etcd's membership;
//     without one: the state file (when it holds this cluster and key and passes the checks),
//     else the file's backends, else none (the cluster serves nothing and /ready says so).
//   - Reload: a membership cluster keeps the backends it serves (the file's are its
//     fallback) unless its key changed, and a reload whose settings would refuse them (a
//     selector that wants what they lack) is refused; a source whose endpoints or key changed starts
//     again, one whose cluster lost its membership stops, a new one starts.
//   - Drain: every source stops.
// Main thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lb/app/lifecycle.h"
#include "lb/config/config.h"
#include "lb/membership/apply_plan.h"
#include "lb/routing/snapshot.h"

namespace lb {

class MembershipSource;
class ResolveBatch;
class WorkerGroup;

// How long lb's start waits for the sources' first answers.
inline constexpr Duration kStartWait{2000};

// An error for each membership state_file whose directory does not exist (at start, and on
// a reload), at its membership table.
Errors checkStateFileDirs(const Config& config);

class Memberships {
 public:
  Memberships(uv_loop_t* loop, WorkerGroup& server);
  ~Memberships();
  Memberships(const Memberships&) = delete;
  Memberships& operator=(const Memberships&) = delete;

  // Before the workers start: a source per membership cluster of `config`, then runs the
  // loop until each has answered its first Range (or failed it on every endpoint) or `wait`
  // has passed.
  void startAndWait(const Config& config, Duration wait);
  // Before the workers start: each membership cluster's backends become what the start
  // found (etcd, else the state file, else the file's own), `origins` says which, and the
  // host names they use are looked up (blocking, as the file's are at start) into `hosts`.
  void initialOverlay(Config& config, BackendOrigins& origins, ResolvedHosts& hosts);
  // Once the workers serve: later revisions are applied through `lifecycle`.
  void goLive(Lifecycle* lifecycle);
  // For Lifecycle::setMembershipHooks.
  MembershipHooks hooks();
  // Stops every source (idempotent); nothing applies after it.
  void stop();

 private:
  struct Entry;
  // `file`: the config's path, for the position of a TLS file that does not load.
  void startSource(const ClusterConfig& cluster, const std::string& file, int64_t served);
  void stopEntry(Entry& e);
  void onBuild(const std::string& cluster, const MembershipUpdate& u);
  void onChanged(const std::string& cluster);
  void onConfirmed(const std::string& cluster, int64_t revision);
  // The asynchronous half of judging: names answered, build and apply.
  void finishApply(const std::string& cluster, int64_t revision, int64_t changed_at_ms,
                   std::vector<BackendConfig> backends, const ResolvedHosts& answers);
  void reject(Entry& e, int64_t revision, const std::string& reason, bool tell_source = true);
  void noteApplied(Entry& e, int64_t revision, const std::string& document, size_t backends,
                   uint64_t fingerprint);
  Errors overlay(Config& config, BackendOrigins& origins, ResolvedHosts& hosts);
  void reloaded(const Snapshot& snapshot);

  uv_loop_t* loop_;
  WorkerGroup& server_;
  Lifecycle* lifecycle_ = nullptr;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
  bool live_ = false;
  bool stopped_ = false;
};

}  // namespace lb
