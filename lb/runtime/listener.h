// One listening socket of one worker. Every worker binds its own socket to the same address
// with SO_REUSEPORT, so the kernel spreads new connections across workers with no shared
// accept lock. At accept, the listener applies limits.max_connections (the same for every
// protocol) and hands the connection to its protocol's accept function (ProtocolTable), with
// the transport to put under it as an argument (a TLS listener's; none: plain).
#pragma once

#include <uv.h>

#include <string>

#include "lb/config/config.h"
#include "lb/runtime/protocol_table.h"

namespace lb {

class WorkerEnv;
struct ListenerSnapshot;

class Listener {
 public:
  // Loop thread. Listens on env's loop: on `fd`, a socket bound to the listener's address that
  // this process inherited (lb/net/inherited_sockets.h; the listener owns it from here), or
  // when -1 on a socket bound here. nullptr with *error when the address cannot be bound.
  static Listener* open(WorkerEnv& env, const ListenerSnapshot& ls, uint32_t index, int fd,
                        std::string* error);
  ~Listener() = default;   // only from the close callback (owners release(), then close())
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Loop thread. Stops accepting and frees itself after the close callback.
  void close() noexcept;

  const std::string& name() const noexcept { return name_; }
  const std::string& listen() const noexcept { return listen_; }
  Protocol protocol() const noexcept { return protocol_; }
  // The listening socket's fd (-1 once closing).
  int fd() const noexcept;
  // Index of this listener in the worker's current snapshot (updated on every snapshot).
  void setIndex(uint32_t index) noexcept { index_ = index; }

 private:
  Listener(WorkerEnv& env, const ListenerSnapshot& ls, uint32_t index);
  static void onConnection(uv_stream_t* server, int status);
  void accept() noexcept;

  WorkerEnv& env_;
  std::string name_;
  std::string listen_;
  Protocol protocol_;
  uint32_t index_;
  uv_tcp_t tcp_;
};

// Any thread (the main thread before a reload commits). Whether `ls`'s address can be bound
// as Listener::open binds it: a throw-away socket with the same options (SO_REUSEADDR,
// SO_REUSEPORT, so lb's own listeners on that port do not count against it) is bound, never
// listened on (no connection can be queued on it) and closed. False with *error ("cannot bind
// ADDR: reason", naming the holder) when another process holds the port, even one whose
// SO_REUSEPORT group would take lb's sockets in (a second lb started by hand: refused, not
// silently sharing), the address is not this host's, or the port needs a privilege lb lacks.
bool probeBind(const ListenerSnapshot& ls, std::string* error);

// Loop thread of `worker`. limits.max_connections for one new connection on `ls`: each worker
// enforces its share, ceil(max / workers), on the listener's connections open on it (no
// worker asks another: no lock, no shared counter). Past it the connection is counted
// (lb_downstream_connections_over_limit_total) and kOverLimit returned.
Admission admitConnection(const ListenerSnapshot& ls, unsigned worker) noexcept;

}  // namespace lb
