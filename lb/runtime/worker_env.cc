#include "lb/runtime/worker_env.h"

#include <atomic>

namespace lb {

WorkerEnv::WorkerEnv(uv_loop_t* loop, unsigned index, const ProtocolTable& protocols,
                     size_t max_idle_per_backend)
    : loop_(loop),
      index_(index),
      protocols_(protocols),
      upstreams_(loop, index, max_idle_per_backend),
      // Seeded per worker and per run, so that two workers (or two runs) do not walk their
      // keyless requests through the same sequence. Never 0: xorshift would stay there.
      random_((0x9E3779B97F4A7C15ull ^ (uv_hrtime() + index)) | 1) {}

WorkerEnv::~WorkerEnv() = default;

void WorkerEnv::setSnapshot(std::shared_ptr<const Snapshot> snapshot) noexcept {
  snapshot_ = std::move(snapshot);
  if (!snapshot_) return;
  sessions_.forEach([](Session* s) { s->snapshotChanged(); });
  for (auto& s : services_)
    if (s) s->snapshotChanged(snapshot_->generation);
}

void WorkerEnv::closeServices() noexcept {
  for (auto& s : services_)
    if (s) s->close();
}

size_t WorkerEnv::nextServiceId() noexcept {
  static std::atomic<size_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void WorkerEnv::beginDrain() noexcept {
  draining_ = true;
  upstreams_.drain();
}

}  // namespace lb
