// Listening sockets this process was given instead of binding them: by the lb it replaces
// (`lb upgrade`, lb/upgrade/upgrade.h, over SCM_RIGHTS) or by systemd's socket activation
// (LISTEN_FDS, conf/systemd/lb.socket). A listener whose address is among them never binds:
// every worker takes a socket of the same kernel queue, so a connection queued while the
// old process hands over, or while systemd restarts lb, is accepted rather than refused.
//
// The old lb holds one socket per worker and listener (SO_REUSEPORT, lb/runtime/listener.h),
// each with its own queue; all of them must stay open here, or the connections queued on a
// closed one are reset. So the sockets of an address are dealt out to the workers in turn
// (worker w takes the k-th when k % workers == w); a worker left without one shares another's
// queue through a dup. nginx passes its listeners to a new master the same way (NGINX
// environment variable), and HAProxy's `expose-fd listeners` hands them over a unix socket.
//
// Filled on the main thread before any worker starts; workers take theirs while they open
// their listeners (a mutex: start-up and reloads only, never a request); release() closes
// what nobody took once every worker runs.
#pragma once

#include <sys/socket.h>

#include <string>
#include <vector>

namespace lb {

// Main thread, before the workers start. Records `fd`, a listening TCP socket, under its own
// address (getsockname); the registry owns it. False (and `fd` closed) when it is not a
// listening TCP socket.
bool addInheritedSocket(int fd);
// Main thread. Records `fd`, the admin server's socket, under its address as above.
bool addInheritedAdminSocket(int fd);
// Main thread. The admin server's socket for `addr` (the caller owns it); -1 when none was
// inherited there (the admin server binds; a moved admin.listen leaves the old one untaken).
int takeInheritedAdminSocket(const sockaddr* addr, socklen_t len);

// Whether sockets were inherited for `addr` (its family, address and port exactly).
bool haveInheritedSocket(const sockaddr* addr, socklen_t len);

// Worker `worker` of `workers`. The sockets for `addr` this worker listens on, as fds the
// caller owns: its share of the inherited ones, or a dup of one when there are fewer than
// workers; empty when none was inherited (the caller binds).
std::vector<int> takeInheritedSockets(const sockaddr* addr, socklen_t len, unsigned worker,
                                      unsigned workers);

// Main thread, once the workers and the admin server listen: closes the registry's own fds,
// and names in the log each address inherited that no listener took (its queued connections
// are lost: the new config dropped that listener).
void releaseInheritedSockets();

// Every inherited address, formatted, for logs and tests.
std::vector<std::string> inheritedAddresses();

}  // namespace lb
