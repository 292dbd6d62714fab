#include "lb/upgrade/upgrade_channel.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lb/net/inherited_sockets.h"

namespace lb {

namespace {

// SCM_MAX_FD is 253; a round number under it.
constexpr size_t kFdsPerMessage = 200;
// The largest message: the health carry of a few thousand down backends.
constexpr size_t kMaxMessage = 1 << 20;
// How long either side waits for the other inside one exchange (both are local processes:
// only a stopped or wedged one makes this matter).
constexpr int kExchangeSeconds = 10;

void setTimeouts(int fd) {
  timeval tv{kExchangeSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int buf = static_cast<int>(kMaxMessage) + 4096;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
}

bool sendMessage(int conn, const std::string& text, const int* fds, size_t nfds,
                 std::string* error) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * (nfds == 0 ? 1 : nfds)), 0);
  if (nfds > 0) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  ssize_t n;
  do {
    n = sendmsg(conn, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(text.size())) {
    *error = std::string("hand-over: send: ") + (n < 0 ? strerror(errno) : "short write");
    return false;
  }
  return true;
}

// One message; its fds appended to *fds (close-on-exec). False at EOF or on an error.
bool recvMessage(int conn, std::string* text, std::vector<int>* fds, std::string* error) {
  text->assign(kMaxMessage, '\0');
  iovec iov{text->data(), text->size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kFdsPerMessage), 0);
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n;
  do {
    n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    *error = n == 0 ? "hand-over: the running lb closed the channel"
                    : std::string("hand-over: receive: ") + strerror(errno);
    return false;
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds->push_back(fd);
    }
  }
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    *error = "hand-over: a message did not fit";
    return false;
  }
  text->resize(static_cast<size_t>(n));
  return true;
}

nlohmann::json carryJson(const HealthCarry& h) {
  return {{"cluster", h.cluster},          {"backend", h.backend},
          {"status", healthStatusName(h.status)}, {"checks_down", h.checks_down},
          {"ejected_left_ms", h.ejected_left_ms}, {"ejection_ms", h.ejection_ms},
          {"repeats", h.repeats},          {"reason", h.reason}};
}

HealthCarry carryFrom(const nlohmann::json& j) {
  HealthCarry h;
  h.cluster = j.at("cluster").get<std::string>();
  h.backend = j.at("backend").get<std::string>();
  h.status = j.at("status").get<std::string>() == "ejected" ? HealthStatus::kEjected
                                                            : HealthStatus::kDown;
  h.checks_down = j.at("checks_down").get<bool>();
  h.ejected_left_ms = j.at("ejected_left_ms").get<uint64_t>();
  h.ejection_ms = j.at("ejection_ms").get<uint64_t>();
  h.repeats = j.at("repeats").get<uint32_t>();
  h.reason = j.at("reason").get<std::string>();
  return h;
}

}  // namespace

std::string upgradeRuntimeDir(const std::function<const char*(const char*)>& getenv_fn) {
  for (const char* name : {"LB_RUNTIME_DIR", "RUNTIME_DIRECTORY", "XDG_RUNTIME_DIR"}) {
    const char* v = getenv_fn(name);
    // RUNTIME_DIRECTORY may list several, colon-separated: the first is lb's.
    if (v != nullptr && v[0] == '/') return std::string(v).substr(0, std::string(v).find(':'));
  }
  return "/tmp";
}

std::string upgradeDirFor(pid_t pid, const std::string& runtime_dir) {
  return runtime_dir + "/lb-upgrade." + std::to_string(pid);
}

bool prepareUpgradeDir(const std::string& dir, std::string* error) {
  if (mkdir(dir.c_str(), 0700) == 0) return true;
  if (errno != EEXIST) {
    *error = "cannot create " + dir + ": " + strerror(errno);
    return false;
  }
  struct stat st{};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) != 0) {
    *error = dir + " exists and is not a directory of this user with mode 0700: refusing it";
    return false;
  }
  return true;
}

void writeUpgradeResult(const std::string& dir, const std::string& text) {
  const std::string tmp = dir + "/result.tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  const std::string line = text + "\n";
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (ok) rename(tmp.c_str(), (dir + "/result").c_str());
}

int listenHandover(const std::string& path, std::string* error) {
  sockaddr_un sun{};
  if (path.size() >= sizeof sun.sun_path) {
    *error = "hand-over socket path too long (" + std::to_string(path.size()) + " bytes, limit " +
             std::to_string(sizeof sun.sun_path - 1) + "): " + path;
    return -1;
  }
  sun.sun_family = AF_UNIX;
  memcpy(sun.sun_path, path.c_str(), path.size() + 1);
  unlink(path.c_str());
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sun), sizeof sun) != 0 ||
      chmod(path.c_str(), 0600) != 0 || listen(fd, 4) != 0) {
    *error = "hand-over socket " + path + ": " + strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

bool peerIsChild(int conn, pid_t child, std::string* who) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    *who = "an unknown peer";
    return false;
  }
  *who = "pid " + std::to_string(cred.pid) + " (uid " + std::to_string(cred.uid) + ")";
  return cred.pid == child && cred.uid == geteuid();
}

bool sendHandover(int conn, const std::vector<int>& listen_fds, int admin_fd,
                  uint64_t generation, const std::vector<HealthCarry>& health,
                  std::string* error) {
  int flags = fcntl(conn, F_GETFL);
  fcntl(conn, F_SETFL, flags & ~O_NONBLOCK);
  setTimeouts(conn);
  std::vector<int> all = listen_fds;
  if (admin_fd >= 0) all.push_back(admin_fd);
  for (size_t at = 0; at < all.size(); at += kFdsPerMessage) {
    const size_t n = std::min(kFdsPerMessage, all.size() - at);
    const long admin = admin_fd >= 0 && all.size() - 1 >= at && all.size() - 1 < at + n
                           ? static_cast<long>(all.size() - 1 - at)
                           : -1;
    nlohmann::json m = {{"sockets", n}, {"admin", admin}};
    if (!sendMessage(conn, m.dump(), all.data() + at, n, error)) return false;
  }
  nlohmann::json h = nlohmann::json::array();
  for (const HealthCarry& c : health) h.push_back(carryJson(c));
  nlohmann::json last = {{"generation", generation}, {"from", getpid()}, {"health", h}};
  const std::string text = last.dump();
  if (text.size() > kMaxMessage) {
    *error = "hand-over: the health view is " + std::to_string(text.size()) +
             " bytes, over the channel's limit of " + std::to_string(kMaxMessage);
    return false;
  }
  return sendMessage(conn, text, nullptr, 0, error);
}

HandoverReply readHandoverReply(int conn) {
  HandoverReply r;
  char buf[4096];
  ssize_t n;
  do {
    n = recv(conn, buf, sizeof buf, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return r;   // closed (or nothing: treated as closed by the caller's poll)
  auto j = nlohmann::json::parse(std::string_view(buf, static_cast<size_t>(n)), nullptr, false);
  if (j.is_object() && j.contains("ready") && j["ready"].is_number_integer()) {
    r.kind = HandoverReply::Kind::kReady;
    r.pid = j["ready"].get<pid_t>();
  } else if (j.is_object() && j.contains("failed") && j["failed"].is_string()) {
    r.kind = HandoverReply::Kind::kFailed;
    r.why = j["failed"].get<std::string>();
  } else {
    r.kind = HandoverReply::Kind::kFailed;
    r.why = "the new lb sent a message lb does not know";
  }
  return r;
}

bool receiveHandover(const std::string& path, HandoverIn* in, std::string* error) {
  sockaddr_un sun{};
  if (path.size() >= sizeof sun.sun_path) {
    *error = "hand-over socket path too long: " + path;
    return false;
  }
  sun.sun_family = AF_UNIX;
  memcpy(sun.sun_path, path.c_str(), path.size() + 1);
  int conn = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (conn < 0) {
    *error = std::string("hand-over: socket: ") + strerror(errno);
    return false;
  }
  setTimeouts(conn);
  if (connect(conn, reinterpret_cast<sockaddr*>(&sun), sizeof sun) != 0) {
    *error = "hand-over: cannot connect to " + path + ": " + strerror(errno);
    ::close(conn);
    return false;
  }
  in->conn = conn;
  std::string text;
  for (;;) {
    std::vector<int> fds;
    if (!recvMessage(conn, &text, &fds, error)) {
      for (int fd : fds) ::close(fd);
      return false;
    }
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) {
      for (int fd : fds) ::close(fd);
      *error = "hand-over: a message that is not a JSON object";
      return false;
    }
    if (j.contains("sockets")) {
      const long admin = j.value("admin", -1L);
      for (size_t i = 0; i < fds.size(); ++i) {
        const bool ok = static_cast<long>(i) == admin ? addInheritedAdminSocket(fds[i])
                                                       : addInheritedSocket(fds[i]);
        if (ok) ++in->sockets;
      }
      continue;
    }
    for (int fd : fds) ::close(fd);
    if (!j.contains("generation")) {
      *error = "hand-over: a message lb does not know";
      return false;
    }
    try {
      in->generation = j.at("generation").get<uint64_t>();
      in->from = j.at("from").get<pid_t>();
      for (const auto& h : j.at("health")) in->health.push_back(carryFrom(h));
    } catch (const nlohmann::json::exception& e) {
      *error = std::string("hand-over: the last message is malformed: ") + e.what();
      return false;
    }
    return true;
  }
}

namespace {
void say(HandoverIn* in, const nlohmann::json& m) {
  if (in->conn < 0) return;
  std::string error;
  (void)sendMessage(in->conn, m.dump(), nullptr, 0, &error);
  ::close(in->conn);
  in->conn = -1;
}
}  // namespace

void sayReady(HandoverIn* in) { say(in, {{"ready", getpid()}}); }

void sayFailed(HandoverIn* in, const std::string& why) {
  say(in, {{"failed", why.size() > 3000 ? why.substr(0, 3000) + "..." : why}});
}

}  // namespace lb
