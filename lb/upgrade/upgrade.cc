#include "lb/upgrade/upgrade.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lb/core/log.h"
#include "lb/core/sys_error.h"

extern char** environ;

namespace lb {

namespace {

// The binary installed at this process's path: what `make install` (or a package) put there,
// even though this process still runs the file it replaced.
std::string ownExecutable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<size_t>(n));
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() && path.ends_with(kDeleted))
    path.resize(path.size() - kDeleted.size());
  return path;
}

// This process's environment for the new one: the channel's path added; what systemd's socket
// activation gave this process (it is not the new one's to take again) removed.
std::vector<std::string> childEnvironment(const std::string& socket_path) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view v(*e);
    if (v.starts_with("LISTEN_FDS=") || v.starts_with("LISTEN_PID=") ||
        v.starts_with("LISTEN_FDNAMES=") || v.starts_with(std::string(kUpgradeSocketEnv) + "="))
      continue;
    env.emplace_back(v);
  }
  env.push_back(std::string(kUpgradeSocketEnv) + "=" + socket_path);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Upgrade::Upgrade(uv_loop_t* loop, UpgradeHooks hooks) : loop_(loop), hooks_(std::move(hooks)) {}

Upgrade* Upgrade::start(uv_loop_t* loop, std::vector<std::string> argv, UpgradeHooks hooks) {
  const std::string dir = upgradeDirFor(getpid(), upgradeRuntimeDir(getenv));
  const std::string exe = ownExecutable();
  if (exe.empty()) {
    refuse("cannot read /proc/self/exe");
    return nullptr;
  }
  std::string error;
  if (!prepareUpgradeDir(dir, &error)) {
    LB_ERROR("upgrade refused: %s; this lb keeps serving", error.c_str());
    return nullptr;   // the directory is not ours: no result is written into it
  }
  unlink((dir + "/result").c_str());
  int listen_fd = listenHandover(dir + "/handover.sock", &error);
  if (listen_fd < 0) {
    LB_ERROR("upgrade refused: %s; this lb keeps serving", error.c_str());
    writeUpgradeResult(dir, "failed: " + error);
    return nullptr;
  }
  auto* u = new Upgrade(loop, std::move(hooks));
  u->dir_ = dir;
  u->socket_path_ = dir + "/handover.sock";
  u->listen_fd_ = listen_fd;
  uv_poll_init(loop, &u->listen_poll_, listen_fd);
  u->listen_poll_.data = u;
  uv_poll_start(&u->listen_poll_, UV_READABLE, onAccept);
  uv_timer_init(loop, &u->timer_);
  u->timer_.data = u;
  uv_timer_start(&u->timer_, onTimeout, kReadyTimeoutMs, 0);

  argv.at(0) = exe;
  std::vector<char*> args = pointers(argv);
  std::vector<std::string> env_strings = childEnvironment(u->socket_path_);
  std::vector<char*> env = pointers(env_strings);
  uv_stdio_container_t stdio[3];
  for (int i = 0; i < 3; ++i) {
    stdio[i].flags = UV_INHERIT_FD;
    stdio[i].data.fd = i;
  }
  uv_process_options_t opt{};
  opt.exit_cb = onExit;
  opt.file = exe.c_str();
  opt.args = args.data();
  opt.env = env.data();
  opt.stdio_count = 3;
  opt.stdio = stdio;
  u->child_.data = u;
  int rc = uv_spawn(loop, &u->child_, &opt);
  if (rc != 0) {
    u->child_exited_ = true;   // libuv still wants the handle closed
    u->fail("cannot start " + exe + ": " + sysErrorText(rc));
    return nullptr;
  }
  u->child_pid_ = u->child_.pid;
  LB_INFO("upgrade: started %s (pid %d); handing over through %s", exe.c_str(), u->child_pid_,
          u->socket_path_.c_str());
  return u;
}

void Upgrade::refuse(const std::string& why) {
  LB_WARN("upgrade refused: %s", why.c_str());
  const std::string dir = upgradeDirFor(getpid(), upgradeRuntimeDir(getenv));
  std::string error;
  if (prepareUpgradeDir(dir, &error)) writeUpgradeResult(dir, "failed: " + why);
}

void Upgrade::onAccept(uv_poll_t* p, int status, int) {
  if (status == 0) static_cast<Upgrade*>(p->data)->accept();
}

void Upgrade::accept() {
  if (state_ != State::kSpawned) return;
  int conn = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (conn < 0) return;
  std::string who;
  if (!peerIsChild(conn, child_pid_, &who)) {
    // Only the process this lb started may have its sockets: anyone else (even of the same
    // user, through a directory they should not be able to enter) gets a closed connection.
    LB_WARN("upgrade: refused a connection to the hand-over socket from %s: not the new lb "
            "(pid %d)", who.c_str(), child_pid_);
    ::close(conn);
    return;
  }
  // One taker: nobody else may connect from here on.
  uv_poll_stop(&listen_poll_);
  unlink(socket_path_.c_str());
  std::vector<int> fds;
  int admin = -1;
  if (hooks_.sockets) hooks_.sockets(&fds, &admin);
  std::string error;
  const bool sent = sendHandover(conn, fds, admin, hooks_.generation + 1,
                                 hooks_.health ? hooks_.health() : std::vector<HealthCarry>{},
                                 &error);
  for (int fd : fds) ::close(fd);   // the new process holds its own copies now
  if (admin >= 0) ::close(admin);
  if (!sent) {
    ::close(conn);
    fail(error);
    return;
  }
  LB_INFO("upgrade: handed %zu listening socket%s%s to pid %d", fds.size(),
          fds.size() == 1 ? "" : "s", admin >= 0 ? " and the admin one" : "", child_pid_);
  state_ = State::kHandedOver;
  conn_fd_ = conn;
  uv_poll_init(loop_, &conn_poll_, conn);
  conn_poll_.data = this;
  conn_open_ = true;
  uv_poll_start(&conn_poll_, UV_READABLE | UV_DISCONNECT, onReply);
}

void Upgrade::onReply(uv_poll_t* p, int, int) { static_cast<Upgrade*>(p->data)->reply(); }

void Upgrade::reply() {
  if (state_ != State::kHandedOver) return;
  const HandoverReply r = readHandoverReply(conn_fd_);
  switch (r.kind) {
    case HandoverReply::Kind::kReady:
      if (r.pid == child_pid_) return succeed(r.pid);
      return fail("the new lb said ready for another pid (" + std::to_string(r.pid) + ")");
    case HandoverReply::Kind::kFailed:
      return fail("the new lb did not start: " + r.why);
    case HandoverReply::Kind::kClosed:
      // No answer: its exit status (or the timeout) says more.
      uv_poll_stop(&conn_poll_);
      return;
  }
}

void Upgrade::onExit(uv_process_t* p, int64_t status, int signal) {
  auto* u = static_cast<Upgrade*>(p->data);
  u->child_exited_ = true;
  if (u->state_ != State::kEnding) {
    u->fail("the new lb (pid " + std::to_string(u->child_pid_) + ") " +
            (signal != 0 ? std::string("was killed by signal ") + strsignal(signal)
                         : "exited with status " + std::to_string(status)) +
            " before it was ready");
    return;
  }
  // end() counted this handle among those to close once the child was gone.
  if (!u->child_stays_) uv_close(reinterpret_cast<uv_handle_t*>(&u->child_), onClosed);
}

void Upgrade::onTimeout(uv_timer_t* t) {
  auto* u = static_cast<Upgrade*>(t->data);
  u->fail("the new lb (pid " + std::to_string(u->child_pid_) + ") did not say ready within " +
          std::to_string(kReadyTimeoutMs / 1000) + " s");
}

void Upgrade::abandon() {
  if (state_ != State::kEnding) fail("lb is stopping");
}

void Upgrade::fail(const std::string& why) {
  if (state_ == State::kEnding) return;
  state_ = State::kEnding;
  LB_ERROR("upgrade failed: %s; this lb (pid %d) keeps serving", why.c_str(), getpid());
  writeUpgradeResult(dir_, "failed: " + why);
  // A new process that took the sockets but will not serve must let go of them: its drain
  // hands back the connections it accepted meanwhile.
  if (!child_exited_) uv_process_kill(&child_, SIGTERM);
  end();
}

void Upgrade::succeed(pid_t pid) {
  state_ = State::kEnding;
  child_stays_ = true;
  LB_INFO("upgrade: lb pid %d (generation %llu) serves; this one (pid %d) drains", pid,
          static_cast<unsigned long long>(hooks_.generation + 1), getpid());
  writeUpgradeResult(dir_, "ok: lb pid " + std::to_string(pid) + " serves (generation " +
                               std::to_string(hooks_.generation + 1) + "); pid " +
                               std::to_string(getpid()) + " drains");
  if (hooks_.ready) hooks_.ready(pid);
  end();
}

void Upgrade::end() {
  uv_timer_stop(&timer_);
  ++closing_;
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onClosed);
  ++closing_;
  uv_close(reinterpret_cast<uv_handle_t*>(&listen_poll_), onClosed);
  ::close(listen_fd_);
  unlink(socket_path_.c_str());
  if (conn_open_) {
    ++closing_;
    uv_close(reinterpret_cast<uv_handle_t*>(&conn_poll_), onClosed);
    ::close(conn_fd_);
  }
  // The process handle closes now when the child exited or stays (it is the new lb: this
  // process no longer watches it); otherwise after its exit, so that it is reaped.
  ++closing_;
  if (child_exited_ || child_stays_) uv_close(reinterpret_cast<uv_handle_t*>(&child_), onClosed);
}

void Upgrade::onClosed(uv_handle_t* h) {
  auto* u = static_cast<Upgrade*>(h->data);
  if (--u->closing_ > 0) return;
  if (u->hooks_.done) u->hooks_.done(u);
  delete u;
}

}  // namespace lb
