// Who listens on a TCP address: the process holding a listening socket there, found the way
// `ss -ltnp` finds it (the socket's inode in /proc/net/tcp or tcp6, then the /proc/PID/fd
// entry that links to it). A second lb started by hand on a running lb's ports would share
// them through SO_REUSEPORT without a word; naming the holder lets it refuse instead.
#pragma once

#include <sys/socket.h>

#include <string>

namespace lb {

struct PortHolder {
  int pid = 0;          // 0: not found (another user's process, or it is gone)
  std::string name;     // /proc/PID/comm
};

// The process that listens on `addr` (its port, at that address or the wildcard of its
// family). Main thread; reads /proc, so it is for refusals, not for a request path.
PortHolder portHolder(const sockaddr* addr);

// Whether a process other than this one listens on `addr`: a bind without SO_REUSEPORT fails
// where any socket listens there, even one lb's own SO_REUSEPORT group would share. True with
// *holder set (its pid 0 when it cannot be named); false when the address is free or this
// process holds it.
bool heldByAnother(const sockaddr* addr, socklen_t len, PortHolder* holder);

}  // namespace lb
