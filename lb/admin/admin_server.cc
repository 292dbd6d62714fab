#include "lb/admin/admin_server.h"

#include "lb/admin/hotkeys_route.h"
#include "lb/admin/routes.h"
#include "lb/core/log.h"

namespace lb {

namespace {

AdminResponse text(int status, std::string body) {
  AdminResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

}  // namespace

Admin::Admin(AdminHooks hooks)
    : hooks_(std::move(hooks)), metrics_(hooks_.snapshot, wallClockSeconds()) {}

AdminResponse Admin::handle(const AdminRequest& req) {
  if (req.path == "/metrics") {
    AdminResponse r;
    r.content_type = kMetricsContentType;
    r.body = metrics_.render();
    return r;
  }
  if (req.path == "/ready") {
    // Load balancers in front of lb poll this: 503 while draining takes lb out of rotation
    // before its listeners close.
    const bool draining = hooks_.draining && hooks_.draining();
    if (draining) return text(503, "draining\n");
    // A membership cluster with no backend yet (etcd has not answered, and neither the state
    // file nor the file gave it any) would answer every request with an error.
    if (auto snap = hooks_.snapshot ? hooks_.snapshot() : nullptr) {
      std::string waiting;
      for (const ClusterSnapshot& c : snap->clusters)
        if (c.config->membership && c.backends.empty())
          waiting += (waiting.empty() ? "" : ", ") + ("'" + c.config->name + "'");
      if (!waiting.empty())
        return text(503, "no membership yet: cluster " + waiting + " (etcd has not answered)\n");
    }
    return text(200, "ready\n");
  }
  if (req.path == "/backends" || req.path == "/ring" || req.path == "/hotkeys") {
    auto snap = hooks_.snapshot ? hooks_.snapshot() : nullptr;
    if (!snap) return text(503, "no configuration loaded\n");
    if (req.path == "/hotkeys") return hotKeysResponse(*snap, req.query);
    return req.path == "/backends" ? backendsResponse(*snap) : ringResponse(*snap, req.query);
  }
  return text(404,
              "not found; try /metrics /ready /backends /ring?cluster=C&key=K "
              "/hotkeys?cluster=C\n");
}

Admin* startAdmin(uv_loop_t* loop, const std::string& listen, AdminHooks hooks,
                  std::string* error) {
  auto* admin = new Admin(std::move(hooks));
  admin->server_ = startAdminHttp(
      loop, listen, [admin](const AdminRequest& r) { return admin->handle(r); },
      [admin] { delete admin; }, error);
  if (admin->server_ == nullptr) {
    delete admin;
    return nullptr;
  }
  // The bound port, not the configured one: with port 0, tests read it from this line.
  LB_INFO("admin listening on %s", admin->server_->address().c_str());
  return admin;
}

int dupAdminSocket(Admin* admin) {
  return admin != nullptr ? admin->server_->dupListeningSocket() : -1;
}

size_t adminConnections(Admin* admin) {
  return admin != nullptr ? admin->server_->connectionCount() : 0;
}

void stopAdminAccepting(Admin* admin) {
  if (admin != nullptr) admin->server_->stopAccepting();
}

void stopAdmin(Admin* admin) {
  if (admin != nullptr) admin->server_->stop();
}

void noteReload(Admin* admin, bool ok) {
  if (admin != nullptr) admin->metrics().noteReload(ok, wallClockSeconds());
}

void noteDnsResolutions(Admin* admin, uint64_t ok, uint64_t changed, uint64_t failed) {
  if (admin != nullptr) admin->metrics().noteDnsResolutions(ok, changed, failed);
}

}  // namespace lb
