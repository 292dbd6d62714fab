// planMembership: the members before and after a scenario's events, with their weights.
#include "lb/cli/simulate/membership_plan.h"

namespace lb {

SimMembershipPlan planMembership(const SimScenario& s) {
  SimMembershipPlan p;
  p.event_t = s.event_at_s;
  for (uint32_t i = 0; i < s.servers; ++i) p.old_ids.push_back(i);
  p.new_ids = p.old_ids;
  uint32_t ids = s.servers;   // every id an add may use, and one for a rollout's server
  for (const auto& e : s.events)
    if (e.kind == SimEvent::Kind::kAdd) ids += e.count;
  p.old_weights.assign(ids + 1, 1);
  uint32_t added_id = s.servers;
  for (const auto& e : s.events) {
    if (e.at_s >= 0 && e.kind != SimEvent::Kind::kFail && e.kind != SimEvent::Kind::kFlap)
      p.event_t = e.at_s;
    switch (e.kind) {
      case SimEvent::Kind::kAdd:
        for (uint32_t i = 0; i < e.count; ++i) p.new_ids.push_back(added_id++);
        p.change = true;
        break;
      case SimEvent::Kind::kRemove:
        for (uint32_t i = 0; i < e.count && p.new_ids.size() > 1; ++i) {
          p.removed.push_back(p.new_ids.back());
          p.new_ids.pop_back();
        }
        p.change = true;
        break;
      case SimEvent::Kind::kWeight:
        p.change = true;
        break;
      case SimEvent::Kind::kRollout:
        p.rollout = &e;
        break;
      default:
        break;
    }
  }
  if (p.rollout != nullptr && !p.change) {   // a rollout of nothing else: one server joins
    p.new_ids.push_back(added_id++);
    p.change = true;
  }
  p.new_weights = p.old_weights;
  for (const auto& e : s.events)
    if (e.kind == SimEvent::Kind::kWeight && e.server < p.new_weights.size())
      p.new_weights[e.server] = e.weight;
  p.servers = added_id;
  return p;
}

}  // namespace lb
