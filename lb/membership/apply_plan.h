// The decisions of a cluster's membership source that need no etcd and no clock of their
// own (lb/membership/membership_source.h drives them on the main loop, and the unit tests
// drive them by hand): which revision of the key may still be served, and when the next
// table build may start.
//
//   - A revision is the key's etcd mod_revision. One that is not newer than every revision
//     seen so far (served, waiting, being built, or rejected) is dropped: lb never applies an
//     older membership after a newer one, and a reconciling Range that finds the revision
//     already judged does not judge it again.
//   - Coalescing: updates wait here, the latest replacing the one before, and at most one
//     build starts per min_apply_interval (counted from the start of the previous build), so
//     a writer that rewrites the key a thousand times costs a few builds, each of the newest
//     document. A deletion of the key is judged at once (it is a rejection: nothing to build).
//   - One build at a time: what arrives meanwhile waits for done().
#pragma once

#include <cstdint>
#include <string>

namespace lb {

struct MembershipUpdate {
  int64_t revision = 0;    // the key's mod_revision (of the deletion, for a DELETE)
  bool deleted = false;    // the key was deleted: a rejection, "key deleted"
  std::string document;    // the key's value (empty when deleted)
};

class ApplyPlan {
 public:
  // `served`: the revision served now (0: none, the file's backends). Pure.
  ApplyPlan(int64_t served, uint64_t min_interval_ms)
      : served_(served), newest_(served), interval_ms_(min_interval_ms) {}

  // Keeps `u` as the one to judge next when it is newer than every revision seen; else
  // false and nothing changes.
  bool offer(MembershipUpdate u);
  // True when take() may run at `now_ms`; otherwise, when an update waits, *wait_ms is how
  // long until it may (0 while a build is in flight: done() comes first).
  bool ready(uint64_t now_ms, uint64_t* wait_ms) const;
  // The waiting update, now in flight until done(). Only after ready() said true.
  MembershipUpdate take(uint64_t now_ms);
  // The update in flight applied (it is served now) or was rejected (the served one stays).
  void done(bool applied);

  // A membership served from elsewhere (the state file at start): revisions up to it are old.
  void setServed(int64_t revision);
  void setInterval(uint64_t min_interval_ms) { interval_ms_ = min_interval_ms; }

  int64_t served() const { return served_; }
  int64_t newest() const { return newest_; }
  bool waiting() const { return waiting_; }
  bool inFlight() const { return in_flight_; }
  uint64_t builds() const { return builds_; }

 private:
  int64_t served_;
  int64_t newest_;               // the highest revision offered, served or judged
  uint64_t interval_ms_;
  MembershipUpdate next_;
  bool waiting_ = false;
  bool in_flight_ = false;
  int64_t in_flight_revision_ = 0;
  bool built_ = false;           // a build has started: last_build_ms_ means something
  uint64_t last_build_ms_ = 0;
  uint64_t builds_ = 0;
};

}  // namespace lb
