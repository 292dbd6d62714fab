#include "lb/server.h"

#include <signal.h>
#include <uv.h>

#include <thread>

#include "lb/admin.h"
#include "lb/config.h"
#include "lb/log.h"

namespace lb {

unsigned resolveWorkerCount(uint32_t configured) {
  if (configured > 0) return configured;
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

Server::Server(unsigned workers) : registry_(workers) {
  for (unsigned i = 0; i < workers; ++i) workers_.push_back(std::make_unique<Worker>(i, workers));
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

void Server::stop() {
  for (auto& w : workers_) w->stop();
}

namespace {

struct MainLoop {
  uv_loop_t loop;
  uv_signal_t sigint, sigterm;
  Server* server = nullptr;
  Admin* admin = nullptr;
};

void onStopSignal(uv_signal_t* s, int signum) {
  auto* m = static_cast<MainLoop*>(s->data);
  LB_INFO("signal %d: stopping", signum);
  stopAdmin(m->admin);
  m->admin = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&m->sigint), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&m->sigterm), nullptr);
}

}  // namespace

int runServer(const std::string& config_path) {
  auto loaded = loadConfigFile(config_path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors()) fprintf(stderr, "%s\n", e.format().c_str());
    return 1;
  }
  Config config = std::move(loaded.value());
  setLogLevel(config.log_level);
  signal(SIGPIPE, SIG_IGN);
  const unsigned workers = resolveWorkerCount(config.workers);
  Server server(workers);
  const std::string admin_listen = config.admin_listen;
  auto snap = buildSnapshot(std::move(config), server.registry(), 1);
  if (!snap.ok()) {
    for (const auto& e : snap.errors()) fprintf(stderr, "%s\n", e.format().c_str());
    return 1;
  }
  std::string error;
  if (!server.start(snap.value(), &error)) {
    LB_ERROR("%s", error.c_str());
    return 1;
  }
  LB_INFO("lb %s: %u worker%s", LB_VERSION, workers, workers == 1 ? "" : "s");

  MainLoop m;
  uv_loop_init(&m.loop);
  m.server = &server;
  uv_signal_init(&m.loop, &m.sigint);
  uv_signal_init(&m.loop, &m.sigterm);
  m.sigint.data = m.sigterm.data = &m;
  uv_signal_start(&m.sigint, onStopSignal, SIGINT);
  uv_signal_start(&m.sigterm, onStopSignal, SIGTERM);
  AdminHooks hooks;
  hooks.snapshot = [&server] { return server.snapshot(); };
  hooks.draining = [&server] { return server.draining(); };
  if (!admin_listen.empty()) {
    m.admin = startAdmin(&m.loop, admin_listen, std::move(hooks), &error);
    if (m.admin == nullptr) LB_WARN("admin: %s (running without it)", error.c_str());
  }
  uv_run(&m.loop, UV_RUN_DEFAULT);
  server.stop();
  for (unsigned i = 0; i < workers; ++i)
    LB_INFO("worker %u accepted %llu connections", i,
            static_cast<unsigned long long>(server.worker(i).accepted()));
  uv_loop_close(&m.loop);
  return 0;
}

}  // namespace lb
