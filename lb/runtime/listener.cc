#include "lb/runtime/listener.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lb/core/log.h"
#include "lb/core/sys_error.h"
#include "lb/net/port_holder.h"
#include "lb/routing/snapshot.h"
#include "lb/runtime/worker_env.h"
#include "lb/tls/tls_transport.h"

namespace lb {

namespace {
constexpr int kBacklog = 511;   // nginx's default; the kernel caps it at somaxconn
}

Listener::Listener(WorkerEnv& env, const ListenerSnapshot& ls, uint32_t index)
    : env_(env),
      name_(ls.config->name),
      listen_(ls.config->listen),
      protocol_(ls.config->protocol),
      index_(index) {}

namespace {

// A socket bound to the listener's address, joined to its SO_REUSEPORT group; -1 with *error
// ("socket: ..." or "cannot bind ADDR: ...").
int bindSocket(const ListenerSnapshot& ls, std::string* error) {
  const sockaddr* addr = reinterpret_cast<const sockaddr*>(&ls.listen_address);
  int fd = ::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + strerror(errno);
    return -1;
  }
  int one = 1;
  // SO_REUSEPORT before bind: each worker's socket joins the same port group.
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
      ::bind(fd, addr, ls.listen_address_len) != 0) {
    *error = "cannot bind " + ls.config->listen + ": " + strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

bool probeBind(const ListenerSnapshot& ls, std::string* error) {
  const sockaddr* addr = reinterpret_cast<const sockaddr*>(&ls.listen_address);
  PortHolder holder;
  int fd = bindSocket(ls, error);
  if (fd < 0) {
    // Name who holds it, as `ss -ltnp` would.
    if (errno == EADDRINUSE && (holder = portHolder(addr)).pid != 0)
      *error += " (held by pid " + std::to_string(holder.pid) + ", " + holder.name + ")";
    return false;
  }
  ::close(fd);   // never listened: no connection was queued on it
  // Bound: but SO_REUSEPORT would share the port with another process's group just as well,
  // a second lb started by hand on a running one's ports. That is refused.
  if (heldByAnother(addr, ls.listen_address_len, &holder)) {
    *error = "cannot bind " + ls.config->listen + ": another process listens on it (" +
             (holder.pid != 0 ? "pid " + std::to_string(holder.pid) + ", " + holder.name
                              : std::string("its owner is not visible to this user")) +
             "); lb does not share a port with a running lb or any other program";
    return false;
  }
  return true;
}

Listener* Listener::open(WorkerEnv& env, const ListenerSnapshot& ls, uint32_t index, int fd,
                         std::string* error) {
  std::string why;
  if (fd < 0) fd = bindSocket(ls, &why);
  if (fd < 0) {
    *error = "listeners." + ls.config->name + ": " + why;
    return nullptr;
  }
  auto* l = new Listener(env, ls, index);
  uv_tcp_init(env.loop(), &l->tcp_);
  l->tcp_.data = l;
  int rc = uv_tcp_open(&l->tcp_, fd);
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&l->tcp_), kBacklog, onConnection);
  if (rc != 0) {
    *error = "listeners." + ls.config->name + ": cannot listen on " + ls.config->listen + ": " +
             sysErrorText(rc);
    l->close();
    return nullptr;
  }
  return l;
}

int Listener::fd() const noexcept {
  uv_os_fd_t fd = -1;
  if (uv_is_closing(reinterpret_cast<const uv_handle_t*>(&tcp_)) ||
      uv_fileno(reinterpret_cast<const uv_handle_t*>(&tcp_), &fd) != 0)
    return -1;
  return fd;
}

void Listener::close() noexcept {
  if (uv_is_closing(reinterpret_cast<uv_handle_t*>(&tcp_))) return;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_),
           [](uv_handle_t* h) { delete static_cast<Listener*>(h->data); });
}

void Listener::onConnection(uv_stream_t* server, int status) {
  auto* l = static_cast<Listener*>(server->data);
  if (status < 0) {
    LB_DEBUG("listener %s: accept: %s", l->name_.c_str(), sysErrorText(status));
    return;
  }
  l->accept();
}

namespace {

// What a TLS listener's accept puts under the new connection (the AcceptTransport its
// protocol's accept hands to Connection::accept), so that no protocol's session knows TLS is
// there.
struct TlsAccept {
  const ListenerSnapshot* listener;
  unsigned worker;
};

Transport* makeTlsTransport(void* ctx, Connection&) noexcept {
  const auto* a = static_cast<const TlsAccept*>(ctx);
  const ListenerSnapshot& ls = *a->listener;
  // The statistics live in the listener's state, which outlives reloads; the transport keeps
  // it alive as long as the connection lasts.
  std::shared_ptr<TlsWorkerStats> stats(ls.state, &ls.state->per_worker[a->worker].tls);
  return TlsTransport::accept(ls.tls, std::move(stats),
                              ls.config->protocol == Protocol::kHttp);
}

}  // namespace

void Listener::accept() noexcept {
  const auto& snap = env_.snapshot();
  if (snap == nullptr || index_ >= snap->listeners.size()) return;
  const ListenerSnapshot& ls = snap->listeners[index_];
  const Admission admission = admitConnection(ls, env_.index());
  const TlsAccept tls{&ls, env_.index()};
  const AcceptTransport transport{makeTlsTransport, const_cast<TlsAccept*>(&tls)};
  env_.protocols()[static_cast<size_t>(protocol_)](env_, reinterpret_cast<uv_stream_t*>(&tcp_),
                                                   ls.tls != nullptr ? &transport : nullptr,
                                                   snap, index_, admission);
}

Admission admitConnection(const ListenerSnapshot& ls, unsigned worker) noexcept {
  ListenerWorkerStats& stats = ls.state->per_worker[worker];
  const int64_t workers = ls.state->workers == 0 ? 1 : ls.state->workers;
  const int64_t share = (int64_t{ls.config->limits.max_connections} + workers - 1) / workers;
  if (stats.connections_active.get() < share) return Admission::kAdmit;
  stats.connections_over_limit.add();
  return Admission::kOverLimit;
}

}  // namespace lb
