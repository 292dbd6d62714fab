#include "lb/net/port_holder.h"

#include <dirent.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lb {

namespace {

// The inode of a listening socket on `addr`'s port in /proc/net/tcp (or tcp6), at that
// address or the wildcard; 0 when none. A line: "sl local rem st ... uid timeout inode",
// local as HEXADDR:HEXPORT with the address as the kernel prints its 32-bit words.
unsigned long listeningInode(const sockaddr* addr) {
  const bool v6 = addr->sa_family == AF_INET6;
  const uint16_t port = v6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(addr)->sin6_port)
                           : ntohs(reinterpret_cast<const sockaddr_in*>(addr)->sin_port);
  char own[33] = "";
  if (!v6)
    snprintf(own, sizeof own, "%08X", reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr);
  std::ifstream in(v6 ? "/proc/net/tcp6" : "/proc/net/tcp");
  std::string line;
  std::getline(in, line);   // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout;
    unsigned long inode = 0;
    if (!(fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode))
      continue;
    const size_t colon = local.find(':');
    if (state != "0A" || colon == std::string::npos) continue;   // 0A: LISTEN
    if (strtoul(local.c_str() + colon + 1, nullptr, 16) != port) continue;
    const std::string host = local.substr(0, colon);
    if (!v6 && host != own && host != "00000000") continue;
    return inode;
  }
  return 0;
}

}  // namespace

PortHolder portHolder(const sockaddr* addr) {
  PortHolder holder;
  const unsigned long inode = listeningInode(addr);
  if (inode == 0) return holder;
  char want[64];
  snprintf(want, sizeof want, "socket:[%lu]", inode);
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return holder;
  while (const dirent* p = readdir(proc)) {
    const int pid = atoi(p->d_name);
    if (pid <= 0) continue;
    const std::string fds = std::string("/proc/") + p->d_name + "/fd";
    DIR* dir = opendir(fds.c_str());
    if (dir == nullptr) continue;   // another user's, or gone
    while (const dirent* f = readdir(dir)) {
      char link[64];
      const std::string path = fds + "/" + f->d_name;
      const ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
      if (n <= 0) continue;
      link[n] = '\0';
      if (strcmp(link, want) != 0) continue;
      holder.pid = pid;
      std::ifstream comm(std::string("/proc/") + p->d_name + "/comm");
      std::getline(comm, holder.name);
      break;
    }
    closedir(dir);
    if (holder.pid != 0) break;
  }
  closedir(proc);
  return holder;
}

bool heldByAnother(const sockaddr* addr, socklen_t len, PortHolder* holder) {
  const int fd = ::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  // SO_REUSEADDR: a port whose last connections wait in TIME_WAIT is free; no SO_REUSEPORT,
  // so that a socket of another process's reuseport group conflicts.
  const bool free = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
                    ::bind(fd, addr, len) == 0;
  const int err = errno;
  ::close(fd);
  if (free || err != EADDRINUSE) return false;
  *holder = portHolder(addr);
  return holder->pid != getpid();
}

}  // namespace lb
