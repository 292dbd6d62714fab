#include "lb/runtime/listener.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lb/core/log.h"
#include "lb/routing/snapshot.h"
#include "lb/runtime/worker.h"

namespace lb {

namespace {
constexpr int kBacklog = 511;   // nginx's default; the kernel caps it at somaxconn
}

Listener::Listener(Worker* worker, const ListenerSnapshot& ls, uint32_t index)
    : worker_(worker),
      name_(ls.config->name),
      listen_(ls.config->listen),
      protocol_(ls.config->protocol),
      index_(index) {}

Listener* Listener::open(Worker* worker, const ListenerSnapshot& ls, uint32_t index,
                         std::string* error) {
  const sockaddr* addr = reinterpret_cast<const sockaddr*>(&ls.listen_address);
  int fd = ::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = "listeners." + ls.config->name + ": socket: " + strerror(errno);
    return nullptr;
  }
  int one = 1;
  // SO_REUSEPORT before bind: each worker's socket joins the same port group.
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
      ::bind(fd, addr, ls.listen_address_len) != 0) {
    *error = "listeners." + ls.config->name + ": cannot bind " + ls.config->listen + ": " +
             strerror(errno);
    ::close(fd);
    return nullptr;
  }
  auto* l = new Listener(worker, ls, index);
  uv_tcp_init(worker->loop(), &l->tcp_);
  l->tcp_.data = l;
  int rc = uv_tcp_open(&l->tcp_, fd);
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&l->tcp_), kBacklog, onConnection);
  if (rc != 0) {
    *error = "listeners." + ls.config->name + ": cannot listen on " + ls.config->listen + ": " +
             uv_strerror(rc);
    l->close();
    return nullptr;
  }
  return l;
}

void Listener::close() noexcept {
  if (uv_is_closing(reinterpret_cast<uv_handle_t*>(&tcp_))) return;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_),
           [](uv_handle_t* h) { delete static_cast<Listener*>(h->data); });
}

void Listener::onConnection(uv_stream_t* server, int status) {
  auto* l = static_cast<Listener*>(server->data);
  if (status < 0) {
    LB_DEBUG("listener %s: accept: %s", l->name_.c_str(), uv_strerror(status));
    return;
  }
  l->accept();
}

void Listener::accept() noexcept {
  const auto& snap = worker_->snapshot();
  if (snap == nullptr || index_ >= snap->listeners.size()) return;
  worker_->protocols()[static_cast<size_t>(protocol_)](*worker_,
                                                   reinterpret_cast<uv_stream_t*>(&tcp_), snap,
                                                   index_);
}

}  // namespace lb
