// What `lb simulate` is asked to replay: the fleet, the request stream's popularity and mix,
// and the events on its timeline (docs/analyze.md, "lb simulate"). Plain data, shared by the
// model that runs it and the workload that draws its requests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lb {

struct SimEvent {
  enum class Kind { kAdd, kRemove, kFail, kFlap, kWeight, kRollout, kFailZone };
  Kind kind = Kind::kAdd;
  // servers added, removed, failed or flapping (the last ones); fail-zone: zones lost (the
  // last ones, every server in them)
  uint32_t count = 1;
  double at_s = -1;          // < 0: the scenario's default event time
  double recover_s = -1;     // fail: back after this long (empty cache), < 0 never
  double period_s = 3;       // flap: unreachable for a third of each period
  uint32_t server = 0;       // weight: which server
  uint32_t weight = 1;       // weight: its new weight
  uint32_t proxies = 1;      // rollout: proxies moving to the new membership
  double over_s = 0;         // rollout: first to last proxy
};

struct SimPopularity {
  enum class Kind { kZipf, kUniform, kTrace };
  Kind kind = Kind::kUniform;
  double alpha = 0.99;
  std::vector<std::string> trace;   // the trace's keys, in request order
};

struct SimScenario {
  uint32_t servers = 4;
  uint64_t keys = 100000;
  SimPopularity popularity;
  uint32_t capacity = 0;             // items per server (before sampling)
  double rate = 1000000;             // requests per second, reads and writes
  double writes = 0;                 // fraction of requests that are writes
  double duration_s = 60;
  double step_s = 1;
  double event_at_s = 10;
  std::vector<SimEvent> events;
  uint64_t samples_per_step = 100000;  // requests simulated per step (sets the key sampling)
  double after_window_s = 0.05;        // "right after the event": this much simulated time
  uint32_t rise = 2, fall = 3;         // health hysteresis (lb's defaults)
  double check_interval_s = 2;         // lb's default health-check interval
  // Handover (lb's `handover = { window }`): how long after a change of owners the previous
  // table keeps serving moved keys. 0: the runs hand nothing over.
  double handover_window_s = 0;
  // Zones: server i stands in zone i % zones (0: none), and the tables walk them as lb does
  // (lb/routing/zone_order.h). Replicas: each key lives on its first `replicas` usable hosts
  // (writes delete at every copy; a read that misses reads the next copy and copies a hit
  // back); a run with replicas is paired with one without on the same fleet.
  uint32_t zones = 0;
  uint32_t replicas = 1;
  // `capacity` is per copy: a run with R copies gets R times as much (the default capacity;
  // a --capacity given is the same for every run).
  bool capacity_per_copy = false;
  uint64_t seed = 1;
};

}  // namespace lb
