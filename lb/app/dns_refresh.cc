#include "lb/app/dns_refresh.h"

#include <algorithm>

#include "lb/admin/admin.h"
#include "lb/app/worker_group.h"
#include "lb/core/address.h"
#include "lb/core/log.h"
#include "lb/routing/readdress.h"

namespace lb {

namespace {

// The longest the timer sleeps: a reload that turns resolve_interval on is seen this late.
constexpr uint64_t kLookAgainMs = 1000;

std::string backendPath(const ClusterSnapshot& c, uint32_t backend) {
  return "clusters." + c.config->name + ".backends[" + std::to_string(backend) + "]";
}

std::string hostOf(const std::string& address) {
  HostPort parsed;
  std::string error;
  return parseHostPort(address, &parsed, &error) ? parsed.host : std::string();
}

}  // namespace

DnsRefresh::DnsRefresh(uv_loop_t* loop, WorkerGroup& server, Apply apply)
    : loop_(loop), server_(server), apply_(std::move(apply)) {
  timer_.data = this;
}

DnsRefresh::~DnsRefresh() = default;

void DnsRefresh::start() {
  if (started_) return;
  started_ = true;
  uv_timer_init(loop_, &timer_);
  uv_unref(reinterpret_cast<uv_handle_t*>(&timer_));
  schedule();
}

void DnsRefresh::stop() {
  if (stopped_) return;
  stopped_ = true;
  admin_ = nullptr;
  if (batch_ != nullptr) {
    batch_->abandon();
    batch_ = nullptr;
  }
  if (started_) uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
}

void DnsRefresh::onTick(uv_timer_t* timer) { static_cast<DnsRefresh*>(timer->data)->tick(); }

void DnsRefresh::schedule() {
  if (stopped_) return;
  const uint64_t now = uv_now(loop_);
  uint64_t delay = kLookAgainMs;
  for (const auto& [cluster, due] : due_) delay = std::min(delay, due > now ? due - now : 0);
  uv_timer_start(&timer_, onTick, delay, 0);
}

void DnsRefresh::tick() {
  if (stopped_ || batch_ != nullptr) return;   // a round in flight reschedules when it ends
  if (server_.draining()) return;              // nothing more to route: the timer stays off
  std::shared_ptr<const Snapshot> snap = server_.snapshot();
  const uint64_t now = uv_now(loop_);
  if (!snap) {
    schedule();
    return;
  }
  // A new config generation resolved every name as it loaded: each interval starts again.
  if (snap->generation != generation_) {
    generation_ = snap->generation;
    due_.clear();
    std::set<std::string> still_named;
    for (const ClusterSnapshot& c : snap->clusters) {
      const std::vector<std::string> names = hostNamesOf(*c.config);
      if (c.config->resolve_interval.count() > 0 && !names.empty())
        due_[c.config->name] = now + static_cast<uint64_t>(c.config->resolve_interval.count());
      still_named.insert(names.begin(), names.end());
    }
    std::erase_if(failing_, [&](const std::string& n) { return !still_named.count(n); });
  }
  std::vector<uint32_t> due;
  std::vector<std::string> names;
  for (uint32_t i = 0; i < snap->clusters.size(); ++i) {
    const ClusterConfig& c = *snap->clusters[i].config;
    auto it = due_.find(c.name);
    if (it == due_.end() || it->second > now) continue;
    due.push_back(i);
    it->second = now + static_cast<uint64_t>(c.resolve_interval.count());
    for (std::string& n : hostNamesOf(c))
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(std::move(n));
  }
  if (names.empty()) {
    schedule();
    return;
  }
  batch_ = ResolveBatch::start(
      loop_, std::move(names), kResolveWait,
      [this, snap, due](const std::vector<std::string>& asked,
                        const std::vector<ResolveAnswer>& answers) {
        batch_ = nullptr;
        onAnswers(snap, due, asked, answers);
        schedule();
      });
}

void DnsRefresh::onAnswers(const std::shared_ptr<const Snapshot>& base,
                           const std::vector<uint32_t>& due,
                           const std::vector<std::string>& names,
                           const std::vector<ResolveAnswer>& answers) {
  if (stopped_ || server_.draining()) return;
  ResolvedHosts resolved;
  uint64_t failed = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (answers[i].status == 0) {
      resolved[name] = answers[i].address;
      if (failing_.erase(name) > 0) LB_INFO("dns: '%s' resolves again", name.c_str());
      continue;
    }
    ++failed;
    if (failing_.insert(name).second)
      LB_WARN("dns: cannot resolve '%s': %s; its backends keep their last address (logged "
              "once, until it resolves again)",
              name.c_str(), resolveErrorText(answers[i].status).c_str());
  }
  // A reload while the round was in flight resolved every name itself, and its snapshot is
  // the one to keep.
  const bool current = server_.snapshot() == base;
  std::vector<AddressChange> changes;
  if (current) changes = addressChanges(*base, due, resolved);
  std::set<std::string> changed_names;
  for (const AddressChange& change : changes) {
    const ClusterSnapshot& c = base->clusters[change.cluster];
    const BackendSnapshot& b = c.backends[change.backend];
    changed_names.insert(hostOf(b.config->address));
    LB_INFO("dns: %s (%s): %s now %s, was %s", backendPath(c, change.backend).c_str(),
            b.config->name.c_str(), b.config->address.c_str(),
            formatAddress(reinterpret_cast<const sockaddr*>(&change.address)).c_str(),
            formatAddress(reinterpret_cast<const sockaddr*>(&b.address)).c_str());
  }
  if (!changes.empty()) apply_(withAddresses(*base, changes));
  noteDnsResolutions(admin_, resolved.size() - changed_names.size(), changed_names.size(),
                     failed);
}

}  // namespace lb
