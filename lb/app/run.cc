// `lb --config FILE`: the process from config load to exit code (lb/app/worker_group.h).
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <uv.h>

#include <cstdlib>

#include <cstdio>

#include "lb/admin/admin.h"
#include "lb/app/dns_refresh.h"
#include "lb/app/hot_key_monitor.h"
#include "lb/app/lifecycle.h"
#include "lb/app/memberships.h"
#include "lb/app/resolver.h"
#include "lb/app/service_notify.h"
#include "lb/upgrade/upgrade_channel.h"
#include "lb/admin/process_metrics.h"
#include "lb/net/inherited_sockets.h"
#include "lb/app/worker_group.h"
#include "lb/config/config.h"
#include "lb/core/log.h"
#include "lb/health/health_manager.h"
#include "lb/membership/membership_tls.h"
#include "lb/runtime/listener.h"

namespace lb {

namespace {

// The sockets this process starts with instead of binding: the running lb's, when it started
// this one for an upgrade (lb/upgrade/upgrade_channel.h), else systemd's socket activation
// (sd_listen_fds). False with *error when the hand-over fails: the old lb keeps serving.
bool takeStartSockets(HandoverIn* handover, std::string* error) {
  if (const char* path = getenv(kUpgradeSocketEnv); path != nullptr) {
    const std::string p = path;
    unsetenv(kUpgradeSocketEnv);   // not for a later upgrade's child
    if (!receiveHandover(p, handover, error)) return false;
    setProcessGeneration(handover->generation);
    LB_INFO("upgrade: took %zu listening socket%s from pid %d (generation %llu)",
            handover->sockets, handover->sockets == 1 ? "" : "s", handover->from,
            static_cast<unsigned long long>(handover->generation));
    return true;
  }
  // unset_environment = 1: a later upgrade's child must not take these as its own.
  const int n = sd_listen_fds(1);
  for (int i = 0; i < n; ++i) {
    if (!addInheritedSocket(SD_LISTEN_FDS_START + i))
      LB_WARN("socket activation: fd %d is not a listening TCP socket; closed",
              SD_LISTEN_FDS_START + i);
  }
  if (n > 0) LB_INFO("socket activation: %d listening socket%s from the service manager", n,
                     n == 1 ? "" : "s");
  return true;
}

// Prints `errors` and, for an upgrade, tells the old lb why this one will not serve.
int refuseStart(const Errors& errors, HandoverIn* handover) {
  std::string why;
  for (const auto& e : errors) {
    fprintf(stderr, "%s\n", e.format().c_str());
    if (why.size() < 2000) why += (why.empty() ? "" : "; ") + e.format();
  }
  sayFailed(handover, why);
  return 1;
}

}  // namespace

int runServer(const std::string& config_path) {
  // SIGUSR2's default action would end the process: until the lifecycle takes it, ignored.
  signal(SIGUSR2, SIG_IGN);
  HandoverIn handover;
  std::string handover_error;
  if (!takeStartSockets(&handover, &handover_error)) {
    fprintf(stderr, "%s\n", handover_error.c_str());
    sayFailed(&handover, handover_error);
    return 1;
  }
  // Backend host names resolve here, before any worker starts; one that does not is a config
  // error like any other.
  BlockingResolver resolver;
  auto loaded = loadConfigFile(config_path, &resolver);
  Errors warnings;
  Errors errors = loaded.ok() ? checkServes(loaded.value(), &warnings) : loaded.errors();
  for (const auto& w : warnings) fprintf(stderr, "%s\n", w.format().c_str());
  if (!errors.empty()) return refuseStart(errors, &handover);
  Config config = std::move(loaded.value());
  // The state file is written next to where it says; a directory that is missing would fail
  // only at the first apply, long after the operator has looked away.
  if (Errors dirs = checkStateFileDirs(config); !dirs.empty()) return refuseStart(dirs, &handover);
  // A membership's CA or client certificate that does not load is the config's mistake, not
  // etcd's: refused here with its position, as a cluster's own tls files are.
  if (Errors tls = checkMembershipTls(config); !tls.empty()) return refuseStart(tls, &handover);
  setLogLevel(config.log_level);
  signal(SIGPIPE, SIG_IGN);
  const unsigned workers = resolveWorkerCount(config.workers);
  WorkerGroup server(workers);
  const std::string admin_listen = config.admin_listen;
  uv_loop_t loop;
  uv_loop_init(&loop);
  // Membership clusters read etcd first (at most kStartWait), so that an instance with etcd
  // up starts on the fleet's membership rather than on its file's fallback. No port is open
  // yet; a SIGHUP meanwhile is ignored rather than taken with its default action.
  signal(SIGHUP, SIG_IGN);
  Memberships memberships(&loop, server);
  memberships.startAndWait(config, kStartWait);
  BackendOrigins origins;
  ResolvedHosts hosts = resolver.hosts();
  memberships.initialOverlay(config, origins, hosts);
  auto snap = buildSnapshot(std::move(config), server.registry(), 1, &hosts, &origins);
  if (!snap.ok()) {
    refuseStart(snap.errors(), &handover);
    memberships.stop();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return 1;
  }
  // SIGHUP reload and SIGTERM/SIGINT drain (lb/app/lifecycle.h); the loop ends with the drain.
  // Handlers go in before any port opens, so a signal sent as soon as lb answers is never
  // taken with its default action (SIGHUP would kill the process).
  Lifecycle lifecycle(&loop, server, config_path, 1);
  lifecycle.setMembershipHooks(memberships.hooks());
  lifecycle.start();
  // clusters' resolve_interval
  DnsRefresh dns(&loop, server, [&lifecycle](std::shared_ptr<const Snapshot> s) {
    lifecycle.apply(std::move(s));
  });
  // A port another process listens on is refused by name before any worker binds, a running
  // lb's too: SO_REUSEPORT would have the two share it without a word.
  std::string error;
  Errors held;
  for (const ListenerSnapshot& ls : snap.value()->listeners) {
    std::string why;
    // An inherited socket is this process's: the lb that holds it too is the one it replaces.
    if (haveInheritedSocket(reinterpret_cast<const sockaddr*>(&ls.listen_address),
                            ls.listen_address_len))
      continue;
    if (!probeBind(ls, &why))
      held.push_back({snap.value()->config.file, ls.config->pos,
                      "listeners." + ls.config->name + ".listen", why});
  }
  for (const auto& e : held) LB_ERROR("%s", e.format().c_str());
  if (!held.empty() || !server.start(snap.value(), &error)) {
    if (!error.empty()) LB_ERROR("%s", error.c_str());
    if (!error.empty()) held.push_back({config_path, {}, "", error});
    refuseStart(held, &handover);
    lifecycle.finish();   // stops the membership sources too
    dns.stop();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return 1;
  }
  LB_INFO("lb %s: %u worker%s", LB_VERSION, workers, workers == 1 ? "" : "s");
  memberships.goLive(&lifecycle);

  // Active checks and outlier detection on this loop; a backend its checks take down has the
  // workers end the connections that wait on it.
  HealthHooks health_hooks;
  health_hooks.checked_down = [&server](const std::shared_ptr<BackendState>& b) {
    server.backendDown(b);
  };
  HealthManager* health = HealthManager::create(&loop, std::move(health_hooks));
  health->apply(snap.value());
  // What the lb before this one knew to be down stays down, without a request to find out.
  if (size_t n = health->adopt(handover.health); n > 0)
    LB_INFO("upgrade: %zu backend%s out of rotation as before", n, n == 1 ? "" : "s");
  lifecycle.setHealth(health);

  AdminHooks hooks;
  hooks.snapshot = [&server] { return server.snapshot(); };
  // /ready stays 200 while an upgrade's old process drains: the service is ready.
  hooks.draining = [&server, &lifecycle] { return server.draining() && !lifecycle.upgraded(); };
  if (!admin_listen.empty()) {
    Admin* admin = startAdmin(&loop, admin_listen, std::move(hooks), &error);
    if (admin == nullptr) LB_WARN("admin: %s (running without it)", error.c_str());
    lifecycle.setAdmin(admin);
    dns.setAdmin(admin);
  }
  dns.start();
  // Hot-key detection: the workers' summaries merged once a second into each cluster's hot
  // set (/hotkeys, lb_hotkey_* metrics).
  HotKeyMonitor hot_keys(&loop, server);
  hot_keys.start();
  // Sockets nobody took (a listener the new config dropped) close now.
  releaseInheritedSockets();
  // Every listener is bound (WorkerGroup::start returns after the workers bound theirs) and the
  // admin socket listens: only now may systemd count lb as started, and the lb this one
  // replaces begin its drain.
  if (handover.conn >= 0) {
    sayReady(&handover);
    notifyReadyAsMain(1);
  } else {
    notifyReady(1);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  memberships.stop();
  dns.stop();
  hot_keys.stop();
  uv_run(&loop, UV_RUN_DEFAULT);   // the closes the stops above began
  server.stop();
  for (unsigned i = 0; i < workers; ++i)
    LB_INFO("worker %u accepted %llu connections", i,
            static_cast<unsigned long long>(server.worker(i).accepted()));
  uv_loop_close(&loop);
  return 0;
}

}  // namespace lb
