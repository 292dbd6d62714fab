// The Admin object behind lb/admin/admin.h's entry points: the admin HTTP server, the metrics it
// serves, and the routes. Exposed here (not in admin.h) for tests that need the bound port.
#pragma once

#include <uv.h>

#include <string>

#include "lb/admin/admin.h"
#include "lb/admin/admin_http.h"
#include "lb/admin/metrics.h"

namespace lb {

// Main thread only. Created by startAdmin, freed after stopAdmin's last close callback.
class Admin {
 public:
  Admin(const Admin&) = delete;
  Admin& operator=(const Admin&) = delete;

  // GET /metrics, /ready, /backends, /ring; 404 for any other path.
  AdminResponse handle(const AdminRequest& request);
  Metrics& metrics() { return metrics_; }
  int port() const { return server_->port(); }

 private:
  friend Admin* startAdmin(uv_loop_t*, const std::string&, AdminHooks, std::string*);
  friend void stopAdmin(Admin*);
  friend void stopAdminAccepting(Admin*);
  friend int dupAdminSocket(Admin*);
  friend size_t adminConnections(Admin*);
  explicit Admin(AdminHooks hooks);
  ~Admin() = default;

  AdminHooks hooks_;
  Metrics metrics_;
  HttpServer* server_ = nullptr;   // frees itself; its on_closed deletes this
};

}  // namespace lb
