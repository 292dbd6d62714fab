// A listening TCP socket of the test's own on 127.0.0.1, for tests of code that is handed
// listening sockets (inherited ones, the upgrade's hand-over).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

namespace lb::test {

// Listens on 127.0.0.1:port (0: any free one), joined to the port's SO_REUSEPORT group;
// *bound receives its address. -1 when it cannot.
inline int listeningSocket(uint16_t port, sockaddr_in* bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 8) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(bound), &len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The socket's inode: two fds with the same one are the same kernel socket.
inline ino_t socketInode(int fd) {
  struct stat st{};
  fstat(fd, &st);
  return st.st_ino;
}

}  // namespace lb::test
