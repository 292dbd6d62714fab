// What a scenario's events do to the fleet's membership, for `lb simulate`: servers 0..N-1
// at the start; in event order an add appends new ids, a remove takes the last ones (one
// server always stays), a weight event changes one server's weight, and a rollout of nothing
// else brings one server in. The rest of the timeline (failures, flaps) leaves membership
// alone and is the model's (model.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "lb/cli/simulate/scenario.h"

namespace lb {

struct SimMembershipPlan {
  std::vector<uint32_t> old_ids;       // the members before the events
  std::vector<uint32_t> new_ids;       // after them (old_ids when nothing changes)
  std::vector<uint32_t> removed;       // the ids removed, in event order
  std::vector<uint32_t> old_weights;   // by id, 1 each
  std::vector<uint32_t> new_weights;   // by id, the weight events applied
  uint32_t servers = 0;                // ids 0..servers-1 are ever used
  bool change = false;                 // the events change the membership or a weight
  const SimEvent* rollout = nullptr;   // the scenario's rollout event, if any
  double event_t = 0;                  // when the last membership event happens (s)
};

SimMembershipPlan planMembership(const SimScenario& s);

}  // namespace lb
