// `lb --config FILE`: the process from config load to exit code (lb/app/worker_group.h).
#include <signal.h>
#include <uv.h>

#include <cstdio>

#include "lb/admin/admin.h"
#include "lb/app/dns_refresh.h"
#include "lb/app/hot_key_monitor.h"
#include "lb/app/lifecycle.h"
#include "lb/app/memberships.h"
#include "lb/app/resolver.h"
#include "lb/app/service_notify.h"
#include "lb/app/worker_group.h"
#include "lb/config/config.h"
#include "lb/core/log.h"
#include "lb/health/health_manager.h"
#include "lb/membership/membership_tls.h"
#include "lb/runtime/listener.h"

namespace lb {

int runServer(const std::string& config_path) {
  // Backend host names resolve here, before any worker starts; one that does not is a config
  // error like any other.
  BlockingResolver resolver;
  auto loaded = loadConfigFile(config_path, &resolver);
  Errors warnings;
  Errors errors = loaded.ok() ? checkServes(loaded.value(), &warnings) : loaded.errors();
  for (const auto& w : warnings) fprintf(stderr, "%s\n", w.format().c_str());
  if (!errors.empty()) {
    for (const auto& e : errors) fprintf(stderr, "%s\n", e.format().c_str());
    return 1;
  }
  Config config = std::move(loaded.value());
  // The state file is written next to where it says; a directory that is missing would fail
  // only at the first apply, long after the operator has looked away.
  if (Errors dirs = checkStateFileDirs(config); !dirs.empty()) {
    for (const auto& e : dirs) fprintf(stderr, "%s\n", e.format().c_str());
    return 1;
  }
  // A membership's CA or client certificate that does not load is the config's mistake, not
  // etcd's: refused here with its position, as a cluster's own tls files are.
  if (Errors tls = checkMembershipTls(config); !tls.empty()) {
    for (const auto& e : tls) fprintf(stderr, "%s\n", e.format().c_str());
    return 1;
  }
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
    for (const auto& e : snap.errors()) fprintf(stderr, "%s\n", e.format().c_str());
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
    if (!probeBind(ls, &why))
      held.push_back({snap.value()->config.file, ls.config->pos,
                      "listeners." + ls.config->name + ".listen", why});
  }
  for (const auto& e : held) LB_ERROR("%s", e.format().c_str());
  if (!held.empty() || !server.start(snap.value(), &error)) {
    if (!error.empty()) LB_ERROR("%s", error.c_str());
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
  lifecycle.setHealth(health);

  AdminHooks hooks;
  hooks.snapshot = [&server] { return server.snapshot(); };
  hooks.draining = [&server] { return server.draining(); };
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
  // Every listener is bound (WorkerGroup::start returns after the workers bound theirs) and the
  // admin socket listens: only now may systemd count lb as started.
  notifyReady(1);
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
