#include "lb/app/server.h"


#include <thread>

#include "lb/config/config.h"
#include "lb/core/log.h"

namespace lb {

unsigned resolveWorkerCount(uint32_t configured) {
  if (configured > 0) return configured;
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

Server::Server(unsigned workers, const ProtocolTable& protocols) : registry_(workers) {
  for (unsigned i = 0; i < workers; ++i)
    workers_.push_back(std::make_unique<Worker>(i, workers, protocols));
}

Server::~Server() { stop(); }

bool Server::start(std::shared_ptr<const Snapshot> snapshot, std::string* error) {
  snapshot_ = snapshot;
  for (auto& w : workers_) {
    if (!w->start(snapshot, error)) {
      stop();
      return false;
    }
  }
  return true;
}

void Server::applySnapshot(std::shared_ptr<const Snapshot> snapshot) {
  snapshot_ = snapshot;
  for (auto& w : workers_) w->applySnapshot(snapshot);
}

void Server::beginDrain() {
  draining_ = true;
  for (auto& w : workers_) w->beginDrain();
}

void Server::backendDown(const std::shared_ptr<BackendState>& backend) {
  for (auto& w : workers_) w->backendDown(backend);
}

void Server::stop() {
  for (auto& w : workers_) w->stop();
}

size_t Server::inFlight() const {
  size_t n = 0;
  for (const auto& w : workers_) n += w->inFlight();
  return n;
}

}  // namespace lb
