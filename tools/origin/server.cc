// lb-origin's listeners and workers. The main thread binds all sockets (so the port, even an
// ephemeral one, is known and accepting before the "listening on" line is printed) and then
// only waits for signals; each worker thread accepts on its own socket and never shares a
// connection with another.
#include "tools/origin/server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "tools/origin/conn.h"

namespace lb::origin {
namespace {

constexpr int kBacklog = 1024;

struct Worker {
  uv_loop_t loop;
  uv_tcp_t listener;
  uv_async_t stop;
  std::set<OriginConn*> live;
  OriginShared* shared = nullptr;
  std::thread thread;
};

void onConnection(uv_stream_t* server, int status) {
  auto* w = static_cast<Worker*>(server->data);
  if (status < 0) return;   // EMFILE and friends: the next accept may do better
  OriginConn::accept(server, w->shared, &w->live);
}

// Runs on the worker's loop: closes the listener, every connection, and itself; uv_run then
// returns because no handle is left.
void onStop(uv_async_t* a) {
  auto* w = static_cast<Worker*>(a->data);
  uv_close(reinterpret_cast<uv_handle_t*>(&w->listener), nullptr);
  std::vector<OriginConn*> conns(w->live.begin(), w->live.end());
  for (OriginConn* c : conns) c->close();
  uv_close(reinterpret_cast<uv_handle_t*>(&w->stop), nullptr);
}

bool parseListen(const std::string& listen, sockaddr_storage* out, std::string* host) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  std::string h = listen.substr(0, colon);
  std::string port_text = listen.substr(colon + 1);
  char* end = nullptr;
  long port = strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535) return false;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
    if (uv_ip6_addr(h.c_str(), static_cast<int>(port), reinterpret_cast<sockaddr_in6*>(out)) != 0)
      return false;
    *host = "[" + h + "]";
    return true;
  }
  if (uv_ip4_addr(h.c_str(), static_cast<int>(port), reinterpret_cast<sockaddr_in*>(out)) != 0)
    return false;
  *host = h;
  return true;
}

// A bound, listening socket; port 0 in addr means "any", and addr receives the real port.
int bindSocket(sockaddr_storage* addr, bool reuseport) {
  int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  socklen_t len = addr->ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (bind(fd, reinterpret_cast<sockaddr*>(addr), len) != 0 || listen(fd, kBacklog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(addr), &len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

uint16_t portOf(const sockaddr_storage& a) {
  return ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(a).sin6_port
                                       : reinterpret_cast<const sockaddr_in&>(a).sin_port);
}

struct SignalState {
  std::vector<std::unique_ptr<Worker>>* workers;
  uv_signal_t term, intr;
};

void onSignal(uv_signal_t* s, int) {
  auto* st = static_cast<SignalState*>(s->data);
  for (auto& w : *st->workers) uv_async_send(&w->stop);
  uv_close(reinterpret_cast<uv_handle_t*>(&st->term), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&st->intr), nullptr);
}

}  // namespace

int runOrigin(const OriginOptions& options) {
  signal(SIGPIPE, SIG_IGN);   // a peer that vanished is an error return, not a death
  sockaddr_storage addr{};
  std::string host;
  if (!parseListen(options.listen, &addr, &host)) {
    fprintf(stderr, "lb-origin: bad --listen '%s' (want HOST:PORT or [V6]:PORT)\n",
            options.listen.c_str());
    return 1;
  }
  OriginShared shared;
  shared.name = options.name;
  unsigned n = options.workers == 0 ? 1 : options.workers;
  std::vector<int> fds;
  for (unsigned i = 0; i < n; ++i) {
    int fd = bindSocket(&addr, n > 1);   // after the first, addr holds the real port
    if (fd < 0) {
      fprintf(stderr, "lb-origin: cannot listen on %s: %s\n", options.listen.c_str(),
              strerror(errno));
      for (int f : fds) close(f);
      return 1;
    }
    fds.push_back(fd);
  }

  std::vector<std::unique_ptr<Worker>> workers;
  for (int fd : fds) {
    auto w = std::make_unique<Worker>();
    w->shared = &shared;
    uv_loop_init(&w->loop);
    uv_tcp_init(&w->loop, &w->listener);
    w->listener.data = w.get();
    uv_async_init(&w->loop, &w->stop, onStop);
    w->stop.data = w.get();
    if (uv_tcp_open(&w->listener, fd) != 0 ||
        uv_listen(reinterpret_cast<uv_stream_t*>(&w->listener), kBacklog, onConnection) != 0) {
      fprintf(stderr, "lb-origin: cannot listen on %s\n", options.listen.c_str());
      return 1;
    }
    workers.push_back(std::move(w));
  }

  uv_loop_t main_loop;
  uv_loop_init(&main_loop);
  SignalState st{&workers, {}, {}};
  uv_signal_init(&main_loop, &st.term);
  uv_signal_init(&main_loop, &st.intr);
  st.term.data = st.intr.data = &st;
  uv_signal_start(&st.term, onSignal, SIGTERM);
  uv_signal_start(&st.intr, onSignal, SIGINT);

  for (auto& w : workers)
    w->thread = std::thread([wp = w.get()] {
      uv_run(&wp->loop, UV_RUN_DEFAULT);
      uv_loop_close(&wp->loop);
    });
  fprintf(stderr, "lb-origin %s listening on %s:%u\n", options.name.c_str(), host.c_str(),
          static_cast<unsigned>(portOf(addr)));
  fflush(stderr);

  uv_run(&main_loop, UV_RUN_DEFAULT);
  for (auto& w : workers) w->thread.join();
  uv_loop_close(&main_loop);
  return 0;
}

}  // namespace lb::origin
