#include "lb/app/worker_group.h"


#include <thread>

#include "lb/config/config.h"
#include "lb/core/log.h"

namespace lb {

unsigned resolveWorkerCount(uint32_t configured) {
  if (configured > 0) return configured;
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

WorkerGroup::WorkerGroup(unsigned workers, const ProtocolTable& protocols) : registry_(workers) {
  for (unsigned i = 0; i < workers; ++i)
    workers_.push_back(std::make_unique<Worker>(i, workers, protocols));
}

WorkerGroup::~WorkerGroup() { stop(); }

bool WorkerGroup::start(std::shared_ptr<const Snapshot> snapshot, std::string* error) {
  snapshot_ = snapshot;
  for (auto& w : workers_) {
    if (!w->start(snapshot, error)) {
      stop();
      return false;
    }
  }
  return true;
}

void WorkerGroup::applySnapshot(std::shared_ptr<const Snapshot> snapshot) {
  snapshot_ = snapshot;
  for (auto& w : workers_) w->applySnapshot(snapshot);
}

void WorkerGroup::beginDrain() {
  draining_ = true;
  for (auto& w : workers_) w->beginDrain();
}

void WorkerGroup::backendDown(const std::shared_ptr<BackendState>& backend) {
  for (auto& w : workers_) w->backendDown(backend);
}

void WorkerGroup::stop() {
  for (auto& w : workers_) w->stop();
}

size_t WorkerGroup::inFlight() const {
  size_t n = 0;
  for (const auto& w : workers_) n += w->inFlight();
  return n;
}

}  // namespace lb
