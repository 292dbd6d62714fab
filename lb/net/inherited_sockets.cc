#include "lb/net/inherited_sockets.h"

#include <netinet/in.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <utility>

#include "lb/core/address.h"
#include "lb/core/log.h"

namespace lb {

namespace {

struct Inherited {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::vector<int> fds;   // the registry's own, until release
  bool taken = false;
};

std::mutex mu;
std::vector<Inherited> inherited;   // guarded by mu

// getsockname of a listening TCP socket; false when `fd` is not one.
bool listeningAddress(int fd, sockaddr_storage* addr, socklen_t* len) {
  int type = 0, listening = 0;
  socklen_t olen = sizeof type;
  *len = sizeof *addr;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) != 0 || type != SOCK_STREAM) return false;
  olen = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &olen) != 0 || listening == 0)
    return false;
  return getsockname(fd, reinterpret_cast<sockaddr*>(addr), len) == 0 &&
         (addr->ss_family == AF_INET || addr->ss_family == AF_INET6);
}

Inherited* find(const sockaddr* addr, socklen_t len) {
  sockaddr_storage want{};
  memcpy(&want, addr, len < sizeof want ? len : sizeof want);
  for (Inherited& i : inherited)
    if (sameAddress(i.addr, i.len, want, len)) return &i;
  return nullptr;
}

}  // namespace

namespace {
// The address of `fd` when it is a listening TCP socket; otherwise `fd` is closed and false.
bool keepListening(int fd, sockaddr_storage* addr, socklen_t* len) {
  if (listeningAddress(fd, addr, len)) return true;
  ::close(fd);
  return false;
}
}  // namespace

bool addInheritedSocket(int fd) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!keepListening(fd, &addr, &len)) return false;
  std::lock_guard<std::mutex> lock(mu);
  Inherited* i = find(reinterpret_cast<const sockaddr*>(&addr), len);
  if (i == nullptr) {
    i = &inherited.emplace_back();
    i->addr = addr;
    i->len = len;
  }
  i->fds.push_back(fd);
  return true;
}

bool addInheritedAdminSocket(int fd) {
  // Kept under its address like the listeners' sockets: an admin.listen the new config moved
  // elsewhere leaves it untaken, and releaseInheritedSockets closes and names it.
  return addInheritedSocket(fd);
}

int takeInheritedAdminSocket(const sockaddr* addr, socklen_t len) {
  std::lock_guard<std::mutex> lock(mu);
  Inherited* i = find(addr, len);
  if (i == nullptr || i->fds.empty()) return -1;
  i->taken = true;
  return fcntl(i->fds.front(), F_DUPFD_CLOEXEC, 0);
}

bool haveInheritedSocket(const sockaddr* addr, socklen_t len) {
  std::lock_guard<std::mutex> lock(mu);
  const Inherited* i = find(addr, len);
  return i != nullptr && !i->fds.empty();
}

std::vector<int> takeInheritedSockets(const sockaddr* addr, socklen_t len, unsigned worker,
                                      unsigned workers) {
  std::vector<int> out;
  std::lock_guard<std::mutex> lock(mu);
  Inherited* i = find(addr, len);
  if (i == nullptr || i->fds.empty() || workers == 0) return out;
  i->taken = true;
  // Dups, so that a worker's close never closes a socket another worker still needs, and the
  // registry can close its own set whatever the workers took.
  for (size_t k = worker; k < i->fds.size(); k += workers) {
    int fd = fcntl(i->fds[k], F_DUPFD_CLOEXEC, 0);
    if (fd >= 0) out.push_back(fd);
  }
  if (out.empty()) {
    int fd = fcntl(i->fds[worker % i->fds.size()], F_DUPFD_CLOEXEC, 0);
    if (fd >= 0) out.push_back(fd);
  }
  return out;
}

void releaseInheritedSockets() {
  std::lock_guard<std::mutex> lock(mu);
  for (Inherited& i : inherited) {
    if (!i.taken && !i.fds.empty())
      LB_WARN("inherited socket %s: no listener of this config listens there; closed (the "
              "connections queued on it are reset)",
              formatAddress(reinterpret_cast<const sockaddr*>(&i.addr)).c_str());
    for (int fd : i.fds) ::close(fd);
  }
  inherited.clear();
}

std::vector<std::string> inheritedAddresses() {
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::string> out;
  for (const Inherited& i : inherited)
    out.push_back(formatAddress(reinterpret_cast<const sockaddr*>(&i.addr)));
  return out;
}

}  // namespace lb
