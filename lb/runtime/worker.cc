#include "lb/runtime/worker.h"

#include <fcntl.h>

#include "lb/core/log.h"
#include "lb/runtime/listener.h"
#include "lb/net/inherited_sockets.h"

namespace lb {

Worker::Worker(unsigned index, unsigned worker_count, const ProtocolTable& protocols)
    : worker_count_(worker_count), env_(&loop_, index, protocols) {}

Worker::~Worker() { stop(); }

bool Worker::start(std::shared_ptr<const Snapshot> snapshot, std::string* error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_snapshot_ = std::move(snapshot);
  }
  joined_ = false;
  thread_ = std::thread([this] { run(); });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return started_; });
  if (!start_ok_) {
    *error = start_error_;
    lock.unlock();
    thread_.join();
    joined_ = true;
    return false;
  }
  return true;
}

void Worker::run() {
  uv_loop_init(&loop_);
  uv_async_init(&loop_, &async_, onAsync);
  async_.data = this;
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    env_.setSnapshot(std::move(pending_snapshot_));
  }
  access_log_ = std::make_unique<AccessLog>(&loop_, env_.snapshot()->access_log);
  env_.setAccessLog(access_log_.get());
  bool ok = reconcileListeners(&error);
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
    start_ok_ = ok;
    start_error_ = error;
  }
  cv_.notify_all();
  if (!ok) shutdownLoop();
  uv_run(&loop_, UV_RUN_DEFAULT);
  // Every handle is closed once uv_run returns after shutdownLoop(); a non-zero result here
  // would be a leaked handle.
  if (uv_loop_close(&loop_) != 0)
    LB_WARN("worker %u: loop closed with live handles", env_.index());
}

void Worker::applySnapshot(std::shared_ptr<const Snapshot> snapshot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_snapshot_ = std::move(snapshot);
  }
  uv_async_send(&async_);
}

void Worker::beginDrain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_drain_ = true;
  }
  uv_async_send(&async_);
}

void Worker::backendDown(std::shared_ptr<BackendState> backend) {
  if (joined_) return;   // not running: nothing open to tell
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_down_.push_back(std::move(backend));
  }
  uv_async_send(&async_);
}

void Worker::handOverHotKeys() {
  if (joined_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_hot_keys_ = true;
  }
  uv_async_send(&async_);
}

void Worker::adoptHotSets() {
  if (joined_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_hot_sets_ = true;
  }
  uv_async_send(&async_);
}

void Worker::stop() {
  if (joined_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_stop_ = true;
  }
  uv_async_send(&async_);
  thread_.join();
  joined_ = true;
}

void Worker::onAsync(uv_async_t* a) { static_cast<Worker*>(a->data)->processMailbox(); }

void Worker::processMailbox() {
  std::shared_ptr<const Snapshot> snap;
  std::vector<std::shared_ptr<BackendState>> down;
  bool drain, stop, hot_keys, hot_sets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snap = std::move(pending_snapshot_);
    down.swap(pending_down_);
    drain = pending_drain_;
    stop = pending_stop_;
    hot_keys = pending_hot_keys_;
    hot_sets = pending_hot_sets_;
    pending_drain_ = false;
    pending_hot_keys_ = false;
    pending_hot_sets_ = false;
  }
  if (stopping_) return;
  if (stop) {
    shutdownLoop();
    return;
  }
  if (snap) {
    env_.setSnapshot(std::move(snap));
    access_log_->setSink(env_.snapshot()->access_log);
    std::string error;
    if (!env_.draining() && !reconcileListeners(&error))
      LB_ERROR("worker %u: %s (listener left closed)", env_.index(), error.c_str());
  }
  // Clusters of older snapshots that requests still hold count into the same state (it is
  // kept by name), so the newest snapshot's clusters are all there is to ask.
  if (hot_keys && env_.snapshot()) {
    for (const ClusterSnapshot& c : env_.snapshot()->clusters)
      if (c.state) c.state->hot_keys.handOver(env_.index());
  }
  // After the snapshot above: a cluster new in it has its state, and so its hot set, now.
  if (hot_sets && env_.snapshot()) {
    for (const ClusterSnapshot& c : env_.snapshot()->clusters)
      if (c.state) c.state->hot_keys.adoptHotSet(env_.index());
  }
  for (const auto& b : down)
    env_.sessions().forEach([&b](Session* s) { s->backendDown(*b); });   // may unlink s
  if (drain && !env_.draining()) {
    env_.beginDrain();
    std::vector<std::unique_ptr<Listener>> closing = std::move(listeners_);
    listeners_.clear();
    publishListeningFds();
    for (auto& l : closing) l.release()->close();
    // drain() may close and unlink s; a TCP session has no request boundary to stop at and
    // runs on until it ends or the drain deadline stops the worker.
    env_.sessions().forEach([](Session* s) { s->drain(); });
  }
}

bool Worker::reconcileListeners(std::string* error) {
  const auto& ls = env_.snapshot()->listeners;
  std::vector<std::unique_ptr<Listener>> kept;
  std::vector<bool> have(ls.size(), false);
  // Keep a listener whose name, address and protocol are unchanged (its socket and queued
  // connections survive a reload); close the others.
  for (auto& l : listeners_) {
    bool keep = false;
    // Several may match one entry: a worker given more than one inherited socket of an
    // address keeps them all (closing one would reset the connections queued on it).
    for (uint32_t i = 0; i < ls.size(); ++i) {
      if (ls[i].config->name != l->name() || ls[i].config->listen != l->listen() ||
          ls[i].config->protocol != l->protocol())
        continue;
      l->setIndex(i);
      have[i] = true;
      keep = true;
      break;
    }
    if (keep) kept.push_back(std::move(l));
  }
  // The dropped ones leave the published set before they close.
  std::vector<std::unique_ptr<Listener>> dropped = std::move(listeners_);
  listeners_ = std::move(kept);
  publishListeningFds();
  for (auto& l : dropped)
    if (l != nullptr) l.release()->close();
  bool ok = true;
  for (uint32_t i = 0; i < ls.size(); ++i) {
    if (have[i]) continue;
    std::string e;
    // Sockets handed over by an upgrade or by systemd (lb/net/inherited_sockets.h) are taken
    // rather than bound; -1: bind one.
    std::vector<int> fds = takeInheritedSockets(
        reinterpret_cast<const sockaddr*>(&ls[i].listen_address), ls[i].listen_address_len,
        env_.index(), worker_count_);
    if (fds.empty()) fds.push_back(-1);
    Listener* l = nullptr;
    for (int fd : fds) {
      if (Listener* one = Listener::open(env_, ls[i], i, fd, &e); one != nullptr) {
        listeners_.emplace_back(one);
        l = one;
      }
    }
    if (l == nullptr) {
      if (ok) *error = e;
      ok = false;
      continue;
    }
    if (env_.index() == 0) LB_INFO("listener %s listening on %s", ls[i].config->name.c_str(),
                             ls[i].config->listen.c_str());
  }
  publishListeningFds();
  return ok;
}

void Worker::publishListeningFds() {
  std::lock_guard<std::mutex> lock(fds_mu_);
  listening_fds_.clear();
  for (auto& l : listeners_) listening_fds_.push_back(l->fd());
}

void Worker::dupListeningSockets(std::vector<int>* out) {
  std::lock_guard<std::mutex> lock(fds_mu_);
  for (int fd : listening_fds_) {
    int copy = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (copy >= 0) out->push_back(copy);
  }
}

void Worker::shutdownLoop() {
  stopping_ = true;
  std::vector<std::unique_ptr<Listener>> closing = std::move(listeners_);
  listeners_.clear();
  publishListeningFds();
  for (auto& l : closing) l.release()->close();
  env_.upstreams().closeAll();
  env_.sessions().forEach([](Session* s) { s->abort(); });   // abort() may unlink s
  env_.closeServices();
  access_log_->close();   // after the sessions: their last lines are in the buffer
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
}

}  // namespace lb
