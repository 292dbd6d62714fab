#include "lb/membership/apply_plan.h"

#include <utility>

namespace lb {

bool ApplyPlan::offer(MembershipUpdate u) {
  if (u.revision <= newest_) return false;
  newest_ = u.revision;
  next_ = std::move(u);
  waiting_ = true;
  return true;
}

bool ApplyPlan::ready(uint64_t now_ms, uint64_t* wait_ms) const {
  if (wait_ms != nullptr) *wait_ms = 0;
  if (!waiting_ || in_flight_) return false;
  if (next_.deleted || !built_) return true;
  const uint64_t due = last_build_ms_ + interval_ms_;
  if (now_ms >= due) return true;
  if (wait_ms != nullptr) *wait_ms = due - now_ms;
  return false;
}

MembershipUpdate ApplyPlan::take(uint64_t now_ms) {
  MembershipUpdate u = std::move(next_);
  next_ = MembershipUpdate();
  waiting_ = false;
  in_flight_ = true;
  in_flight_revision_ = u.revision;
  if (!u.deleted) {
    built_ = true;
    last_build_ms_ = now_ms;
    ++builds_;
  }
  return u;
}

void ApplyPlan::done(bool applied) {
  if (!in_flight_) return;
  in_flight_ = false;
  if (applied && in_flight_revision_ > served_) served_ = in_flight_revision_;
}

void ApplyPlan::setServed(int64_t revision) {
  if (revision > served_) served_ = revision;
  if (revision > newest_) newest_ = revision;
  // A waiting update no newer than what is now served is old.
  if (waiting_ && next_.revision <= served_) {
    waiting_ = false;
    next_ = MembershipUpdate();
  }
}

}  // namespace lb
