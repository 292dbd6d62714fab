// What the splice tests share (http_splice_test, http_splice_body_test,
// http_splice_chunked_test): bodies no shifted copy of themselves would match, the kernel's
// count of what lb read through read(2), and a loopback listening socket for the raw origins
// those tests write by hand (origins that cut a body short or answer with exact bytes).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace lb::test {

// n bytes from a xorshift stream: no period a shifted copy would match.
inline std::string noise(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed | 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x >> 56);
  }
  return s;
}

// A field of /proc/PID/io (rchar: bytes read through read(2) and the like, which splice(2)
// does not count), or -1.
inline long long procIo(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  std::string k;
  long long v;
  while (in >> k >> v)
    if (k == field + ":") return v;
  return -1;
}

// A blocking socket listening on 127.0.0.1 at a port the kernel chose (*port), or -1.
inline int listenLoopback(uint16_t* port, int backlog = 16) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

}  // namespace lb::test
