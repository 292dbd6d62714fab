#include "lb/health/health_tracker.h"

#include "lb/core/duration.h"
#include "lb/core/log.h"

namespace lb {

namespace {

const HealthConfig kNoChecks{};

const HealthConfig& checksOf(const ClusterConfig& c) { return c.health ? *c.health : kNoChecks; }

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "5xx, connect refused": the kinds of failure that made up an ejected backend's run.
std::string kindsText(const std::array<uint64_t, kBackendFailureKinds>& kinds) {
  std::string out;
  for (int k = 0; k < kBackendFailureKinds; ++k) {
    if (kinds[k] == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(kinds[k]) + " " + backendFailureName(static_cast<BackendFailure>(k));
  }
  return out;
}

}  // namespace

HealthTracker::Backend::Backend(std::shared_ptr<BackendState> s, const ClusterConfig& cluster)
    : state(std::move(s)),
      checks(checksOf(cluster).rise, checksOf(cluster).fall),
      streak(*state) {}

HealthTracker::Backend* HealthTracker::find(const BackendState* state) {
  auto it = backends_.find(state);
  return it == backends_.end() ? nullptr : it->second.get();
}

bool HealthTracker::anyOutlierDetection() const {
  for (const auto& c : clusters_)
    if (c.config->outlier) return true;
  return false;
}

std::vector<std::shared_ptr<BackendState>> HealthTracker::takeCheckedDown() {
  std::vector<std::shared_ptr<BackendState>> out;
  out.swap(checked_down_);
  return out;
}

void HealthTracker::reconcile(std::shared_ptr<const Snapshot> snapshot) {
  std::unordered_map<const BackendState*, std::unique_ptr<Backend>> next;
  std::vector<Cluster> clusters;
  std::vector<std::pair<Backend*, std::string>> changed;
  for (const ClusterSnapshot& cs : snapshot->clusters) {
    Cluster c;
    c.state = cs.state;
    c.config = cs.config;
    c.members = std::min<uint32_t>(cs.hostCount(), static_cast<uint32_t>(cs.backends.size()));
    if (cs.hostCount() == 0) c.members = static_cast<uint32_t>(cs.backends.size());
    for (const BackendSnapshot& bs : cs.backends) {
      std::unique_ptr<Backend> b;
      auto it = backends_.find(bs.state.get());
      if (it != backends_.end()) {
        b = std::move(it->second);
        backends_.erase(it);
        if (cs.config->health) {
          b->checks.configure(cs.config->health->rise, cs.config->health->fall);
        } else if (!b->checks.up() || b->checks.failures() > 0) {
          b->checks = CheckHysteresis(1, 1);
          b->timeouts_in_run = 0;
          changed.emplace_back(b.get(), "its cluster has no active checks any more");
        }
        if (!cs.config->outlier && b->ejection.ejected()) {
          b->ejection.clear();
          b->streak.reset(*b->state);
          changed.emplace_back(b.get(), "its cluster has no outlier detection any more");
        }
      } else {
        b = std::make_unique<Backend>(bs.state, *cs.config);
        // A backend that left and came back while a request still held its old state may
        // carry its old flag: start it up like any new one.
        b->usable = b->state->healthy.load(std::memory_order_relaxed);
        changed.emplace_back(b.get(), "");
      }
      b->cluster = clusters.size();
      b->address = bs.config->address;
      b->leaving = c.backends.size() >= c.members;
      c.backends.push_back(b.get());
      next.emplace(bs.state.get(), std::move(b));
    }
    clusters.push_back(std::move(c));
  }
  // Whatever is left in backends_ left the config; its state goes with it.
  backends_ = std::move(next);
  clusters_ = std::move(clusters);
  snapshot_ = std::move(snapshot);
  for (auto& [b, reason] : changed) publish(*b, reason);
  for (Cluster& c : clusters_) updatePanic(c);
}

void HealthTracker::recordCheck(const BackendState* state, CheckResult result,
                                std::string_view detail, double seconds, double wall_seconds,
                                std::string_view identity) {
  Backend* b = find(state);
  if (b == nullptr) return;
  const Cluster& c = clusters_[b->cluster];
  if (!c.config->health) return;   // a check started before a reload turned checks off
  HealthRecord& rec = b->state->health;
  rec.checks[static_cast<int>(result)].add();
  rec.checked = true;
  rec.last_result = result;
  rec.last_check_at = wall_seconds;
  rec.last_check_seconds = seconds;
  b->last_detail = std::string(detail);
  const bool passed = result == CheckResult::kOk;
  if (passed && !identity.empty()) {
    // Another process answers than the last pass found, and no failed check came between
    // enough to take it down: it restarted (empty, for a cache) faster than `fall` checks.
    if (!b->identity.empty() && b->identity != identity && b->usable) {
      rec.restarts.add();
      LB_WARN("backend %s restarted between two checks (%s, was %s) (cluster %s)",
              b->state->name.c_str(), std::string(identity).c_str(), b->identity.c_str(),
              c.state->name.c_str());
      openReturnWindow(*b, c);
    }
    b->identity = std::string(identity);
  }
  if (!passed) {
    if (b->checks.failures() == 0) b->timeouts_in_run = 0;   // a new run of failures
    if (result == CheckResult::kTimeout) ++b->timeouts_in_run;
  }
  switch (b->checks.record(passed)) {
    case CheckHysteresis::Change::kWentDown: {
      const uint32_t n = b->checks.failures();
      std::string reason =
          b->timeouts_in_run >= n
              ? plural(n, "check", "checks") + " timed out after " +
                    formatDuration(c.config->health->timeout)
              : plural(n, "check", "checks") + " failed (last: " + b->last_detail + ")";
      publish(*b, reason);
      if (!c.state->panic.load(std::memory_order_relaxed)) checked_down_.push_back(b->state);
      return;
    }
    case CheckHysteresis::Change::kWentUp:
      publish(*b, plural(b->checks.passes(), "check", "checks") + " passed");
      return;
    case CheckHysteresis::Change::kNone:
      return;
  }
}

void HealthTracker::sweep(uint64_t now_ms) {
  for (Cluster& c : clusters_) {
    if (!c.config->outlier) continue;
    uint32_t ejected = 0;
    // Returns first, so that a backend coming back makes room under max_ejected_percent for
    // one that has to go in the same sweep.
    for (Backend* b : c.backends) {
      if (!b->ejection.ejected()) continue;
      // With active checks the backend also waits for `rise` passes in a row; checks that
      // say down keep it out by themselves.
      const bool checks_ok = !c.config->health || !b->checks.up() ||
                             b->checks.passes() >= b->checks.rise();
      if (b->ejection.due(now_ms) && checks_ok)
        endEjection(*b, now_ms, c);
      else
        ++ejected;
    }
    for (Backend* b : c.backends)
      if (!b->ejection.ejected()) maybeEject(*b, now_ms, c, &ejected);
  }
}

void HealthTracker::endEjection(Backend& b, uint64_t now_ms, const Cluster& c) {
  b.ejection.end(now_ms);
  b.streak.reset(*b.state);
  b.blocked_logged = false;
  std::string reason = "ejection of " + formatDuration(Duration(b.ejection.lastLengthMs())) +
                       " ended";
  if (c.config->health && b.checks.up())
    reason += " (" + plural(b.checks.passes(), "check", "checks") + " passed)";
  publish(b, reason);
}

void HealthTracker::maybeEject(Backend& b, uint64_t now_ms, Cluster& c, uint32_t* ejected) {
  const OutlierConfig& policy = *c.config->outlier;
  b.ejection.forgive(now_ms, policy);
  const uint64_t run = b.streak.current(*b.state);
  if (run < policy.consecutive_failures) {
    if (run == 0) b.blocked_logged = false;
    return;
  }
  const uint32_t total = c.members;
  if (!mayEject(*ejected, total, policy.max_ejected_percent)) {
    if (!b.blocked_logged)
      LB_WARN("backend %s: %llu consecutive failures, but %u of %u backends are ejected "
              "already (max_ejected_percent %u): kept in (cluster %s)",
              b.state->name.c_str(), static_cast<unsigned long long>(run), *ejected, total,
              policy.max_ejected_percent, c.state->name.c_str());
    b.blocked_logged = true;
    return;
  }
  const std::string kinds = kindsText(b.streak.kindsSinceReset(*b.state));
  const uint64_t length = b.ejection.eject(now_ms, policy);
  ++*ejected;
  b.state->health.ejections.add();
  b.state->health.ejection_ms = length;
  b.streak.reset(*b.state);
  b.blocked_logged = false;
  publish(b, "ejected for " + formatDuration(Duration(length)) + " after " +
                 plural(run, "consecutive failure", "consecutive failures") +
                 (kinds.empty() ? "" : " (" + kinds + ")"));
}

std::vector<HealthCarry> HealthTracker::carry(uint64_t now_ms) const {
  std::vector<HealthCarry> out;
  for (const Cluster& c : clusters_) {
    for (const Backend* b : c.backends) {
      if (b->usable) continue;
      HealthCarry h;
      h.cluster = c.state->name;
      h.backend = b->state->name;
      h.status = b->state->health.status;
      h.checks_down = !b->checks.up();
      if (b->ejection.ejected()) {
        h.ejected_left_ms = b->ejection.until() > now_ms ? b->ejection.until() - now_ms : 0;
        h.ejection_ms = b->ejection.lastLengthMs();
        h.repeats = b->ejection.repeats();
      }
      h.reason = b->state->health.reason;
      out.push_back(std::move(h));
    }
  }
  return out;
}

size_t HealthTracker::adopt(const std::vector<HealthCarry>& carried, uint64_t now_ms) {
  size_t taken = 0;
  for (const HealthCarry& h : carried) {
    for (Cluster& c : clusters_) {
      if (c.state->name != h.cluster) continue;
      for (Backend* b : c.backends) {
        if (b->state->name != h.backend) continue;
        const ClusterConfig& cc = *c.config;
        if (h.checks_down && cc.health)
          b->checks = CheckHysteresis(cc.health->rise, cc.health->fall, false);
        if (h.status == HealthStatus::kEjected && cc.outlier)
          b->ejection.restore(now_ms, h.ejected_left_ms, h.ejection_ms, h.repeats);
        else if (!h.checks_down || !cc.health)
          continue;   // nothing this config would keep it out for
        publish(*b, "as before the upgrade: " + h.reason);
        ++taken;
      }
    }
  }
  return taken;
}

void HealthTracker::publish(Backend& b, const std::string& reason) {
  HealthRecord& rec = b.state->health;
  const HealthStatus before = rec.status;
  const HealthStatus status = b.ejection.ejected() ? HealthStatus::kEjected
                              : b.checks.up()      ? HealthStatus::kUp
                                                   : HealthStatus::kDown;
  const bool usable = b.checks.up() && !b.ejection.ejected();
  rec.status = status;
  if (!reason.empty()) rec.reason = reason;
  Cluster& c = clusters_[b.cluster];
  if (usable != b.usable) {
    b.usable = usable;
    b.state->healthy.store(usable, std::memory_order_relaxed);
    rec.transitions[usable ? 0 : 1].add();
    if (usable) openReturnWindow(b, c);
    if (usable)
      LB_INFO("backend %s up: %s (cluster %s)", b.state->name.c_str(), rec.reason.c_str(),
              c.state->name.c_str());
    else
      LB_WARN("backend %s down: %s (cluster %s)", b.state->name.c_str(), rec.reason.c_str(),
              c.state->name.c_str());
    updatePanic(c);
  } else if (status != before) {
    // Out for one reason and now for the other (ejected while its checks failed, or the
    // other way round): not a transition, but the reason changed.
    LB_INFO("backend %s %s: %s (cluster %s)", b.state->name.c_str(), healthStatusName(status),
            rec.reason.c_str(), c.state->name.c_str());
  }
}

// A return is a change of owners: its keys come back to it over the handover window from
// the hosts that served them meanwhile (the pick's return step, or a cache's read-through).
void HealthTracker::openReturnWindow(Backend& b, const Cluster& c) {
  if (!c.config->handover || c.config->handover->window.count() <= 0 || b.leaving) return;
  const int64_t now = wallClockMs();
  b.state->returned_at_ms.store(now, std::memory_order_relaxed);
  const int64_t until = now + c.config->handover->window.count();
  if (c.state->returns_until_ms.load(std::memory_order_relaxed) < until)
    c.state->returns_until_ms.store(until, std::memory_order_relaxed);
}

void HealthTracker::updatePanic(Cluster& c) {
  uint32_t healthy = 0;
  for (uint32_t i = 0; i < c.members; ++i) healthy += c.backends[i]->usable ? 1 : 0;
  const uint32_t total = c.members;
  const bool panic = inPanic(healthy, total, c.config->panic_threshold);
  if (panic == c.state->panic.load(std::memory_order_relaxed)) return;
  c.state->panic.store(panic, std::memory_order_relaxed);
  if (panic)
    LB_WARN("cluster %s in panic: %u of %u backends healthy, under panic_threshold %u%%: "
            "routing by the table as if all were healthy",
            c.state->name.c_str(), healthy, total, c.config->panic_threshold);
  else
    LB_INFO("cluster %s out of panic: %u of %u backends healthy", c.state->name.c_str(),
            healthy, total);
}

}  // namespace lb
